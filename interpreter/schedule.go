package interpreter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Schedule is a playbook's `schedule:` key: when `playbook schedule apply`
// makes the playbook run by itself. Runs never read it; only the schedule
// commands do.
type Schedule struct {
	Line int
	// ID names the schedule; empty: the playbook's metadata.name.
	ID string
	// Cron is a 5 to 7 field cron expression or a shorthand such as @daily.
	Cron string
	// Every is a fixed interval, instead of Cron.
	Every time.Duration
	// Timezone is an IANA name the cron is read in; empty: UTC.
	Timezone string
	// Overlap is what happens when a run is due while another still runs
	// (one of OverlapPolicies); empty: skip.
	Overlap string
	// CatchupWindow is how late a missed run may still start; 0: the default.
	CatchupWindow time.Duration
	// Jitter delays each run by a random amount up to it.
	Jitter         time.Duration
	PauseOnFailure bool
	// Workload overrides the playbook's workload for scheduled runs.
	Workload map[string]any
	// lines holds each key's line, for Check's errors; workloadLines the
	// line of each key of workload.
	lines         map[string]int
	workloadLines map[string]int
}

// OverlapPolicies are the names `overlap` accepts, Temporal's overlap
// policies in lower case.
var OverlapPolicies = []string{"skip", "buffer-one", "buffer-all", "cancel-other", "terminate-other", "allow-all"}

var scheduleIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// schedule decodes the `schedule:` mapping. Only its shape is checked here:
// the cron, time zone and policy are checked at submission (CheckSchedule),
// never when a run re-parses its frozen playbook.
func (d *decoder) schedule(n *yaml.Node) (*Schedule, error) {
	s := &Schedule{Line: n.Line, lines: map[string]int{}, workloadLines: map[string]int{}}
	err := d.fields(n, "schedule", d.scheduleKeys(s))
	return s, err
}

// CheckSchedule checks the playbook's `schedule:` key, if it has one: an ID
// Temporal accepts, exactly one of cron and every, a cron expression
// Temporal's scheduler parses, a time zone this machine knows, a known
// overlap policy, workload overrides the playbook declares. Submission
// runs it (LoadBundle), not the workflow.
func (p *Playbook) CheckSchedule() error {
	s := p.Schedule
	if s == nil {
		return nil
	}
	errAt := func(key, format string, args ...any) error {
		line := s.lines[key]
		if line == 0 {
			line = s.Line
		}
		return &Error{File: p.File, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if s.ID != "" && !scheduleIDPattern.MatchString(s.ID) {
		return errAt("id", "schedule.id %q must match [A-Za-z0-9][A-Za-z0-9._-]*", s.ID)
	}
	switch {
	case s.Cron == "" && s.Every == 0:
		return errAt("", "schedule needs cron or every")
	case s.Cron != "" && s.Every != 0:
		return errAt("every", "schedule has both cron and every; keep one")
	}
	if s.Cron != "" {
		if err := CheckCron(s.Cron); err != nil {
			return errAt("cron", "schedule.cron %q: %v", s.Cron, err)
		}
	}
	if s.Every != 0 && s.Every < time.Second {
		return errAt("every", "schedule.every %s is under Temporal's minimum of 1s", s.Every)
	}
	if err := CheckTimezone(s.Timezone); err != nil {
		return errAt("timezone", "schedule.timezone: %v", err)
	}
	if s.Overlap != "" && !isOverlapPolicy(s.Overlap) {
		return errAt("overlap", "schedule.overlap %q is not one of %s", s.Overlap, strings.Join(OverlapPolicies, ", "))
	}
	return p.checkScheduleWorkload()
}

// checkScheduleWorkload checks the overrides every scheduled run would
// start with, as run --set's are checked: a key the playbook does not
// declare, or a value of another type, is refused now, one line per key,
// not at each run.
func (p *Playbook) checkScheduleWorkload() error {
	s := p.Schedule
	var errs Errors
	converted := map[string]any{}
	for _, key := range sortedKeys(s.Workload) {
		v, problems := convertOverrides(p, map[string]any{key: s.Workload[key]})
		line := s.workloadLines[key]
		if line == 0 {
			line = s.lines["workload"]
		}
		for _, problem := range problems {
			errs = append(errs, &Error{File: p.File, Line: line, Msg: "schedule." + problem})
		}
		converted[key] = v[key]
	}
	if err := errs.err(); err != nil {
		return err
	}
	if len(s.Workload) > 0 {
		s.Workload = converted
	}
	return nil
}

func isOverlapPolicy(name string) bool {
	for _, p := range OverlapPolicies {
		if p == name {
			return true
		}
	}
	return false
}

// CheckTimezone accepts an IANA time zone name this machine knows, or ""
// (UTC). "Local" is refused: it would mean the server's zone, not yours.
func CheckTimezone(name string) error {
	if name == "Local" {
		return fmt.Errorf("unknown time zone %q (write an IANA name such as Europe/Berlin)", name)
	}
	if _, err := time.LoadLocation(name); err != nil {
		return fmt.Errorf("unknown time zone %q (write an IANA name such as Europe/Berlin)", name)
	}
	return nil
}

// cronShorthands are the @ forms Temporal's scheduler accepts.
var cronShorthands = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true, "@daily": true, "@midnight": true, "@hourly": true}

// cronField is one field of a cron expression: its name, range, and the
// names it also accepts (month and weekday names, by prefix of three
// letters or more).
type cronField struct {
	name     string
	min, max int
	names    []string
}

var (
	cronSecond = cronField{name: "second", max: 59}
	cronMinute = cronField{name: "minute", max: 59}
	cronHour   = cronField{name: "hour", max: 23}
	cronDom    = cronField{name: "day of month", min: 1, max: 31}
	cronMonth  = cronField{name: "month", min: 1, max: 12, names: []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}}
	// Sunday is 0 or 7, as Temporal reads it.
	cronDow  = cronField{name: "day of week", max: 7, names: []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}}
	cronYear = cronField{name: "year", min: 2000, max: 2100}
)

// CheckCron checks a cron expression the way Temporal's scheduler parses
// one: 5 fields (minute hour day-of-month month day-of-week), 6 (plus year)
// or 7 (second first, year last), or a shorthand such as @daily. Time zones
// and intervals have keys of their own (timezone, every), so CRON_TZ=,
// @every and # comments are refused here.
func CheckCron(expr string) error {
	expr = strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return fmt.Errorf("give the time zone as timezone, not in the expression")
	case strings.HasPrefix(expr, "@every"):
		return fmt.Errorf("give an interval as every, not @every")
	case strings.Contains(expr, "#"):
		return fmt.Errorf("comments (#) are not accepted")
	case strings.HasPrefix(expr, "@"):
		if !cronShorthands[expr] {
			return fmt.Errorf("unknown shorthand (use @yearly, @monthly, @weekly, @daily or @hourly)")
		}
		return nil
	}
	fields := strings.Fields(expr)
	var layout []cronField
	switch len(fields) {
	case 5:
		layout = []cronField{cronMinute, cronHour, cronDom, cronMonth, cronDow}
	case 6:
		layout = []cronField{cronMinute, cronHour, cronDom, cronMonth, cronDow, cronYear}
	case 7:
		layout = []cronField{cronSecond, cronMinute, cronHour, cronDom, cronMonth, cronDow, cronYear}
	default:
		return fmt.Errorf("has %d fields; write 5 (minute hour day-of-month month day-of-week), 6 (plus year) or 7 (second first)", len(fields))
	}
	for i, f := range layout {
		if err := f.check(fields[i]); err != nil {
			return err
		}
	}
	return nil
}

func (f cronField) check(s string) error {
	for _, part := range strings.Split(s, ",") {
		rng, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			if n, err := strconv.Atoi(step); err != nil || n < 1 {
				return fmt.Errorf("%s %q: step %q must be a whole number of at least 1", f.name, part, step)
			}
		}
		if rng == "*" {
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		start, err := f.value(lo)
		if err != nil {
			return fmt.Errorf("%s %q: %v", f.name, part, err)
		}
		if isRange {
			end, err := f.value(hi)
			if err != nil {
				return fmt.Errorf("%s %q: %v", f.name, part, err)
			}
			if end < start {
				return fmt.Errorf("%s %q: range ends before it starts", f.name, part)
			}
		}
	}
	return nil
}

func (f cronField) value(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < f.min || n > f.max {
			return 0, fmt.Errorf("%d is out of range %d-%d", n, f.min, f.max)
		}
		return n, nil
	}
	if len(s) >= 3 {
		for i, name := range f.names {
			if strings.HasPrefix(name, strings.ToLower(s)) {
				return i + f.min, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not a number in %d-%d", s, f.min, f.max)
}

// scheduleKeys are the keys of `schedule`.
func (d *decoder) scheduleKeys(s *Schedule) keys {
	at := func(key string, f func(v *yaml.Node) error) func(v *yaml.Node) error {
		return func(v *yaml.Node) error { s.lines[key] = v.Line; return f(v) }
	}
	return keys{
		"id":               {sString("The schedule's ID (default: metadata.name)."), at("id", func(v *yaml.Node) error { return d.str(v, "schedule.id", &s.ID) })},
		"cron":             {sString("A cron expression (5 to 7 fields) or a shorthand such as @daily."), at("cron", func(v *yaml.Node) error { return d.str(v, "schedule.cron", &s.Cron) })},
		"every":            {sDuration("A fixed interval, instead of cron."), at("every", func(v *yaml.Node) error { return d.duration(v, "schedule.every", &s.Every) })},
		"timezone":         {sString("The IANA time zone the cron is read in (default UTC)."), at("timezone", func(v *yaml.Node) error { return d.str(v, "schedule.timezone", &s.Timezone) })},
		"overlap":          {sEnum("What happens when a run is due while another still runs (default skip).", OverlapPolicies...), at("overlap", func(v *yaml.Node) error { return d.str(v, "schedule.overlap", &s.Overlap) })},
		"catchup_window":   {sDuration("How late a missed run may still start."), at("catchup_window", func(v *yaml.Node) error { return d.duration(v, "schedule.catchup_window", &s.CatchupWindow) })},
		"jitter":           {sDuration("Delays each run by a random amount up to it."), at("jitter", func(v *yaml.Node) error { return d.duration(v, "schedule.jitter", &s.Jitter) })},
		"pause_on_failure": {sBool("Pause the schedule when a run fails."), at("pause_on_failure", func(v *yaml.Node) error { return d.boolean(v, "schedule.pause_on_failure", &s.PauseOnFailure) })},
		"workload": {sMapping("Overrides of the playbook's workload for scheduled runs."), at("workload", func(v *yaml.Node) error {
			if v.Kind != yaml.MappingNode {
				return d.errf(v, "schedule.workload must be a mapping")
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				s.workloadLines[v.Content[i].Value] = v.Content[i].Line
			}
			w, err := d.value(v, "schedule.workload")
			if err == nil {
				s.Workload = w.(map[string]any)
			}
			return err
		})},
	}
}
