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
	"regexp"
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

// hookSecrets is a worker's secrets directory holding hook_key, the
// hooks' secret, as a file ending in a newline, as people write one.
func hookSecrets(t *testing.T) string {
	t.Helper()
	secrets := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "hook_key"), []byte(hookSecret+"\n"), 0o600))
	return secrets
}

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
	secrets := hookSecrets(t)
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
	// No extract-trg has run yet: a misspelt name would look the same.
	require.Equal(t, "warning: "+load+": no run of playbook extract-trg is known to this namespace: check that it is its metadata.name (the trigger waits for one)\n", errOut)
	// schedule triggers lists the registration, once visibility has it.
	waitFor(t, "the trigger to be listed", func() bool {
		_, out, _ := cli(t, "schedule", "triggers", "--address", server.Address)
		return regexp.MustCompile(`(?m)^playbook-after-extract-trg-load-trg +load-trg +after extract-trg \[completed\] +` + regexp.QuoteMeta(load) + `$`).MatchString(out)
	})

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
	require.Empty(t, errOut, "extract-trg's runs are known now")
	require.Len(t, runsOf(t, "load-trg"), 2)
}

// updatesOf counts the Updates a run accepted: the events it recorded.
func updatesOf(t *testing.T, id string) int {
	t.Helper()
	n := 0
	it := tc.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED {
			n++
		}
	}
	return n
}

// A signed event POSTed to /hooks/NAME/runs/RUN/events/EVENT reaches a
// wait_event step of a run of the hook's playbook, sent by "webhook
// NAME"; a bad signature, a run of another playbook, an unknown run, a
// bad name or body each get their HTTP error and send nothing; an event
// no step waits for and one to an ended run get 409; a resent delivery ID
// is answered again without a second event (#44: events by webhook).
func TestWebhookSendsAnEventToARun(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	secrets := hookSecrets(t)
	queue := fmt.Sprintf("hook-events-%d", time.Now().UnixNano())
	file := writePlaybook(t, dir, "sensor.yaml", `
metadata: {name: hook-sensor}
triggers:
  - webhook: {name: sensor, secret: {secret: hook_key}}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed}
`)
	other := writePlaybook(t, dir, "other.yaml", `
metadata: {name: hook-sensor-other}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed}
`)
	url, stderr := observedWorker(t, queue, t.TempDir(), "--secrets-dir", secrets)
	code, _, errOut := cli(t, "schedule", "apply", "--address", server.Address, "--task-queue", queue, file)
	require.Equal(t, 0, code, errOut)
	status, answer := deliver(t, url+"/hooks/sensor", []byte(`{}`), "", "")
	require.Equal(t, http.StatusCreated, status, answer)
	run := answer["run_id"].(string)
	stranger := startDetached(t, "hook-stranger", other, "--task-queue", queue)
	waitFor(t, "landed to wait for its event", func() bool { return stepWaiting(t, run, "landed") == "event file_landed" })
	event := func(run, event string) string { return url + "/hooks/sensor/runs/" + run + "/events/" + event }

	// Refusals first: none of them sends anything.
	status, answer = deliver(t, event(run, "file_landed"), []byte(`{"path": "/forged"}`), "sha256=00ff", "")
	require.Equal(t, http.StatusUnauthorized, status, answer)
	require.Equal(t, `webhook "sensor": X-Playbook-Signature is missing or is not the body's HMAC-SHA256 with the hook's secret (write sha256=HEX): nothing sent`, answer["error"])
	status, answer = deliver(t, event(run, "file_landed"), nil, "none", "")
	require.Equal(t, http.StatusUnauthorized, status, answer)
	status, answer = deliver(t, event(stranger, "file_landed"), []byte(`{"path": "/elsewhere"}`), "", "")
	require.Equal(t, http.StatusNotFound, status, answer)
	require.Equal(t, fmt.Sprintf(`webhook "sensor": no run %s of playbook hook-sensor: nothing sent`, stranger), answer["error"])
	status, answer = deliver(t, event("no-such-run", "file_landed"), nil, "", "")
	require.Equal(t, http.StatusNotFound, status, answer)
	require.Equal(t, `webhook "sensor": no run no-such-run of playbook hook-sensor: nothing sent`, answer["error"])
	status, answer = deliver(t, url+"/hooks/no-such-hook/runs/"+run+"/events/file_landed", nil, "", "")
	require.Equal(t, http.StatusNotFound, status, answer)
	status, answer = deliver(t, event(run, "File_Landed"), nil, "", "")
	require.Equal(t, http.StatusBadRequest, status, answer)
	require.Contains(t, answer["error"], `event "File_Landed": an event's name matches`)
	status, answer = deliver(t, event(run, "file_landed"), []byte(`{"path": NaN}`), "", "")
	require.Equal(t, http.StatusBadRequest, status, answer)
	require.Contains(t, answer["error"], "the body is not JSON")
	status, answer = deliver(t, event(run, "file_landed"), []byte(`"`+strings.Repeat("x", 300<<10)+`"`), "", "")
	require.Equal(t, http.StatusRequestEntityTooLarge, status, answer)
	require.Contains(t, answer["error"], "over the limit of 262144 (256 KiB)")
	status, answer = deliver(t, event(run, "file_gone"), nil, "", "")
	require.Equal(t, http.StatusConflict, status, answer)
	require.Contains(t, answer["error"], "no step of playbook hook-sensor waits for event file_gone (its wait_event steps wait for: file_landed)")
	require.Equal(t, "event file_landed", stepWaiting(t, run, "landed"), "the run still waits")
	require.Zero(t, updatesOf(t, run))

	// A signed event reaches the step; the same delivery again, once the
	// run has ended, is answered as the first was, and sends nothing.
	body := []byte(`{"path": "/drop/orders.csv", "rows": 12345678901}`)
	for range 2 {
		status, answer = deliver(t, event(run, "file_landed"), body, "", "delivery-7")
		require.Equal(t, http.StatusOK, status, answer)
		require.Equal(t, map[string]any{"run_id": run, "event": "file_landed", "received": "event file_landed received by step landed"}, answer)
		agg := finishID(t, run)
		require.Equal(t, contract.RunCompleted, agg.Status)
		res := agg.Steps["landed"].Result.(map[string]any)
		require.Equal(t, "webhook sensor", res["by"])
		require.Equal(t, map[string]any{"path": "/drop/orders.csv", "rows": float64(12345678901)}, res["data"])
	}
	require.Equal(t, 1, updatesOf(t, run))
	status, answer = deliver(t, event(run, "file_landed"), body, "", "delivery-8")
	require.Equal(t, http.StatusConflict, status, answer)
	require.Contains(t, answer["error"], run+" already ended: completed")

	// The stranger never had the hook's event: it takes its own.
	code, out, errOut := cli(t, "send", "--address", server.Address, stranger, "file_landed", "--by", "tester")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "event file_landed received by step landed\n", out)
	require.Equal(t, "tester", finishID(t, stranger).Steps["landed"].Result.(map[string]any)["by"])
	require.Contains(t, stderr.String(), "webhook event")
}

// `playbook dev --metrics-address` serves the webhooks as a worker does:
// a delivery starts a run, the hook's event reaches it, and the delivery
// sent again with ?wait= answers the run's outcome.
func TestDevServesWebhooksAndTheirEvents(t *testing.T) {
	parallel(t)
	bin := playbookBinary(t)
	dir := t.TempDir()
	secrets := hookSecrets(t)
	port, uiPort := devPorts(t)
	endpoint := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dev, _ := launchDevWith(t, bin, filepath.Join(dir, "dev.db"), &port, &uiPort, nil, "--secrets-dir", secrets, "--metrics-address", endpoint)
	t.Cleanup(func() { _ = dev.Process.Kill(); _ = dev.Wait() })
	file := writePlaybook(t, dir, "sensor.yaml", `
metadata: {name: dev-sensor}
triggers:
  - webhook: {name: dev-sensor, secret: {secret: hook_key}}
workflow:
  - step: landed
    tool: {kind: wait_event, event: file_landed}
`)
	code, _, errOut := cli(t, "schedule", "apply", "--address", fmt.Sprintf("127.0.0.1:%d", port), file)
	require.Equal(t, 0, code, errOut)
	hook := "http://" + endpoint + "/hooks/dev-sensor"

	status, answer := deliver(t, hook, []byte(`{}`), "", "start-1")
	require.Equal(t, http.StatusCreated, status, answer)
	run := answer["run_id"].(string)
	status, answer = deliver(t, hook+"/runs/"+run+"/events/file_landed", []byte(`"/drop/a.csv"`), "", "")
	require.Equal(t, http.StatusOK, status, answer)
	require.Equal(t, "event file_landed received by step landed", answer["received"])
	status, answer = deliver(t, hook+"?wait=2m", []byte(`{}`), "", "start-1")
	require.Equal(t, http.StatusOK, status, answer)
	require.Equal(t, contract.RunCompleted, answer["status"], answer)
	landed := answer["result"].(map[string]any)["steps"].(map[string]any)["landed"].(map[string]any)["result"].(map[string]any)
	require.Equal(t, "webhook dev-sensor", landed["by"])
	require.Equal(t, "/drop/a.csv", landed["data"])
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

	// The playbook moves to another directory and is applied from there:
	// pruning the first directory leaves its hook alone, which the file it
	// was last applied from declares (the registration's memo still names
	// the first file).
	moved := writePlaybook(t, t.TempDir(), "moved.yaml", hooked("prune-hooked", old))
	apply(moved)
	require.NoError(t, os.Remove(file))
	waitFor(t, "the registration to be listed", func() bool { return registered(old) })
	out = apply("--prune", dir)
	require.NotContains(t, out, "/hooks/"+old+" deleted", "a hook applied from elsewhere since is not this directory's")
	require.Equal(t, http.StatusUnauthorized, answers(old))
}
