package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// A completed step's files are in its entry (steps.NAME.files) and reach
// the next step's inputs: named by a template, or all of a step's by
// inputs.from; a template that names no stored file is an error.
func TestFilesReachTheNextStep(t *testing.T) {
	pb, err := spec.Parse("f.yaml", []byte(`metadata: {name: f}
workflow:
  - {step: extract, tool: {kind: shell, command: x}, outputs: {files: [raw.json, b.txt]}, next: transform}
  - step: transform
    tool: {kind: shell, command: x}
    inputs: {files: {data/raw.json: "{{ steps.extract.files['raw.json'] }}"}, from: [extract]}
  - step: wrong
    depends_on: [extract]
    tool: {kind: shell, command: x}
    inputs: {files: {x: "{{ steps.extract.result }}"}}
`))
	require.NoError(t, err)
	run := NewRun(pb, nil, "t-1", time.Now)
	out, err := run.RenderFiles(pb.Step("extract"))
	require.NoError(t, err)
	require.Equal(t, &contract.StepFiles{Outputs: []string{"raw.json", "b.txt"}}, out)
	_, had := stepEntry(run.states["extract"])["files"]
	require.False(t, had, "a step without files has no files key: a run from before reads what it read")

	raw := contract.FileRef{URI: "file:///s/t-1/extract/raw.json", Bytes: 10, SHA256: "aa00000000000000000000000000000000000000000000000000000000000000"}
	b := contract.FileRef{URI: "file:///s/t-1/extract/b.txt", Bytes: 2, SHA256: "bb00000000000000000000000000000000000000000000000000000000000000"}
	run.Settle("extract", contract.Outcome{Result: "ok", Attempts: 1, Files: map[string]contract.FileRef{"raw.json": raw, "b.txt": b}})
	files := run.Env()["steps"].(map[string]any)["extract"].(map[string]any)["files"].(map[string]any)
	require.Equal(t, map[string]any{"uri": raw.URI, "bytes": raw.Bytes, "sha256": raw.SHA256}, files["raw.json"])

	in, err := run.RenderFiles(pb.Step("transform"))
	require.NoError(t, err)
	require.Equal(t, map[string]contract.FileRef{"data/raw.json": raw, "raw.json": raw, "b.txt": b}, in.Inputs)

	_, err = run.RenderFiles(pb.Step("wrong"))
	require.EqualError(t, err, `inputs.files.x: "{{ steps.extract.result }}" gives a string, not a stored file (a mapping with uri, bytes and sha256, as steps.NAME.files['PATH'] is)`)
}

func TestCombineLoopKeepsEachElementsFiles(t *testing.T) {
	f := func(p string) map[string]contract.FileRef {
		return map[string]contract.FileRef{"out.csv": {URI: p, Bytes: 1, SHA256: p}}
	}
	got := CombineLoop([]contract.Outcome{{Result: 1, Attempts: 1, Files: f("a")}, {Result: 2, Attempts: 1}, {Result: 3, Attempts: 1, Files: f("c")}})
	require.Equal(t, map[string]contract.FileRef{"[0]/out.csv": f("a")["out.csv"], "[2]/out.csv": f("c")["out.csv"]}, got.Files)
}
