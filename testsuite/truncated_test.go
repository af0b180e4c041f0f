package testsuite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
)

// readsPastAStub is a playbook whose shell step prints 1.1 MiB of JSON,
// over the 1 MiB its result's json may take without a store for large
// values: its json is a stub, and the step after reads a field of it.
const readsPastAStub = `metadata: {name: truncated-reads}
workflow:
  - step: big
    tool: {kind: shell, command: 'printf "{\"blob\": \""; head -c 1153434 /dev/zero | tr "\\0" a; printf "\", \"n\": 5}"'}
    next: use
  - step: use
    tool: {kind: noop, result: "{{ steps.big.result.json.n }}"}
`

// A template that reads past a stub fails its step saying the value was
// cut, rather than reading null and going on (the change
// "truncated-reads"; docs/LANGUAGE.md's json field).
func TestATemplateReadingPastAStubFails(t *testing.T) {
	parallel(t)
	file := writePlaybook(t, t.TempDir(), "p.yaml", readsPastAStub)
	run := start(t, file, contract.TaskQueue, nil)
	agg := finish(t, run)
	require.Equal(t, contract.StatusCompleted, agg.Steps["big"].Status)
	require.Equal(t, true, agg.Steps["big"].Result.(map[string]any)["json"].(map[string]any)["truncated"])
	use := agg.Steps["use"]
	require.Equal(t, contract.StatusFailed, use.Status, "use: %v", use.Result)
	require.Equal(t, contract.ErrTemplate, use.Error.Type)
	require.Contains(t, use.Error.Message, "reads n of a value that was cut: only its stub was kept")
	require.Contains(t, use.Error.Message, "steps.big.result.json was truncated")
	require.True(t, hasMarker(t, run.GetID(), "truncated-reads"))
	replay(t, "change_truncated_reads", run.GetID(), run.GetRunID())
}
