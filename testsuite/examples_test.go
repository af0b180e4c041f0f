package testsuite

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"playbook/interpreter/contract"
	"playbook/interpreter/engine"
)

// --set gives a string key its text as written: 1.10 stays "1.10".
func TestSetKeepsTheTextForAStringKey(t *testing.T) {
	parallel(t)
	r := runExample(t, "hello.yaml", "--set", "who=1.10")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, "HELLO 1.10", r.agg.Steps["shout"].Result)
}

// Anchors, aliases, merge keys and x- keys: the file runs as written, each
// step with the values its aliases and merges stand for.
func TestAnchorsAliasesAndMergeKeys(t *testing.T) {
	parallel(t)
	r := runExample(t, "anchors.yaml")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, "default\n", r.agg.Steps["plain"].Result.(map[string]any)["stdout"])
	require.Equal(t, "replica:5432\n", r.agg.Steps["extended"].Result.(map[string]any)["stdout"], "the merged workload keeps the port, the merged tool its command")
}

func TestSequential(t *testing.T) {
	parallel(t)
	r := runExample(t, "hello.yaml", "--set", "who=temporal")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, 3, r.agg.TotalSteps)
	require.Equal(t, 0, r.agg.FailedStepsCount)
	require.Equal(t, "HELLO TEMPORAL", r.agg.Steps["shout"].Result)
	report := r.agg.Steps["report"].Result.(map[string]any)
	require.Equal(t, "HELLO TEMPORAL!\n", report["stdout"])
	require.Equal(t, 0.0, report["exit_code"])
	require.Len(t, r.agg.Steps, 4, "steps holds end too")
	require.Equal(t, contract.StatusCompleted, r.agg.Steps["end"].Status)
	require.True(t, strings.HasPrefix(r.agg.WorkflowID, "hello-"), r.agg.WorkflowID)
	require.NotEmpty(t, r.agg.RunID)
}

func TestBranching(t *testing.T) {
	parallel(t)
	r := runExample(t, "branching.yaml")
	require.Equal(t, contract.StatusCompleted, r.agg.Steps["load"].Status)
	require.Equal(t, "loaded 5 rows", r.agg.Steps["load"].Result)
	require.Equal(t, contract.StatusSkipped, r.agg.Steps["nothing_to_do"].Status)

	r = runExample(t, "branching.yaml", "--set", "rows=0")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, contract.StatusSkipped, r.agg.Steps["load"].Status)
	require.Equal(t, "no rows today", r.agg.Steps["nothing_to_do"].Result)
}

func TestFanOutAndJoin(t *testing.T) {
	parallel(t)
	r := runExample(t, "fan_out.yaml")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, 6.0, r.agg.Steps["join"].Result)
	// The three branches ran together: all started before any completed.
	var events []engine.Event
	v, err := tc.QueryWorkflow(context.Background(), r.agg.WorkflowID, r.agg.RunID, contract.QueryEvents, 0)
	require.NoError(t, err)
	require.NoError(t, v.Get(&events))
	started, completedBranch := 0, false
	for _, e := range events {
		branch := e.Step == "east" || e.Step == "west" || e.Step == "north"
		if branch && e.Type == "step_started" {
			require.False(t, completedBranch, "a branch started after another completed: %+v", events)
			started++
		}
		if branch && e.Type == "step_completed" {
			completedBranch = true
		}
	}
	require.Equal(t, 3, started)
}

func TestRetrySucceedsOnThirdAttempt(t *testing.T) {
	parallel(t)
	r := runExample(t, "flaky.yaml")
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, 3, r.agg.Steps["flaky"].Attempts)
	require.Equal(t, "flaky took 3 attempts", r.agg.Steps["after"].Result)
	require.Contains(t, r.stderr, "retrying: attempt", "run shows retries as they happen")
	// Each attempt kept its own stderr.
	for _, n := range []string{"1", "2", "3"} {
		b := readLog(t, r.agg.WorkflowID, "flaky", "attempt-"+n+".stderr")
		require.Equal(t, "attempt "+n+"\n", b)
	}
}

func TestStopWhenStopsAtOnce(t *testing.T) {
	parallel(t)
	r := runExample(t, "stop_when.yaml")
	require.Equal(t, 1, r.code)
	fetch := r.agg.Steps["fetch"]
	require.Equal(t, contract.StatusFailed, fetch.Status)
	require.Equal(t, 1, fetch.Attempts)
	require.Equal(t, "exit_code", fetch.Error.Type)
	require.Equal(t, "exited with code 2: bad credentials (stop_when exit_code == 2 is true)", fetch.Error.Message)
}

func TestFailureRoutesToEnd(t *testing.T) {
	parallel(t)
	r := runExample(t, "failure_cleanup.yaml")
	require.Equal(t, 1, r.code)
	agg := r.agg
	require.Equal(t, "failed", agg.Status)
	require.True(t, agg.EvaluatedByEndStep)
	require.Equal(t, []string{"transform"}, agg.FailedSteps)
	require.Equal(t, 5, agg.TotalSteps)
	tr := agg.Steps["transform"]
	require.Equal(t, contract.StatusFailed, tr.Status)
	require.True(t, tr.RoutedToEnd)
	require.Equal(t, "transform", *tr.OriginalFailedStep)
	require.Nil(t, tr.Result)
	require.Equal(t, "exit_code", tr.Error.Type)
	require.Equal(t, 3.0, tr.Error.Details.(map[string]any)["exit_code"])
	require.Equal(t, contract.StatusSkipped, agg.Steps["report"].Status)
	require.Equal(t, contract.StatusCompleted, agg.Steps["audit"].Status)
	cleanup := agg.Steps["cleanup"]
	require.Equal(t, contract.StatusCompleted, cleanup.Status, "on_failure: run")
	require.Equal(t, "cleaning up; transform result is []\n", cleanup.Result.(map[string]any)["stdout"])

	// Temporal shows the outcome at a glance: Failed, with PlaybookFailed.
	d, err := tc.DescribeWorkflowExecution(context.Background(), agg.WorkflowID, agg.RunID)
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_FAILED, d.GetWorkflowExecutionInfo().GetStatus())
	h := history(t, agg.WorkflowID, agg.RunID)
	last := h.Events[len(h.Events)-1]
	require.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, last.GetEventType())
	failure := last.GetWorkflowExecutionFailedEventAttributes().GetFailure()
	require.Equal(t, contract.FailedErrorType, failure.GetApplicationFailureInfo().GetType())
	require.Equal(t, "playbook failure-cleanup failed: 1 of 5 steps failed (transform); transform: exit_code: exited with code 3: disk full", failure.GetMessage())
	var details contract.Aggregate
	require.NoError(t, json.Unmarshal(failure.GetApplicationFailureInfo().GetDetails().GetPayloads()[0].GetData(), &details))
	require.Equal(t, "failed", details.Status, "the failure's details are the aggregate")
}

func TestHTTPStep(t *testing.T) {
	parallel(t)
	var gotRun string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/orders", r.URL.Path)
		gotRun = r.Header.Get("X-Run")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id": 42}`))
	}))
	defer srv.Close()
	r := runExample(t, "http.yaml", "--set", "url="+srv.URL)
	require.Equal(t, "completed", r.agg.Status)
	require.Equal(t, "order 42 accepted", r.agg.Steps["confirm"].Result)
	require.Equal(t, r.agg.WorkflowID, gotRun, "execution_id is the workflow ID")
}

// The example's retry_when retries a server error and a request that got
// no answer (status_code null), and not a client error.
func TestHTTPStepRetriesNoAnswerAndServerErrors(t *testing.T) {
	// Serial: times in seconds against the wall clock, retries that must fit a retry budget of 30s (see parallel).
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(503)
		default:
			w.WriteHeader(400)
		}
	}))
	defer srv.Close()
	r := runExample(t, "http.yaml", "--set", "url="+srv.URL)
	require.Equal(t, "failed", r.agg.Status)
	require.Equal(t, 2, r.agg.Steps["post"].Attempts, "503 retried, 400 not")
	require.Equal(t, "http_status", r.agg.Steps["post"].Error.Type)

	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close() // nothing listens there now
	r = runExample(t, "http.yaml", "--set", "url="+refused.URL)
	require.Equal(t, "failed", r.agg.Status)
	require.Equal(t, 3, r.agg.Steps["post"].Attempts, "no answer: retried up to max_attempts")
	require.Equal(t, "http_error", r.agg.Steps["post"].Error.Type)
}

func TestTimeoutKillsTheStep(t *testing.T) {
	parallel(t)
	r := runExample(t, "timeout.yaml")
	require.Less(t, runTook(t, r.agg), 15*time.Second, "the 30s sleep was cut short")
	slow := r.agg.Steps["slow"]
	require.Equal(t, contract.StatusFailed, slow.Status)
	require.Equal(t, "execution_timeout", slow.Error.Type)
	require.Equal(t, "attempt 1 ran past its timeout of 2s and was killed", slow.Error.Message)
	require.Empty(t, processesMatching("playbook-timeout-example"), "no sleep is left")
}
