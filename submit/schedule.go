package submit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"playbook/interpreter/spec"
)

// CheckSchedule checks the playbook's `schedule:` key, if it has one: an ID
// Temporal accepts, exactly one of cron and every, a cron expression
// Temporal's scheduler parses, a time zone this machine knows, a known
// overlap policy, workload overrides the playbook declares. Submission
// runs it (LoadBundle), not the workflow.
func CheckSchedule(p *spec.Playbook) error {
	s := p.Schedule
	if s == nil {
		return nil
	}
	// Every problem of the schedule is reported, one line each.
	var errs spec.Errors
	errAt := func(key, format string, args ...any) {
		line := s.KeyLine(key)
		if line == 0 {
			line = s.Line
		}
		errs = append(errs, &spec.Error{File: p.File, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	if s.ID != "" && !spec.ScheduleIDPattern.MatchString(s.ID) {
		errAt("id", "schedule.id %q must match [A-Za-z0-9][A-Za-z0-9._-]*", s.ID)
	}
	switch {
	case s.Cron == "" && s.Every == 0:
		errAt("", "schedule needs cron or every")
	case s.Cron != "" && s.Every != 0:
		errAt("every", "schedule has both cron and every; keep one")
	}
	if s.Cron != "" {
		if err := CheckCron(s.Cron); err != nil {
			errAt("cron", "schedule.cron %q: %v", s.Cron, err)
		}
	}
	if s.Every != 0 && s.Every < time.Second {
		errAt("every", "schedule.every %s is under Temporal's minimum of 1s", s.Every)
	}
	if err := CheckTimezone(s.Timezone); err != nil {
		errAt("timezone", "schedule.timezone: %v", err)
	}
	if s.Overlap != "" && !isOverlapPolicy(s.Overlap) {
		errAt("overlap", "schedule.overlap %q is not one of %s", s.Overlap, strings.Join(spec.OverlapPolicies, ", "))
	}
	return errs.Add(p.File, checkScheduleWorkload(p)).Err()
}

// checkScheduleWorkload checks the overrides every scheduled run would
// start with, as run --set's are checked: a key the playbook does not
// declare, or a value of another type, is refused now, one line per key,
// not at each run.
func checkScheduleWorkload(p *spec.Playbook) error {
	s := p.Schedule
	var errs spec.Errors
	converted := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(s.Workload)) {
		v, problems := convertOverrides(p, map[string]any{key: s.Workload[key]})
		line := s.WorkloadLine(key)
		if line == 0 {
			line = s.KeyLine("workload")
		}
		for _, problem := range problems {
			errs = append(errs, &spec.Error{File: p.File, Line: line, Msg: "schedule." + problem})
		}
		converted[key] = v[key]
	}
	if err := errs.Err(); err != nil {
		return err
	}
	if len(s.Workload) > 0 {
		s.Workload = converted
	}
	return nil
}

func isOverlapPolicy(name string) bool {
	for _, p := range spec.OverlapPolicies {
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
// names it also accepts (month and weekday names, by a prefix).
type cronField struct {
	name     string
	min, max int
	names    []string
	// prefix is the fewest letters of a name that stand for it: three
	// for a month, two for a weekday (`mo`, `tu`), as Temporal reads them.
	prefix int
}

var (
	cronSecond = cronField{name: "second", max: 59}
	cronMinute = cronField{name: "minute", max: 59}
	cronHour   = cronField{name: "hour", max: 23}
	cronDom    = cronField{name: "day of month", min: 1, max: 31}
	cronMonth  = cronField{name: "month", min: 1, max: 12, prefix: 3, names: []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}}
	// Sunday is 0 or 7, as Temporal reads it.
	cronDow  = cronField{name: "day of week", max: 7, prefix: 2, names: []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}}
	cronYear = cronField{name: "year", min: 2000, max: 2100}
)

// CheckCron checks a cron expression the way Temporal's scheduler parses
// one: 5 fields (minute hour day-of-month month day-of-week), 6 (plus year)
// or 7 (second first, year last), or a shorthand such as @daily. Time zones
// and intervals have keys of their own (timezone, every), so CRON_TZ=,
// @every and # comments are refused here.
func CheckCron(x string) error {
	x = strings.TrimSpace(x)
	switch {
	case strings.HasPrefix(x, "TZ=") || strings.HasPrefix(x, "CRON_TZ="):
		return fmt.Errorf("give the time zone as timezone, not in the expression")
	case strings.HasPrefix(x, "@every"):
		return fmt.Errorf("give an interval as every, not @every")
	case strings.Contains(x, "#"):
		return fmt.Errorf("comments (#) are not accepted")
	case strings.HasPrefix(x, "@"):
		if !cronShorthands[x] {
			return fmt.Errorf("unknown shorthand (use @yearly, @monthly, @weekly, @daily or @hourly)")
		}
		return nil
	}
	fields := strings.Fields(x)
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
	if len(s) >= f.prefix {
		for i, name := range f.names {
			if strings.HasPrefix(name, strings.ToLower(s)) {
				return i + f.min, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not a number in %d-%d", s, f.min, f.max)
}

// scheduleKeys are the keys of `schedule`.
