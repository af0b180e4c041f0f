package playtest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Record writes a test file with one case made from a real run: its
// workload and logical time; its steps' attempts (results, errors, lost
// attempts, how long they took) as mocks, a sub-playbook mocked whole;
// the approvals, classifications and cancel it got as events; its
// outcome as what the case expects. out is where the file goes, which
// its playbook path is relative to; history, when given, is the run's
// recorded history file (relative to out's directory), which the case
// then replays.
func Record(in contract.Input, agg *contract.Aggregate, name, out, history string) ([]byte, error) {
	pb, err := spec.Parse(in.File, []byte(in.Source))
	if err != nil {
		return nil, err
	}
	pbPath := filepath.Join(in.BaseDir, filepath.Base(in.File))
	outDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(outDir, pbPath)
	if err != nil {
		rel = pbPath
	}
	start := runStart(agg)
	var b strings.Builder
	fmt.Fprintf(&b, "# Recorded from run %s (%s): its attempts are the mocks, its decisions the events, its outcome what is expected.\n", agg.WorkflowID, agg.Status)
	fmt.Fprintf(&b, "playbook: %s\ncases:\n  - name: %s\n", flow(filepath.ToSlash(rel)), flow(name))
	if len(in.Workload) > 0 {
		fmt.Fprintf(&b, "    set: %s\n", flow(in.Workload))
	}
	if in.LogicalTime != nil {
		fmt.Fprintf(&b, "    logical_time: %s\n", in.LogicalTime.UTC().Format(time.RFC3339))
	}
	if history != "" {
		fmt.Fprintf(&b, "    history: %s\n", flow(filepath.ToSlash(history)))
	}
	var mocks, events []string
	for _, s := range pb.Steps {
		st := agg.Steps[s.Name]
		if st == nil || s.Tool == nil || st.Attempts == 0 && st.StartedAt == nil {
			continue
		}
		if m := recordMock(s, st); m != "" {
			mocks = append(mocks, fmt.Sprintf("      %s: %s", s.Name, m))
		}
		events = append(events, recordEvents(s, st, start)...)
	}
	if agg.Status == contract.RunCancelled {
		ev := "cancel: " + flow(agg.CancelReason)
		if at := firstCancelled(agg); at != nil && start != nil {
			ev += ", after: " + at.Sub(*start).String()
		}
		events = append(events, ev)
	}
	if len(mocks) > 0 {
		b.WriteString("    mocks:\n" + strings.Join(mocks, "\n") + "\n")
	}
	if len(events) > 0 {
		b.WriteString("    events:\n")
		for _, e := range events {
			b.WriteString("      - { " + e + " }\n")
		}
	}
	fmt.Fprintf(&b, "    expect:\n      status: %s\n      steps:\n", agg.Status)
	for _, s := range pb.Steps {
		st := agg.Steps[s.Name]
		if st == nil || s.Name == spec.EndStep {
			continue
		}
		x := []string{"status: " + string(st.Status)}
		if st.Attempts > 0 {
			x = append(x, fmt.Sprintf("attempts: %d", st.Attempts))
		}
		if st.RoutedToEnd {
			x = append(x, "routed_to_end: true")
		}
		if st.Error != nil && st.Status == contract.StatusFailed {
			x = append(x, "error_type: "+flow(st.Error.Type))
		}
		fmt.Fprintf(&b, "        %s: { %s }\n", s.Name, strings.Join(x, ", "))
	}
	return []byte(b.String()), nil
}

// HistoryName is the name of the history file --record keeps beside the
// test file out for run: out's name without its suffix, then the run's ID
// with anything but letters, digits, '.', '_' and '-' made '_'.
func HistoryName(out, run string) string {
	safe := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return r
		}
		return '_'
	}, run)
	return strings.TrimSuffix(filepath.Base(out), Suffix) + "." + safe + ".history.json"
}

// recordMock is a step's attempts as a mock, "" for a step that runs in
// the workflow.
func recordMock(s *spec.Step, st *contract.StepState) string {
	if s.Tool.Kind == "playbook" {
		outcome := contract.RunCompleted
		result := st.Result
		if st.Status == contract.StatusFailed && st.Error != nil {
			outcome, result = contract.RunFailed, st.Error.Details
		}
		if st.Status != contract.StatusCompleted && st.Status != contract.StatusFailed {
			return ""
		}
		m := "{ outcome: " + outcome
		if result != nil {
			m += ", result: " + flow(result)
		}
		return m + " }"
	}
	if _, world := touchesWorld[s.Tool.Kind]; !world {
		return ""
	}
	var attempts []string
	for _, r := range st.AttemptErrors {
		if r.Lost {
			attempts = append(attempts, "lost")
			continue
		}
		a := "error: " + recordError(r.Error)
		if r.RecoveryExitCode != nil {
			a += fmt.Sprintf(", recovery_exit_code: %d", *r.RecoveryExitCode)
		}
		attempts = append(attempts, "{ "+a+" }")
	}
	switch st.Status {
	case contract.StatusCompleted:
		attempts = append(attempts, "{ result: "+flow(st.Result)+" }")
	case contract.StatusFailed, contract.StatusPendingFailed:
		if len(st.AttemptErrors) == 0 && st.Error != nil {
			attempts = append(attempts, "{ error: "+recordError(*st.Error)+" }")
		}
	case contract.StatusCancelled:
		// It ran until it was cancelled, and would have run on.
		attempts = append(attempts, "{ result: null }")
	}
	if len(attempts) == 0 {
		return ""
	}
	if st.StartedAt != nil && st.EndedAt != nil {
		took := st.EndedAt.Sub(*st.StartedAt)
		if st.Status == contract.StatusCancelled {
			took += 24 * time.Hour
		}
		if took > 0 {
			last := attempts[len(attempts)-1]
			if last == "lost" {
				last = "{ lost: true }"
			}
			attempts[len(attempts)-1] = strings.TrimSuffix(last, " }") + ", takes: " + took.String() + " }"
		}
	}
	return "{ attempts: [" + strings.Join(attempts, ", ") + "] }"
}

// recordError is a failed attempt's error as a mock gives it: a process's
// exit code and tails, a request's status code, else its type and message.
func recordError(e contract.StepError) string {
	d, _ := e.Details.(map[string]any)
	var f []string
	if code, ok := d["exit_code"].(float64); ok && e.Type == contract.ErrExitCode {
		f = append(f, fmt.Sprintf("exit_code: %d", int(code)))
		for _, k := range []string{"stdout", "stderr"} {
			if t, _ := d[k].(string); t != "" {
				f = append(f, k+": "+flow(t))
			}
		}
	} else if code, ok := d["status_code"].(float64); ok && e.Type == contract.ErrHTTPStatus {
		f = append(f, fmt.Sprintf("status_code: %d", int(code)))
	} else {
		f = append(f, "type: "+flow(e.Type), "message: "+flow(e.Message))
	}
	return "{ " + strings.Join(f, ", ") + " }"
}

// recordEvents are the decisions a step got from people.
func recordEvents(s *spec.Step, st *contract.StepState, start *time.Time) []string {
	after := ""
	if start != nil && st.EndedAt != nil {
		after = ", after: " + st.EndedAt.Sub(*start).String()
	}
	if st.Classified != "" {
		action, _, _ := strings.Cut(st.Classified, " ")
		return []string{"classify: " + s.Name + ", as: " + action}
	}
	if s.Tool.Kind != "approval" {
		return nil
	}
	if r, ok := st.Result.(map[string]any); ok && r["by"] != "timeout" {
		ev := "approve: " + s.Name + after + ", by: " + flow(r["by"])
		if in, ok := r["inputs"].(map[string]any); ok && len(in) > 0 {
			ev += ", inputs: " + flow(in)
		}
		return []string{ev}
	}
	if st.Error != nil && st.Error.Type == contract.ErrRejected {
		d, _ := st.Error.Details.(map[string]any)
		if d["by"] != "timeout" {
			ev := "reject: " + s.Name + after + ", by: " + flow(d["by"])
			if reason, _ := d["reason"].(string); reason != "" {
				ev += ", reason: " + flow(reason)
			}
			return []string{ev}
		}
	}
	return nil
}

// runStart is when the run's first step started.
func runStart(agg *contract.Aggregate) *time.Time {
	var first *time.Time
	for _, st := range agg.Steps {
		if st.StartedAt != nil && (first == nil || st.StartedAt.Before(*first)) {
			first = st.StartedAt
		}
	}
	return first
}

// firstCancelled is when the first step cancelled ended: about when the
// cancel request came.
func firstCancelled(agg *contract.Aggregate) *time.Time {
	var at []time.Time
	for _, st := range agg.Steps {
		if st.Status == contract.StatusCancelled && st.EndedAt != nil {
			at = append(at, *st.EndedAt)
		}
	}
	if len(at) == 0 {
		return nil
	}
	t := slices.MinFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	return &t
}

// flow writes a value as YAML's flow style takes it: JSON.
func flow(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// AppendCase adds a recorded file's case to an existing test file's text.
func AppendCase(existing, recorded []byte) []byte {
	_, cases, _ := strings.Cut(string(recorded), "cases:\n")
	out := strings.TrimRight(string(existing), "\n") + "\n" + cases
	return []byte(out)
}
