package runs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"playbook/interpreter/contract"
)

// A retry keeps the time the earlier run stood for: its aggregate's, its
// input's, the time a schedule started it for (a terminated scheduled run
// has no aggregate), and only then its start.
func TestRetryKeepsTheEarlierLogicalTime(t *testing.T) {
	started := time.Date(2026, 11, 24, 6, 0, 3, 500, time.UTC)
	scheduled := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	p, err := converter.GetDefaultDataConverter().ToPayload(scheduled)
	require.NoError(t, err)
	bySchedule := &workflowpb.WorkflowExecutionInfo{StartTime: timestamppb.New(started),
		SearchAttributes: &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{contract.AttrScheduledStartTime: p}}}
	manual := &workflowpb.WorkflowExecutionInfo{StartTime: timestamppb.New(started)}
	input := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	require.Equal(t, scheduled, earlierLogicalTime(nil, contract.Input{}, bySchedule))
	require.Equal(t, started.Truncate(time.Second), earlierLogicalTime(nil, contract.Input{}, manual))
	require.Equal(t, input, earlierLogicalTime(nil, contract.Input{LogicalTime: &input}, bySchedule))
	require.Equal(t, time.Date(2025, 5, 6, 0, 0, 0, 0, time.UTC),
		earlierLogicalTime(&contract.Aggregate{LogicalTime: "2025-05-06T00:00:00Z"}, contract.Input{LogicalTime: &input}, bySchedule))
}
