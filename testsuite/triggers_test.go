package testsuite

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
	"playbook/runs"
)

// hookSecret is the key the webhook tests sign their deliveries with.
const hookSecret = "the hook's shared secret"

// deliver POSTs body to a hook as a sender signs it (signature "": as
// written, unsigned when empty too), with a delivery ID if given; it
// returns the status and the decoded answer.
func deliver(t *testing.T, url string, body []byte, signature, delivery string) (int, map[string]any) {
	t.Helper()
	if signature == "" {
		mac := hmac.New(sha256.New, []byte(hookSecret))
		mac.Write(body)
		signature = "sha256=" + hex.EncodeToString(mac.Sum(nil))
	}
	if signature == "none" {
		signature = ""
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set("X-Playbook-Signature", signature)
	}
	if delivery != "" {
		req.Header.Set("X-Playbook-Delivery", delivery)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var answer map[string]any
	require.NoError(t, json.Unmarshal(b, &answer), "answer: %s", b)
	return resp.StatusCode, answer
}

// runsOf lists, through visibility, the runs of a playbook.
func runsOf(t *testing.T, playbook string) []runs.Run {
	t.Helper()
	infos, err := runs.Executions(context.Background(), tc, server.Namespace, fmt.Sprintf("WorkflowType = '%s' AND %s = '%s'", contract.WorkflowName, contract.AttrPlaybookName, playbook), -1)
	require.NoError(t, err)
	var out []runs.Run
	for _, e := range infos {
		out = append(out, runs.RunOf(e))
	}
	return out
}

// A signed delivery starts a run with its body as the workload, and
// answers its ID (with ?wait=, its outcome); a bad signature, a body of
// the wrong type, an unknown hook, a body over 1 MiB and one with NaN
// each get their HTTP error and start nothing; a delivery ID sent twice,
// or twenty times at once, starts one run (acceptance 1 and 6 of #44).
func TestWebhookTriggerStartsARun(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "hook_key"), []byte(hookSecret+"\n"), 0o600))
	queue := fmt.Sprintf("hooks-%d", time.Now().UnixNano())
	file := writePlaybook(t, dir, "deploy.yaml", `
metadata: {name: hook-deploy}
workload: {service: web, replicas: 1}
triggers:
  - webhook: {name: deploy, secret: {secret: hook_key}}
workflow:
  - step: show
    tool: {kind: noop, result: "{{ workload.service }} x{{ workload.replicas }} by {{ trigger.kind }} {{ trigger.hook }}"}
`)
	url, stderr := observedWorker(t, queue, t.TempDir(), "--secrets-dir", secrets)
	code, out, errOut := cli(t, "schedule", "apply", "--address", server.Address, "--task-queue", queue, file)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, file+": trigger webhook /hooks/deploy created\n", out)
	code, out, errOut = cli(t, "schedule", "apply", "--address", server.Address, "--task-queue", queue, file)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, file+": trigger webhook /hooks/deploy unchanged\n", out)
	hook := url + "/hooks/deploy"

	// Refusals first: none of them starts a run.
	body := []byte(`{"service": "api", "replicas": 3}`)
	status, answer := deliver(t, hook, body, "sha256=00ff", "")
	require.Equal(t, http.StatusUnauthorized, status, answer)
	require.Contains(t, answer["error"], "X-Playbook-Signature is missing or is not the body's HMAC-SHA256")
	status, answer = deliver(t, hook, body, "none", "")
	require.Equal(t, http.StatusUnauthorized, status, answer)
	status, answer = deliver(t, hook, []byte(`{"service": "api", "replicas": "many"}`), "", "")
	require.Equal(t, http.StatusBadRequest, status, answer)
	require.Contains(t, answer["error"], "replicas")
	status, answer = deliver(t, hook, []byte(`{"service": "api", "region": "eu"}`), "", "")
	require.Equal(t, http.StatusBadRequest, status, answer)
	require.Contains(t, answer["error"], `workload key "region" is not declared`)
	status, answer = deliver(t, hook, []byte(`{"service": "api", "replicas": NaN}`), "", "")
	require.Equal(t, http.StatusBadRequest, status, answer)
	require.Contains(t, answer["error"], "not a JSON object")
	status, answer = deliver(t, hook, bytes.Repeat([]byte(" "), 10<<20), "", "")
	require.Equal(t, http.StatusRequestEntityTooLarge, status, answer)
	require.Contains(t, answer["error"], "over 1048576 bytes")
	status, answer = deliver(t, url+"/hooks/no-such-hook", body, "", "")
	require.Equal(t, http.StatusNotFound, status, answer)
	require.Contains(t, answer["error"], `webhook "no-such-hook": no playbook declares this webhook`)

	// A signed delivery starts the run; ?wait= answers its outcome.
	status, answer = deliver(t, hook+"?wait=2m", body, "", "")
	require.Equal(t, http.StatusCreated, status, answer)
	require.Equal(t, contract.RunCompleted, answer["status"], answer)
	first := answer["run_id"].(string)
	agg := finishID(t, first)
	require.Equal(t, "api x3 by webhook deploy", agg.Steps["show"].Result)

	// One delivery ID, sent twice and then twenty times at once: one run.
	status, answer = deliver(t, hook, []byte(`{"service": "db"}`), "", "delivery-1")
	require.Equal(t, http.StatusCreated, status, answer)
	again := answer["run_id"].(string)
	require.NotEqual(t, first, again)
	status, answer = deliver(t, hook, []byte(`{"service": "db"}`), "", "delivery-1")
	require.Equal(t, http.StatusOK, status, answer)
	require.Equal(t, again, answer["run_id"])
	require.Equal(t, true, answer["existing"])
	var wg sync.WaitGroup
	ids := make([]string, 20)
	for i := range ids {
		wg.Go(func() {
			code, a := deliver(t, hook, []byte(`{"service": "cache"}`), "", "delivery-2")
			if code == http.StatusCreated || code == http.StatusOK {
				ids[i], _ = a["run_id"].(string)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id, "every delivery of one ID answers one run")
	}
	require.Equal(t, "db x1 by webhook deploy", finishID(t, again).Steps["show"].Result)
	require.Equal(t, "cache x1 by webhook deploy", finishID(t, ids[0]).Steps["show"].Result)
	waitFor(t, "the three runs to be listed", func() bool { return len(runsOf(t, "hook-deploy")) == 3 })
	require.Len(t, runsOf(t, "hook-deploy"), 3, "the refused deliveries started nothing; stderr:\n%s", stderr)
	require.True(t, strings.Contains(stderr.String(), "webhook delivery"), stderr.String())
}

// An after trigger starts one downstream run per upstream run that ended
// in its statuses: three extract runs, one failed, make two load runs,
// one of them for an extract that ended while the trigger's worker was
// down; each reads its upstream run as trigger.* (acceptance 2 of #44).
func TestAfterTriggerStartsOneRunPerUpstreamRun(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	queue := fmt.Sprintf("after-%d", time.Now().UnixNano())
	extract := writePlaybook(t, dir, "extract.yaml", `
metadata: {name: extract-trg}
workload: {fail: false}
workflow:
  - step: produce
    tool: {kind: shell, command: 'test "$FAIL" != true && printf rows', env: {FAIL: "{{ workload.fail }}"}}
`)
	load := writePlaybook(t, dir, "load.yaml", `
metadata: {name: load-trg}
triggers:
  - after: {playbook: extract-trg, status: [completed]}
workflow:
  - step: load
    tool: {kind: noop, result: "{{ trigger.kind }} {{ trigger.run_id }} {{ trigger.status }} {{ trigger.result.steps.produce.result.stdout }}"}
`)
	_, _, w := startObservedWorker(t, queue, t.TempDir())
	code, out, errOut := cli(t, "schedule", "apply", "--address", server.Address, "--task-queue", queue, load)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, load+": trigger after extract-trg [completed] created\n", out)

	upstream := func(id string, set ...string) string {
		code, _, errOut := cli(t, append([]string{"run", "--address", server.Address, "--id", id, extract}, set...)...)
		require.Contains(t, []int{0, 1}, code, errOut)
		info, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		return info.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	downstream := func(id, runID string) *contract.Aggregate {
		want := runs.AfterRunID("load-trg", id, runID)
		waitFor(t, "the load run after "+id, func() bool {
			_, err := tc.DescribeWorkflowExecution(context.Background(), want, "")
			return err == nil
		})
		return finishID(t, want)
	}
	first := upstream("extract-trg-1")
	agg := downstream("extract-trg-1", first)
	require.Equal(t, contract.RunCompleted, agg.Status)
	require.Equal(t, "after extract-trg-1 completed rows", agg.Steps["load"].Result)
	upstream("extract-trg-2", "--set", "fail=true")

	// The trigger's only worker is killed; an extract ends meanwhile.
	require.NoError(t, w.Process.Kill())
	_, _ = w.Process.Wait()
	third := upstream("extract-trg-3")
	startObservedWorker(t, queue, t.TempDir())
	agg = downstream("extract-trg-3", third)
	require.Equal(t, "after extract-trg-3 completed rows", agg.Steps["load"].Result)

	// The failed extract started nothing: two load runs in all, and no
	// more once the watch has moved past the three.
	waitFor(t, "the two load runs to be listed", func() bool { return len(runsOf(t, "load-trg")) == 2 })
	code, _, errOut = cli(t, "schedule", "apply", "--address", server.Address, "--task-queue", queue, load)
	require.Equal(t, 0, code, errOut)
	require.Len(t, runsOf(t, "load-trg"), 2)
}

// `schedule apply --prune DIR` deletes the trigger registrations it made
// from files under DIR that are gone or no longer declare them, saying
// which: their hooks answer 404 and their workflows have ended. Without
// --prune they stay, and a trigger still declared is never pruned.
func TestApplyPruneRemovesTriggers(t *testing.T) {
	parallel(t)
	dir, secrets := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "hook_key"), []byte(hookSecret), 0o600))
	queue := fmt.Sprintf("prune-hooks-%d", time.Now().UnixNano())
	stamp := time.Now().UnixNano()
	old, renamed, gone := fmt.Sprintf("pruned-%d", stamp), fmt.Sprintf("renamed-%d", stamp), fmt.Sprintf("gone-%d", stamp)
	hooked := func(name, hook string) string {
		return fmt.Sprintf(`metadata: {name: %s}
triggers:
  - webhook: {name: %s, secret: {secret: hook_key}}
workflow:
  - step: show
    tool: {kind: noop, result: hi}
`, name, hook)
	}
	file := writePlaybook(t, dir, "hooked.yaml", hooked("prune-hooked", old))
	goneFile := writePlaybook(t, dir, "gone.yaml", hooked("prune-gone", gone))
	url, _ := observedWorker(t, queue, t.TempDir(), "--secrets-dir", secrets)
	apply := func(args ...string) string {
		t.Helper()
		code, out, errOut := cli(t, append([]string{"schedule", "apply", "--address", server.Address, "--task-queue", queue}, args...)...)
		require.Equal(t, 0, code, out+errOut)
		return out
	}
	out := apply("--prune", dir)
	require.Contains(t, out, file+": trigger webhook /hooks/"+old+" created\n")
	require.Contains(t, out, goneFile+": trigger webhook /hooks/"+gone+" created\n")
	// An unsigned delivery to a registered hook is refused (401); to no
	// hook at all, not found (404).
	answers := func(hook string) int {
		status, _ := deliver(t, url+"/hooks/"+hook, []byte(`{}`), "none", "")
		return status
	}
	require.Equal(t, http.StatusUnauthorized, answers(old))
	require.Equal(t, http.StatusUnauthorized, answers(gone))

	// The file renames its hook, and the other file goes: applied without
	// --prune, both old hooks stay.
	writePlaybook(t, dir, "hooked.yaml", hooked("prune-hooked", renamed))
	require.NoError(t, os.Remove(goneFile))
	require.Equal(t, file+": trigger webhook /hooks/"+renamed+" created\n", apply(file))
	for _, hook := range []string{old, renamed, gone} {
		require.Equal(t, http.StatusUnauthorized, answers(hook), hook)
	}
	registered := func(hook string) bool {
		infos, err := runs.Executions(context.Background(), tc, server.Namespace, fmt.Sprintf("WorkflowId = '%s' AND ExecutionStatus = 'Running'", runs.HookID(hook)), -1)
		require.NoError(t, err)
		return len(infos) == 1
	}
	waitFor(t, "the registrations to be listed", func() bool { return registered(old) && registered(gone) })

	out = apply("--prune", dir)
	require.Contains(t, out, file+": trigger webhook /hooks/"+renamed+" unchanged\n")
	require.Contains(t, out, file+": no longer carries it; trigger webhook /hooks/"+old+" deleted\n")
	require.Contains(t, out, goneFile+": gone; trigger webhook /hooks/"+gone+" deleted\n")
	for _, hook := range []string{old, gone} {
		status, answer := deliver(t, url+"/hooks/"+hook, []byte(`{}`), "", "")
		require.Equal(t, http.StatusNotFound, status, "%s: %v", hook, answer)
		d, err := tc.DescribeWorkflowExecution(context.Background(), runs.HookID(hook), "")
		require.NoError(t, err)
		require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus(), hook)
	}
	require.Equal(t, http.StatusUnauthorized, answers(renamed), "the hook the file declares stays")
	waitFor(t, "the pruned registrations to leave the list", func() bool { return !registered(old) && !registered(gone) })
	out = apply("--prune", dir)
	require.NotContains(t, out, "deleted", "pruned once")

	// A pruned hook applied again is registered anew.
	writePlaybook(t, dir, "hooked.yaml", hooked("prune-hooked", old))
	require.Contains(t, apply(file), file+": trigger webhook /hooks/"+old+" created\n")
	require.Equal(t, http.StatusUnauthorized, answers(old))
}
