package playtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"playbook/interpreter/contract"
	"playbook/interpreter/spec"
)

// Record writes a test file with one case made from a real run: its
// workload and logical time; its steps' attempts (results, errors, lost
// attempts, how long they took, the files they handed on) as mocks, a
// loop's element by element, a sub-playbook mocked whole;
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
			// A loop's mock is a block of lines, the others one line.
			sep := " "
			if strings.HasPrefix(m, "\n") {
				sep = ""
			}
			mocks = append(mocks, fmt.Sprintf("      %s:%s%s", s.Name, sep, m))
		}
		for _, ev := range recordEvents(s, st, start) {
			// One send completes every step that waits for its event:
			// two steps that took the same one took one send.
			if !strings.HasPrefix(ev, "send: ") || !slices.Contains(events, ev) {
				events = append(events, ev)
			}
		}
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
	if s.Loop != nil {
		return recordLoop(st, s.Timeout)
	}
	var attempts []attempt
	for _, r := range st.AttemptErrors {
		attempts = append(attempts, failedAttempt(r))
	}
	switch st.Status {
	case contract.StatusCompleted:
		attempts = append(attempts, succeeded(st.Result, filePaths(st.Files)))
	case contract.StatusFailed, contract.StatusPendingFailed:
		if len(st.AttemptErrors) == 0 && st.Error != nil {
			attempts = append(attempts, attempt{"error: " + recordError(*st.Error)})
		}
	case contract.StatusCancelled:
		// It ran until it was cancelled, and would have run on.
		attempts = append(attempts, attempt{"result: null"})
	}
	if len(attempts) == 0 {
		return ""
	}
	takeTime(attempts, took(st), s.Timeout)
	texts := make([]string, len(attempts))
	for i, a := range attempts {
		texts[i] = a.String()
	}
	return "{ attempts: [" + strings.Join(texts, ", ") + "] }"
}

// attempt is a mocked attempt's fields, "key: value" each.
type attempt []string

// String writes the attempt as a flow mapping; a lost attempt that takes
// no time is just "lost".
func (a attempt) String() string {
	if len(a) == 1 && a[0] == "lost: true" {
		return "lost"
	}
	return "{ " + strings.Join(a, ", ") + " }"
}

// failedAttempt is a failed attempt as its mock gives it.
func failedAttempt(r contract.AttemptRecord) attempt {
	if r.Lost {
		return attempt{"lost: true"}
	}
	// A successful attempt that retry_when polled past: its result, which
	// the playbook's retry_when decides on again.
	if d, ok := r.Error.Details.(map[string]any); ok && r.Error.Type == contract.ErrRetryWhen {
		if result, ok := d["result"]; ok {
			return attempt{"result: " + flow(result)}
		}
	}
	a := attempt{"error: " + recordError(r.Error)}
	if r.RecoveryExitCode != nil {
		a = append(a, fmt.Sprintf("recovery_exit_code: %d", *r.RecoveryExitCode))
	}
	return a
}

// succeeded is a successful attempt with its result and the files it
// handed on. The aggregate holds a file's size and sha256, not its
// content: it is recorded empty, which is enough for a later step's
// inputs to find it.
func succeeded(result any, files []string) attempt {
	a := attempt{"result: " + flow(result)}
	if len(files) > 0 {
		empty := make([]string, len(files))
		for i, p := range files {
			empty[i] = flow(p) + `: ""`
		}
		a = append(a, "files: { "+strings.Join(empty, ", ")+" }")
	}
	return a
}

// filePaths are the paths of the files a step handed on, in order.
func filePaths(files map[string]contract.FileRef) []string {
	return slices.Sorted(maps.Keys(files))
}

// took is how long the step ran, 0 when unknown; a cancelled step would
// have run a day longer.
func took(st *contract.StepState) time.Duration {
	if st.StartedAt == nil || st.EndedAt == nil {
		return 0
	}
	d := st.EndedAt.Sub(*st.StartedAt)
	if st.Status == contract.StatusCancelled {
		d += 24 * time.Hour
	}
	return d
}

// takeTime makes the last of attempts take d, the step's time, but no
// longer than the step's timeout (0: none): an attempt is killed then.
func takeTime(attempts []attempt, d, timeout time.Duration) {
	if d <= 0 || len(attempts) == 0 {
		return
	}
	if timeout > 0 {
		d = min(d, timeout)
	}
	last := len(attempts) - 1
	attempts[last] = append(slices.Clone(attempts[last]), "takes: "+d.String())
}

// maxRecordedElements bounds the elements a loop's recorded mock gives
// by index for their results alone: a loop of 10,000 elements that each
// gave another result writes the first 1,000, and the others take the
// step's own mock. Elements that failed an attempt are always written
// (the run's aggregate keeps a loop's first 100 failed attempts).
const maxRecordedElements = 1000

// elementLabel is the label a loop's element puts before its attempts'
// errors ("element 2 of 3 (index 1): "), and the one a cancelled loop's
// error ends with.
var (
	elementLabel   = regexp.MustCompile(`^element \d+ of \d+ \(index (\d+)\): `)
	cancelledLabel = regexp.MustCompile(`\(index (\d+)\)$`)
)

// recordLoop is a loop step's attempts as its elements' mocks, since a
// loop is mocked element by element. The step's own mock (the result
// most elements gave, with their files) stands for the elements that
// ran alike; the others are given by index: an element with failed
// attempts (then its result), one whose result differs, and the element
// that takes the step's time: the first for a loop that completed, the
// first that failed or was cancelled for one that did not. A failed
// loop's aggregate holds no result, so its elements give null.
func recordLoop(st *contract.StepState, timeout time.Duration) string {
	failedAttempts := map[int][]attempt{}
	// gaveUp are the elements whose last failed attempt was their last:
	// the retry decision, or the failure handler, gave up after it.
	gaveUp := map[int]bool{}
	for _, r := range st.AttemptErrors {
		m := elementLabel.FindStringSubmatch(r.Error.Message)
		if m == nil {
			continue // the count of the failed attempts not kept
		}
		i, _ := strconv.Atoi(m[1])
		r.Error.Message = strings.TrimPrefix(r.Error.Message, m[0])
		failedAttempts[i] = append(failedAttempts[i], failedAttempt(r))
		gaveUp[i] = !r.Lost && r.Recovery != "" && r.Recovery != contract.RecoveryRetried
	}
	files := map[int][]string{}
	for _, key := range filePaths(st.Files) {
		var i int
		if _, err := fmt.Sscanf(key, "[%d]/", &i); err == nil {
			files[i] = append(files[i], key[strings.Index(key, "/")+1:])
		}
	}
	results, _ := st.Result.([]any)
	result := func(i int) attempt {
		var r any
		if i >= 0 && i < len(results) {
			r = results[i]
		}
		return succeeded(r, files[i])
	}

	timed, failed := 0, -1
	switch st.Status {
	case contract.StatusFailed, contract.StatusPendingFailed:
		if st.Error != nil {
			d, _ := st.Error.Details.(map[string]any)
			if i := intField(d, "index"); i != nil {
				timed, failed = *i, *i
			}
			if failed >= 0 && len(failedAttempts[failed]) == 0 {
				// Its failed attempts were past those the aggregate keeps.
				var e contract.StepError
				if b, err := json.Marshal(d["error"]); err == nil && json.Unmarshal(b, &e) == nil && e.Type != "" {
					failedAttempts[failed] = []attempt{{"error: " + recordError(e)}}
				}
			}
		}
	case contract.StatusCancelled:
		if st.Error != nil {
			if m := cancelledLabel.FindStringSubmatch(st.Error.Message); m != nil {
				timed, _ = strconv.Atoi(m[1])
			}
		}
	}

	// The step's own mock: the result most elements gave; of results
	// given as often, the one that got there first.
	texts := make([]string, len(results))
	own, most := result(-1), 0
	count := map[string]int{}
	for i := range results {
		texts[i] = result(i).String()
		if count[texts[i]]++; count[texts[i]] > most {
			own, most = result(i), count[texts[i]]
		}
	}

	// An element's failed attempts, then its result, unless it failed:
	// the playbook's retry decision, given the same errors, stops where
	// the run's did.
	elements := map[int][]attempt{}
	for i, a := range failedAttempts {
		if i != failed && (!gaveUp[i] || st.Status == contract.StatusCompleted) {
			a = append(a, result(i))
		}
		elements[i] = a
	}
	if d := took(st); d > 0 && (timed < len(results) || results == nil) {
		if elements[timed] == nil {
			elements[timed] = []attempt{result(timed)}
		}
		takeTime(elements[timed], d, timeout)
	}
	written, left := 0, 0
	for i := range results {
		if _, ok := elements[i]; ok || texts[i] == own.String() {
			continue
		}
		if written == maxRecordedElements {
			left++
			continue
		}
		elements[i] = []attempt{result(i)}
		written++
	}

	var b strings.Builder
	for _, f := range own {
		b.WriteString("\n        " + f)
	}
	if len(elements) > 0 {
		b.WriteString("\n        elements:")
		if left > 0 {
			fmt.Fprintf(&b, "\n          # %d more elements gave other results: they are not written, and take the step's own mock", left)
		}
		for _, i := range slices.Sorted(maps.Keys(elements)) {
			a := elements[i]
			if len(a) == 1 {
				fmt.Fprintf(&b, "\n          %d: %s", i, a[0])
				continue
			}
			each := make([]string, len(a))
			for j, x := range a {
				each[j] = x.String()
			}
			fmt.Fprintf(&b, "\n          %d: { attempts: [%s] }", i, strings.Join(each, ", "))
		}
	}
	return b.String()
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
		// A process its timeout killed keeps its exit code, which
		// exit-code rules match.
		if code, ok := d["exit_code"].(float64); ok {
			f = append(f, fmt.Sprintf("exit_code: %d", int(code)))
		}
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
	if s.Tool.Kind == spec.WaitEventKind {
		// The event it got, unless its own timeout ended the wait.
		if r, ok := st.Result.(map[string]any); ok && r["timed_out"] != true {
			if event, _ := r["event"].(string); event != "" {
				ev := "send: " + flow(event) + after + ", by: " + flow(r["by"])
				if r["data"] != nil {
					ev += ", data: " + flow(r["data"])
				}
				return []string{ev}
			}
		}
		return nil
	}
	if s.Tool.Kind != "approval" {
		return nil
	}
	if r, ok := st.Result.(map[string]any); ok && r["by"] != "timeout" {
		ev := "approve: " + s.Name + after + ", by: " + flow(r["by"])
		if in, ok := r["inputs"].(map[string]any); ok && len(in) > 0 {
			ev += ", inputs: " + flow(in)
		}
		if reason, _ := r["reason"].(string); reason != "" {
			ev += ", reason: " + flow(reason)
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
