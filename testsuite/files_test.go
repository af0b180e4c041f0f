package testsuite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
	"playbook/interpreter/contract"
	"playbook/runs"
)

// filesPipeline is acceptance 1 of issue 43: extract writes raw.json (10
// MB), transform reads it and writes clean.csv, load reads that. Each
// step runs in a working directory of its own, so that a file reaches the
// next step only through the store. transform fails while workload.fail
// is "yes" (for the retry test).
const filesPipeline = `metadata: {name: files-pipeline}
workload: {fail: "no", dir: ""}
workflow:
  - step: extract
    tool: {kind: shell, workdir: "{{ workload.dir }}/extract", command: "head -c 10485760 /dev/urandom > raw.json"}
    outputs: {files: [raw.json]}
  - step: transform
    depends_on: [extract]
    tool: {kind: shell, workdir: "{{ workload.dir }}/transform", env: {FAIL: "{{ workload.fail }}"}, command: "[ $FAIL = no ] && test $(wc -c < data/raw.json) -eq 10485760 && sha256sum data/raw.json | cut -c1-64 > clean.csv && rm data/raw.json"}
    inputs: {files: {data/raw.json: "{{ steps.extract.files['raw.json'] }}"}}
    outputs: {files: [clean.csv]}
  - step: load
    depends_on: [transform]
    tool: {kind: shell, workdir: "{{ workload.dir }}/load", command: "cat clean.csv"}
    inputs: {from: [transform]}
`

// stepDirs makes the steps' own working directories under dir.
func stepDirs(t *testing.T, dir string) {
	for _, s := range []string{"extract", "transform", "load"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, s), 0o755))
	}
}

func TestFilesPassBetweenStepsThroughTheStore(t *testing.T) {
	dir := t.TempDir()
	stepDirs(t, dir)
	file := writePlaybook(t, dir, "pipeline.yaml", filesPipeline)
	code, agg := runJSON(t, "--set", "dir="+dir, file)
	require.Equal(t, 0, code, "%+v", agg.Steps)

	raw := agg.Steps["extract"].Files["raw.json"]
	require.EqualValues(t, 10<<20, raw.Bytes)
	// Each attempt's files under keys of their own: RUN/STEP@ATTEMPT/PATH.
	require.Regexp(t, "^"+regexp.QuoteMeta(storeURL+"/"+agg.WorkflowID+"/extract@")+"[0-9a-f]{12}/raw\\.json$", raw.URI)
	// load printed what transform computed of the file extract wrote.
	result := agg.Steps["load"].Result.(map[string]any)
	require.Equal(t, raw.SHA256, strings.TrimSpace(result["stdout"].(string)))
	clean := agg.Steps["transform"].Files["clean.csv"]
	require.EqualValues(t, 65, clean.Bytes)
	// The downloaded copy stays in load's working directory, checked.
	b, err := os.ReadFile(filepath.Join(dir, "load", "clean.csv"))
	require.NoError(t, err)
	require.Equal(t, raw.SHA256+"\n", string(b))

	// playbook files lists them; files get fetches one, whole.
	code, out, errOut := cli(t, "files", "--store", storeURL, agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^extract\s+raw\.json\s+10485760\s+`+raw.SHA256+`$`, out)
	require.Regexp(t, `(?m)^transform\s+clean\.csv\s+65\s+`+clean.SHA256+`$`, out)
	code, out, errOut = cli(t, "files", "--store", storeURL, "--json", agg.WorkflowID, "transform")
	require.Equal(t, 0, code, errOut)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, clean.URI, listed[0]["uri"])
	fetched := filepath.Join(t.TempDir(), "clean.csv")
	code, _, errOut = cli(t, "files", "get", "--store", storeURL, agg.WorkflowID, "transform", "clean.csv", "-o", fetched)
	require.Equal(t, 0, code, errOut)
	b, err = os.ReadFile(fetched)
	require.NoError(t, err)
	require.Equal(t, raw.SHA256+"\n", string(b))
	code, out, _ = cli(t, "files", "get", "--store", storeURL, agg.WorkflowID, "extract", "raw.json")
	require.Equal(t, 0, code)
	require.Len(t, out, 10<<20, "the bytes as they are, not escaped for a terminal")
	sum := sha256.Sum256([]byte(out))
	require.Equal(t, raw.SHA256, hex.EncodeToString(sum[:]))
	code, _, errOut = cli(t, "files", "get", "--store", storeURL, agg.WorkflowID, "extract", "none.json")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no file none.json of step extract in run "+agg.WorkflowID)

	// status lists each step's files under its step table.
	code, out, errOut = cli(t, "status", "--address", server.Address, agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^STEP\s+FILE\s+BYTES\s+SHA256$`, out)
	require.Regexp(t, `(?m)^extract\s+raw\.json\s+10485760\s+`+raw.SHA256+`$`, out)
	require.Regexp(t, `(?m)^transform\s+clean\.csv\s+65\s+`+clean.SHA256+`$`, out)

	// The MCP server lists them too, from the store it is given.
	text, isErr := callTool(t, mcpSession(t, "--store", storeURL), "list_files", map[string]any{"run": agg.WorkflowID, "step": "transform"})
	require.False(t, isErr, text)
	var viaMCP struct{ Files []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(text), &viaMCP))
	require.Equal(t, listed, viaMCP.Files)
}

// A download whose digest is not the one recorded fails the step with
// artifact_error before its command starts.
func TestWrongDigestFailsTheStepWithArtifactError(t *testing.T) {
	dir := t.TempDir()
	file := writePlaybook(t, dir, "digest.yaml", `metadata: {name: wrong-digest}
workflow:
  - step: extract
    tool: {kind: shell, command: "echo data > `+dir+`/raw.json", workdir: "`+dir+`"}
    outputs: {files: [raw.json]}
  - step: transform
    depends_on: [extract]
    tool: {kind: shell, command: "touch ran", workdir: "`+dir+`/t"}
    inputs:
      files:
        raw.json: "{{ { 'uri': steps.extract.files['raw.json'].uri, 'bytes': 5, 'sha256': '`+strings.Repeat("0", 64)+`' } }}"
`)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "t"), 0o755))
	code, agg := runJSON(t, file)
	require.Equal(t, 1, code)
	st := agg.Steps["transform"]
	require.Equal(t, contract.StatusFailed, st.Status)
	require.Equal(t, contract.ErrArtifact, st.Error.Type)
	require.Contains(t, st.Error.Message, "inputs.files raw.json: ")
	require.Contains(t, st.Error.Message, "not the 5 bytes of sha256 "+strings.Repeat("0", 64)+" recorded")
	require.NoFileExists(t, filepath.Join(dir, "t", "ran"), "the command never started")
	require.NoFileExists(t, filepath.Join(dir, "t", "raw.json"), "the file that did not match is not left")
}

// Hostile outputs: a path out of the working directory is refused when the
// playbook is checked; a symlink out of it, and a file over the limit,
// fail the step with one line, and nothing of the step is uploaded.
func TestHostileOutputsAreRefusedAndNothingIsUploaded(t *testing.T) {
	dir := t.TempDir()
	file := writePlaybook(t, dir, "escape.yaml", `metadata: {name: escape}
workflow:
  - step: leak
    tool: {kind: shell, command: "true"}
    outputs: {files: ["../../etc/passwd"]}
`)
	code, out, errOut := cli(t, "validate", file)
	require.Equal(t, 2, code, out)
	require.Equal(t, file+`:5: step "leak": outputs.files: "../../etc/passwd" leaves the step's working directory`+"\n", errOut)

	for name, make := range map[string]string{
		"symlink":  "ln -s /etc etc && echo fine > good.txt",
		"too-big":  "truncate -s 2G big.bin && echo fine > good.txt",
		"file-out": "ln -s /etc/passwd passwd && echo fine > good.txt",
	} {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			outputs := map[string]string{"symlink": "[good.txt, etc/passwd]", "too-big": "[good.txt, big.bin]", "file-out": "[good.txt, passwd]"}[name]
			agg := runFile(t, `metadata: {name: hostile-`+name+`}
workflow:
  - step: leak
    tool: {kind: shell, command: "`+make+`", workdir: "`+work+`"}
    outputs: {files: `+outputs+`}
`)
			st := agg.Steps["leak"]
			require.Equal(t, contract.StatusFailed, st.Status)
			require.Equal(t, contract.ErrArtifact, st.Error.Type)
			require.NotContains(t, st.Error.Message, "\n")
			require.Contains(t, st.Error.Message, "nothing uploaded")
			if name == "too-big" {
				require.Contains(t, st.Error.Message, "big.bin is 2147483648 bytes, over the limit of 1073741824 bytes for one file")
			} else {
				require.Contains(t, st.Error.Message, "outside the step's working directory")
			}
			code, out, errOut := cli(t, "files", "--store", storeURL, "--json", agg.WorkflowID)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, "[]\n", out, "nothing uploaded")
		})
	}
}

// Acceptance 4: a retry of a run whose transform failed reuses extract,
// and transform reads extract's file from the earlier run's keys.
func TestRetryReadsAReusedStepsFilesFromTheEarlierRun(t *testing.T) {
	dir := t.TempDir()
	stepDirs(t, dir)
	file := writePlaybook(t, dir, "pipeline.yaml", filesPipeline)
	code, first := runJSON(t, "--set", "dir="+dir, "--set", "fail=yes", file)
	require.Equal(t, 1, code)
	require.Equal(t, contract.StatusFailed, first.Steps["transform"].Status)
	raw := first.Steps["extract"].Files["raw.json"]

	code, out, errOut := cli(t, "retry", "--address", server.Address, "--json", "--set", "fail=no", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	var agg contract.Aggregate
	require.NoError(t, json.Unmarshal([]byte(out), &agg))
	replay(t, "", agg.WorkflowID, agg.RunID)
	require.NotEqual(t, first.WorkflowID, agg.WorkflowID)
	require.Equal(t, contract.StatusReused, agg.Steps["extract"].Status)
	require.Equal(t, raw, agg.Steps["extract"].Files["raw.json"], "the reused step keeps the earlier run's file")
	require.Contains(t, raw.URI, "/"+first.WorkflowID+"/extract@")
	require.Equal(t, contract.StatusCompleted, agg.Steps["transform"].Status)
	require.Contains(t, agg.Steps["transform"].Files["clean.csv"].URI, "/"+agg.WorkflowID+"/transform@")
	result := agg.Steps["load"].Result.(map[string]any)
	require.Equal(t, raw.SHA256, strings.TrimSpace(result["stdout"].(string)))

	// The reused step did not run in the retry: logs says whose logs are its.
	code, _, errOut = cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), agg.WorkflowID, "extract")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "step extract did not run in "+agg.WorkflowID+": the retry reused it from "+first.WorkflowID+", whose logs are its logs: `playbook logs "+first.WorkflowID+" extract`")

	// playbook files of the retry lists the file it reused, where the
	// earlier run keeps it, and fetches it from there.
	code, out, errOut = cli(t, "files", "--address", server.Address, "--store", storeURL, "--json", agg.WorkflowID, "extract")
	require.Equal(t, 0, code, errOut)
	var listed []runs.StoredFile
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Equal(t, []runs.StoredFile{{Step: "extract", Path: "raw.json", Bytes: raw.Bytes, SHA256: raw.SHA256, URI: raw.URI}}, listed)
	code, out, errOut = cli(t, "files", "get", "--address", server.Address, "--store", storeURL, agg.WorkflowID, "extract", "raw.json")
	require.Equal(t, 0, code, errOut)
	sum := sha256.Sum256([]byte(out))
	require.Equal(t, raw.SHA256, hex.EncodeToString(sum[:]))

	// A file changed in the store is not what its step recorded: files get
	// says so, though the store's own digest is of what it holds now.
	key := strings.TrimPrefix(agg.Steps["transform"].Files["clean.csv"].URI, storeURL+"/")
	require.NoError(t, os.WriteFile(filepath.Join(strings.TrimPrefix(storeURL, "file://"), filepath.FromSlash(key)), []byte("tampered\n"), 0o644))
	code, _, errOut = cli(t, "files", "get", "--address", server.Address, "--store", storeURL, agg.WorkflowID, "transform", "clean.csv")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not what was recorded (65 bytes, "+agg.Steps["transform"].Files["clean.csv"].SHA256+")")
}

// A step whose queue no worker polls waits: run says which queue and which
// steps, one line each queue, and nothing of the queues workers poll (the
// shared worker's default one).
func TestRunWarnsOfAStepsQueueWithoutWorker(t *testing.T) {
	parallel(t)
	idle := fmt.Sprintf("idle-%d", time.Now().UnixNano())
	file := writePlaybook(t, t.TempDir(), "queues.yaml", `metadata: {name: idle-queue}
workflow:
  - {step: here, queue: `+contract.TaskQueue+`, tool: {kind: shell, command: "true"}}
  - {step: train, queue: `+idle+`, depends_on: [here], tool: {kind: shell, command: "true"}}
  - {step: score, queue: `+idle+`, depends_on: [here], tool: {kind: shell, command: "true"}}
`)
	id := "idle-queue-" + idle
	code, _, errOut := cli(t, "run", "--address", server.Address, "--detach", "--id", id, file)
	require.Equal(t, 0, code, errOut)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), id, "", "no worker will come") }()
	require.Equal(t, `No worker is polling task queue "`+idle+`" of steps train, score: they wait until one does (start one with `+"`playbook worker --task-queue "+idle+"`"+`).`+"\n", errOut)
}

// Issue 43: a retry reuses the elements of a loop that completed, files
// and all: a later step reads a reused element's file from the earlier
// run's keys, beside the file of the element that ran again, and status
// lists them all.
func TestRetryCarriesTheFilesOfReusedElements(t *testing.T) {
	parallel(t)
	dir, file := failingFan(t, "element-files", 2)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "failed", first.Status)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))

	code, agg, errOut := retryJSON(t, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^  fan +1 of 3 elements run \(failed before\), 2 reused$`, errOut)
	all, again := countMarks(t, dir, "1")
	require.Equal(t, 4, all, "one element ran again")
	require.Equal(t, 1, again, "a reused element did not")
	files := agg.Steps["fan"].Files
	require.Len(t, files, 3)
	// RUN/STEP[INDEX]@ATTEMPT/PATH
	require.Regexp(t, regexp.QuoteMeta("/"+first.WorkflowID+"/fan[0]@")+`[0-9a-f]{12}/part\.txt$`, files["[0]/part.txt"].URI, "a reused element's file is the earlier run's")
	require.Regexp(t, regexp.QuoteMeta("/"+agg.WorkflowID+"/fan[1]@")+`[0-9a-f]{12}/part\.txt$`, files["[1]/part.txt"].URI)
	require.Regexp(t, regexp.QuoteMeta("/"+first.WorkflowID+"/fan[2]@")+`[0-9a-f]{12}/part\.txt$`, files["[2]/part.txt"].URI)
	require.Equal(t, "part-1\npart-2\npart-3\n", agg.Steps["gather"].Result.(map[string]any)["stdout"])

	code, out, errOut := cli(t, "status", "--address", server.Address, agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	for i := range 3 {
		require.Regexp(t, fmt.Sprintf(`(?m)^fan\s+\[%d\]/part\.txt\s+7\s+%s$`, i, files[fmt.Sprintf("[%d]/part.txt", i)].SHA256), out)
	}

	// logs of an element the retry reused names the run that ran it, up
	// the retry chain: a retry of the retry reuses the loop whole.
	code, second, errOut := retryJSON(t, agg.WorkflowID)
	require.Equal(t, 0, code, errOut)
	logsOf := func(run, element string) string {
		code, _, errOut := cli(t, "logs", "--address", server.Address, "--log-dir", t.TempDir(), run, element)
		require.Equal(t, 1, code, errOut)
		return errOut
	}
	require.Equal(t, "logs: element fan[0] did not run in "+agg.WorkflowID+": the retry reused it from "+first.WorkflowID+", whose logs are its logs: `playbook logs "+first.WorkflowID+" fan` names the elements logged there (matched by its item, it may have had another index)\n",
		logsOf(agg.WorkflowID, "fan[0]"))
	require.Equal(t, "logs: element fan[0] did not run in "+second.WorkflowID+": the retry reused it from "+first.WorkflowID+" (through "+agg.WorkflowID+", which reused it in turn), whose logs are its logs: `playbook logs "+first.WorkflowID+" fan` names the elements logged there (matched by its item, it may have had another index)\n",
		logsOf(second.WorkflowID, "fan[0]"))
	require.Equal(t, "logs: element fan[1] did not run in "+second.WorkflowID+": the retry reused it from "+agg.WorkflowID+", whose logs are its logs: `playbook logs "+agg.WorkflowID+" fan[1]`\n",
		logsOf(second.WorkflowID, "fan[1]"))
}

// playbook files gc removes the files and claims of the runs that ended
// longer ago than its age, and of the runs the server no longer knows
// whose files are that old; it keeps the others; --dry-run removes
// nothing. The store is this test's own (its worker's), so that it
// removes no other test's files.
func TestFilesGCRemovesTheFilesOfOldRuns(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	url := "file://" + filepath.Join(dir, "store")
	queue := fmt.Sprintf("files-gc-%d", time.Now().UnixNano())
	runWorker(t, []string{"--task-queue", queue, "--log-dir", t.TempDir(), "--store", url})
	file := writePlaybook(t, dir, "gc.yaml", `metadata: {name: files-gc}
workflow:
  - step: make
    tool: {kind: shell, workdir: "`+dir+`", command: "echo kept > out.txt"}
    outputs: {files: [out.txt]}
`)
	ended := runPlaybookFile(t, file, "--task-queue", queue)
	require.Equal(t, "completed", ended.Status)

	// A run the server no longer knows, whose file is two days old.
	st, err := store.Open(context.Background(), url)
	require.NoError(t, err)
	gone := "gone-" + queue
	sum := sha256.Sum256([]byte("old"))
	require.NoError(t, st.Put(context.Background(), gone+"/make/out.txt", strings.NewReader("old"), 3, hex.EncodeToString(sum[:])))
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "store", gone, "make", "out.txt"), old, old))

	listed := func(run string) string {
		code, out, errOut := cli(t, "files", "--store", url, "--json", run)
		require.Equal(t, 0, code, errOut)
		return out
	}
	code, out, errOut := cli(t, "files", "gc", "--address", server.Address, "--store", url, "--older-than", "1d", "--dry-run")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Would remove (dry run: nothing removed) 1 object (3 bytes) of 1 run from "+url+":\n"+
		"RUN"+strings.Repeat(" ", len(gone)-1)+"OBJECTS  BYTES  WHY\n"+
		gone+"  1        3      the server no longer knows the run\n", out)
	require.NotEqual(t, "[]\n", listed(gone), "a dry run removes nothing")

	code, out, errOut = cli(t, "files", "gc", "--address", server.Address, "--store", url, "--older-than", "1d")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Removed 1 object (3 bytes) of 1 run from "+url+":\n")
	require.Equal(t, "[]\n", listed(gone))
	require.NotEqual(t, "[]\n", listed(ended.WorkflowID), "a run that ended a moment ago keeps its files")

	// Once the run ended longer ago than the age, its files go too.
	code, out, errOut = cli(t, "files", "gc", "--address", server.Address, "--store", url, "--older-than", "1ms", "--json")
	require.Equal(t, 0, code, errOut)
	var removed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &removed))
	require.Len(t, removed, 1)
	require.Equal(t, ended.WorkflowID, removed[0]["run"])
	require.Contains(t, removed[0]["why"], "it ended ")
	require.Equal(t, "[]\n", listed(ended.WorkflowID))

	code, _, errOut = cli(t, "files", "gc", "--address", server.Address, "--store", url, "--older-than", "soon")
	require.Equal(t, 2, code)
	require.Equal(t, `files gc: --older-than: "soon" is not an age: give a duration more than zero, as 30d, 36h or 90m`+"\n", errOut)
}

// files gc keeps the files of a run another run still needs, however old:
// a sub-playbook's child (RUN.STEP) while its parent is open, whose
// history reads them, and a run whose files an open retry reuses. Once
// nothing that counts needs them, they go.
func TestFilesGCKeepsWhatAnOpenRunNeeds(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	url := "file://" + filepath.Join(dir, "store")
	queue := fmt.Sprintf("files-gc-keep-%d", time.Now().UnixNano())
	runWorker(t, []string{"--task-queue", queue, "--log-dir", t.TempDir(), "--store", url})
	writePlaybook(t, dir, "child.yaml", `metadata: {name: child}
workflow:
  - step: make
    tool: {kind: shell, workdir: made, command: "echo made > out.txt"}
    outputs: {files: [out.txt]}
`)
	gate := filepath.Join(dir, "go")
	file := writePlaybook(t, dir, "parent.yaml", `metadata: {name: parent}
workload: {ok: false}
workflow:
  - {step: sub, tool: {kind: playbook, path: child.yaml}}
  - step: check
    depends_on: [sub]
    tool: {kind: shell, command: 'while [ ! -e "$GATE" ]; do sleep 0.1; done; [ "$OK" = true ]', env: {GATE: "`+gate+`", OK: "{{ workload.ok }}"}}
  - step: use
    depends_on: [check]
    tool: {kind: shell, workdir: used, command: "cat out.txt"}
    inputs: {files: {out.txt: "{{ steps.sub.result.steps.make.files['out.txt'] }}"}}
`)
	first, retried := "gc-keep-"+queue, "gc-keep-retry-"+queue
	child := first + ".sub"
	gc := func(why string) string {
		t.Helper()
		code, out, errOut := cli(t, "files", "gc", "--address", server.Address, "--store", url, "--older-than", "1ms", "--json")
		require.Equal(t, 0, code, errOut)
		var removed []runs.Collected
		require.NoError(t, json.Unmarshal([]byte(out), &removed), out)
		var ids []string
		for _, r := range removed {
			ids = append(ids, r.Run)
		}
		return strings.Join(ids, " ")
	}
	ended := func(id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
			return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil
		}, time.Minute, 50*time.Millisecond, "%s never ended", id)
	}

	code, _, errOut := cli(t, "run", "--address", server.Address, "--task-queue", queue, "--id", first, "--detach", file)
	require.Equal(t, 0, code, errOut)
	ended(child)
	require.Empty(t, gc("the parent is open"), "the child's files go while its parent, which reads them, is open")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	ended(first)
	require.NoError(t, os.Remove(gate))

	done := make(chan *contract.Aggregate, 1)
	go func() {
		code, out, errOut := cli(t, "retry", "--address", server.Address, "--task-queue", queue, "--json", "--id", retried, "--set", "ok=true", first)
		var agg contract.Aggregate
		if json.Unmarshal([]byte(out), &agg) != nil {
			agg.Status = fmt.Sprintf("exit %d: %s%s", code, out, errOut)
		}
		done <- &agg
	}()
	require.Eventually(t, func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), retried, "")
		return err == nil
	}, time.Minute, 50*time.Millisecond)
	require.NotContains(t, gc("the retry is open"), child, "the files an open retry reuses go")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	agg := <-done
	require.Equal(t, contract.RunCompleted, agg.Status, "the retry read the child's files where the first run left them")
	require.Equal(t, "made\n", agg.Steps["use"].Result.(map[string]any)["stdout"])

	time.Sleep(5 * time.Millisecond)
	require.Contains(t, gc("nothing needs them"), child)
}

// A retry given the workers' store (--store) runs again a step whose
// handed-on files are gone from it (files gc removed them) when a step
// that runs takes them, and of a loop only the elements whose files are
// gone; a step whose gone files nothing that runs takes is reused.
// Without the store, the retry reuses them all, and the step that reads
// them fails saying what removes files and how a retry makes them again.
func TestRetryRunsAgainWhatFilesGCRemoved(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	for _, d := range []string{"make", "fan1", "fan2", "fan3", "gather"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	file := writePlaybook(t, dir, "gone.yaml", `metadata: {name: files-gone}
workload: {dir: /tmp}
workflow:
  - step: make
    tool: {kind: shell, workdir: "{{ workload.dir }}/make", env: {D: "{{ workload.dir }}"}, command: 'echo make >> "$D/marks"; echo header > head.txt'}
    outputs: {files: [head.txt]}
  - step: fan
    loop: {in: "1..3", mode: parallel}
    tool:
      kind: shell
      workdir: "{{ workload.dir }}/fan{{ item }}"
      env: {D: "{{ workload.dir }}", I: "{{ item }}"}
      command: 'echo $I >> "$D/marks"; echo part-$I > part.txt'
    outputs: {files: [part.txt]}
  - step: gather
    depends_on: [make, fan]
    tool: {kind: shell, workdir: "{{ workload.dir }}/gather", env: {D: "{{ workload.dir }}"}, command: '[ -e "$D/fixed" ] && cat head.txt */part.txt'}
    inputs: {from: [make, fan]}
  - step: side
    tool: {kind: shell, workdir: "{{ workload.dir }}/make", env: {D: "{{ workload.dir }}"}, command: 'echo side >> "$D/marks"; echo s > side.txt'}
    outputs: {files: [side.txt]}
`)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "failed", first.Status)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))

	// What files gc does to a run that ended long ago, to two of its files.
	st, err := store.Open(context.Background(), storeURL)
	require.NoError(t, err)
	for _, ref := range []contract.FileRef{first.Steps["make"].Files["head.txt"], first.Steps["fan"].Files["[1]/part.txt"], first.Steps["side"].Files["side.txt"]} {
		key, err := store.KeyOf(st, ref.URI)
		require.NoError(t, err)
		n, err := st.Delete(context.Background(), key)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}

	// Without the store, the plan cannot tell: gather fails, and says why.
	code, agg, errOut := retryJSON(t, first.WorkflowID)
	require.Equal(t, 1, code, errOut)
	require.Equal(t, contract.StatusReused, agg.Steps["make"].Status)
	require.Contains(t, agg.Steps["gather"].Error.Message, "no such object in the store (`playbook files gc` removes the files of runs that ended long ago; a retry given the workers' store, retry --store URL, runs the step that made it again)")

	code, out, errOut := cli(t, "retry", "--address", server.Address, "--store", storeURL, "--dry-run", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^  make +runs: its file head\.txt is gone from the store$`, out)
	require.Regexp(t, `(?m)^  fan +1 of 3 elements run \(its file \[1\]/part\.txt is gone from the store\), 2 reused$`, out)
	require.Regexp(t, `(?m)^  side +reused$`, out, "no step that runs takes its file: it is not run again for it")

	code, agg, errOut = retryJSON(t, "--store", storeURL, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "header\npart-1\npart-2\npart-3\n", agg.Steps["gather"].Result.(map[string]any)["stdout"])
	all, again := countMarks(t, dir, "2")
	require.Equal(t, 7, all, "make and one element ran again, nothing else")
	require.Equal(t, 2, again, "the element whose file was gone ran again")
	_, made := countMarks(t, dir, "make")
	require.Equal(t, 2, made)
	replay(t, "", agg.WorkflowID, agg.RunID)
}

// A loop that failed before runs for itself: of the elements that
// completed, one whose file is gone runs again when a step that runs
// takes the loop's files, and the others are reused.
func TestRetryRunsAgainTheElementsOfAFailedLoopWhoseFilesAreGone(t *testing.T) {
	parallel(t)
	dir, file := failingFan(t, "failed-fan", 3)
	first := runPlaybookFile(t, file, "--set", "dir="+dir)
	require.Equal(t, "failed", first.Status)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644))
	st, err := store.Open(context.Background(), storeURL)
	require.NoError(t, err)
	// A failed loop's state lists no files: element 1's are found in the
	// store, under RUN/fan[1]@ATTEMPT/.
	objects, err := st.Sizes(context.Background(), first.WorkflowID)
	require.NoError(t, err)
	removed := 0
	for key := range objects {
		if strings.HasPrefix(key, first.WorkflowID+"/fan[1]@") {
			n, err := st.Delete(context.Background(), key)
			require.NoError(t, err)
			removed += n
		}
	}
	require.Equal(t, 1, removed)

	code, out, errOut := cli(t, "retry", "--address", server.Address, "--store", storeURL, "--dry-run", first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^  fan +2 of 3 elements run \(failed before\), 1 reused$`, out)
	code, agg, errOut := retryJSON(t, "--store", storeURL, first.WorkflowID)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "part-1\npart-2\npart-3\n", agg.Steps["gather"].Result.(map[string]any)["stdout"])
	all, again := countMarks(t, dir, "2")
	require.Equal(t, 5, all, "elements 2 and 3 ran again")
	require.Equal(t, 2, again)
}

// failingFan writes, in a directory of its own, playbook name: a loop fan
// over 1..3 whose element failing fails until the directory holds a file
// `fixed`, each element marking the directory's `marks` and handing on
// its part.txt, and a step gather that takes them all.
func failingFan(t *testing.T, name string, failing int) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	for _, d := range []string{"fan1", "fan2", "fan3", "gather"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	return dir, writePlaybook(t, dir, name+".yaml", fmt.Sprintf(`metadata: {name: %s}
workload: {dir: /tmp}
workflow:
  - step: fan
    loop: {in: "1..3", mode: parallel}
    tool:
      kind: shell
      workdir: "{{ workload.dir }}/fan{{ item }}"
      env: {D: "{{ workload.dir }}", I: "{{ item }}"}
      command: 'echo $I >> "$D/marks"; [ $I != %d ] || [ -e "$D/fixed" ] || exit 3; echo part-$I > part.txt'
    outputs: {files: [part.txt]}
  - step: gather
    depends_on: [fan]
    tool: {kind: shell, workdir: "{{ workload.dir }}/gather", command: "cat */part.txt"}
    inputs: {from: [fan]}
`, name, failing))
}
