package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFilesAndQueueKeys(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`metadata: {name: files}
queue: cpu
workflow:
  - step: extract
    tool: {kind: shell, command: "true"}
    outputs: {files: [raw.json, "out/*.csv"]}
  - step: transform
    queue: gpu.large_1
    depends_on: [extract]
    tool: {kind: python, code: "def main(): pass"}
    inputs: {files: {data/raw.json: "{{ steps.extract.files['raw.json'] }}"}, from: [extract]}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"raw.json", "out/*.csv"}, pb.Step("extract").Files.Outputs)
	require.Equal(t, "cpu", pb.Step("extract").Queue, "the playbook's queue")
	tr := pb.Step("transform")
	require.Equal(t, "gpu.large_1", tr.Queue, "the step's own")
	require.Equal(t, map[string]string{"data/raw.json": "{{ steps.extract.files['raw.json'] }}"}, tr.Files.Inputs)
	require.Equal(t, []string{"extract"}, tr.Files.From)
	require.NotNil(t, pb.Templates()["{{ steps.extract.files['raw.json'] }}"], "compiled with the tool's templates")
}

func TestFilesAndQueueRefusals(t *testing.T) {
	for _, c := range []struct{ step, want string }{
		{`{step: a, tool: {kind: shell, command: x}, outputs: {files: ["../../etc/passwd"]}}`, `x.yaml:3: step "a": outputs.files: "../../etc/passwd" leaves the step's working directory`},
		{`{step: a, tool: {kind: shell, command: x}, outputs: {files: [/etc/passwd]}}`, `x.yaml:3: step "a": outputs.files: "/etc/passwd" is absolute: files are relative to the step's working directory`},
		{`{step: a, tool: {kind: shell, command: x}, outputs: {files: ["out/[a"]}}`, `x.yaml:3: step "a": outputs.files: "out/[a" is not a valid glob: syntax error in pattern`},
		{`{step: a, tool: {kind: shell, command: x}, outputs: {files: raw.json}}`, `x.yaml:3: step "a": outputs.files must be a list of paths or globs`},
		{`{step: a, tool: {kind: shell, command: x}, inputs: {files: {../x: "{{ workload }}"}}}`, `x.yaml:3: step "a": inputs.files: "../x" leaves the step's working directory`},
		{`{step: a, tool: {kind: shell, command: x}, inputs: {files: {"*.json": "{{ workload }}"}}}`, `x.yaml:3: step "a": inputs.files: "*.json": an input's path is a file's, not a glob`},
		{`{step: a, tool: {kind: shell, command: x}, inputs: {files: {x: "raw.json"}}}`, `x.yaml:3: step "a": inputs.files.x must name a stored file with a template, as "{{ steps.extract.files['raw.json'] }}"`},
		{`{step: a, tool: {kind: shell, command: x}, inputs: {from: [nope]}}`, `x.yaml:3: step "a": inputs.from names unknown step "nope"`},
		{`{step: a, tool: {kind: http, url: "http://x"}, outputs: {files: [a]}}`, `x.yaml:3: step "a": outputs and inputs need a shell or python tool: files are made and read in a process's working directory`},
		{`{step: a, outputs: {files: [a]}}`, `x.yaml:3: step "a": outputs and inputs need a shell or python tool: files are made and read in a process's working directory`},
		{`{step: a, loop: {in: [1]}, tool: {kind: shell, command: x}, inputs: {files: {x: "{{ item }}"}}}`, `x.yaml:3: step "a": a loop's elements take stored files with inputs.from, not inputs.files`},
		{`{step: a, tool: {kind: shell, command: x}, queue: "gpu queue"}`, `x.yaml:3: step "a": queue "gpu queue" is not a task queue's name: letters, digits, '.', '_' and '-', at most 200 bytes`},
		{`{step: a, tool: {kind: shell, command: x}, outputs: {file: [a]}}`, `x.yaml:3: step "a": unknown key "file" in outputs (known: files)`},
	} {
		_, err := Parse("x.yaml", []byte("metadata: {name: f}\nworkflow:\n  - "+c.step+"\n"))
		require.Error(t, err, c.step)
		require.Contains(t, err.Error(), c.want, c.step)
	}
}
