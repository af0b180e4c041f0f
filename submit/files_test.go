package submit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// inputs.from must name a step upstream: its files are there only once
// it has run. Templates reading steps.NAME.files type-check.
func TestInputsFromNamesAStepUpstream(t *testing.T) {
	_, err := ParseStrict("x.yaml", []byte(`metadata: {name: f}
workflow:
  - {step: a, tool: {kind: shell, command: x}, outputs: {files: [o]}}
  - step: b
    tool: {kind: shell, command: x}
    inputs:
      from: [a]
`), "")
	require.EqualError(t, err, `x.yaml:7: step "b": inputs.from names "a", which is not upstream of this step: add it to depends_on`)

	_, err = ParseStrict("x.yaml", []byte(`metadata: {name: f}
workflow:
  - {step: a, tool: {kind: shell, command: x}, outputs: {files: [o]}}
  - step: b
    depends_on: [a]
    tool: {kind: shell, command: "cat in", env: {URI: "{{ steps.a.files['o'].uri }}"}}
    inputs: {files: {in: "{{ steps.a.files['o'] }}"}, from: [a]}
`), "")
	require.NoError(t, err)
}
