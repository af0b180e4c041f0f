package engine

import (
	"testing"
	"time"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func TestWorkloadOverridesDefaults(t *testing.T) {
	pb, err := spec.Parse("t.yaml", []byte("metadata: {name: t}\nworkload: {a: 1, b: 2}\nworkflow:\n  - {step: s, tool: {kind: noop, result: '{{ workload.a + workload.b }}'}}\n"))
	require.NoError(t, err)
	run := NewRun(pb, map[string]any{"b": 40}, "t-1", time.Now)
	toolSpec, err := run.RenderTool(run.Ready()[0])
	require.NoError(t, err)
	require.Equal(t, 41, toolSpec["result"])
}
