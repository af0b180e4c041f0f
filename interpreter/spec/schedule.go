package spec

import (
	"regexp"
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

var ScheduleIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// schedule decodes the `schedule:` mapping. Only its shape is checked here:
// the cron, time zone and policy are checked at submission (CheckSchedule),
// never when a run re-parses its frozen playbook.
func (d *decoder) schedule(n *yaml.Node) (*Schedule, error) {
	s := &Schedule{Line: n.Line, lines: map[string]int{}, workloadLines: map[string]int{}}
	err := d.fields(n, "schedule", d.scheduleKeys(s))
	return s, err
}

// KeyLine is the line of the schedule's key, 0 when it has none.
func (s *Schedule) KeyLine(key string) int { return s.lines[key] }

// WorkloadLine is the line of a key of the schedule's workload, 0 when it
// has none.
func (s *Schedule) WorkloadLine(key string) int { return s.workloadLines[key] }

func (d *decoder) scheduleKeys(s *Schedule) keys {
	at := func(key string, f func(v *yaml.Node) error) func(v *yaml.Node) error {
		return func(v *yaml.Node) error { s.lines[key] = v.Line; return f(v) }
	}
	return keys{
		"id":       {sString("The schedule's ID (default: metadata.name)."), at("id", func(v *yaml.Node) error { return d.str(v, "schedule.id", &s.ID) })},
		"cron":     {sString("A cron expression (5 to 7 fields) or a shorthand such as @daily."), at("cron", func(v *yaml.Node) error { return d.str(v, "schedule.cron", &s.Cron) })},
		"every":    {sDuration("A fixed interval, instead of cron."), at("every", func(v *yaml.Node) error { return d.duration(v, "schedule.every", &s.Every) })},
		"timezone": {sString("The IANA time zone the cron is read in (default UTC)."), at("timezone", func(v *yaml.Node) error { return d.str(v, "schedule.timezone", &s.Timezone) })},
		"overlap":  {sEnum("What happens when a run is due while another still runs (default skip).", OverlapPolicies...), at("overlap", func(v *yaml.Node) error { return d.str(v, "schedule.overlap", &s.Overlap) })},
		"catchup_window": {sDuration("How late a missed run may still start."), at("catchup_window", func(v *yaml.Node) error {
			if err := d.duration(v, "schedule.catchup_window", &s.CatchupWindow); err != nil {
				return err
			}
			if s.CatchupWindow == 0 {
				d.refuse(v, "schedule.catchup_window must be more than 0: leave it out for the default")
			}
			return nil
		})},
		"jitter":           {sDuration("Delays each run by a random amount up to it."), at("jitter", func(v *yaml.Node) error { return d.duration(v, "schedule.jitter", &s.Jitter) })},
		"pause_on_failure": {sBool("Pause the schedule when a run fails."), at("pause_on_failure", func(v *yaml.Node) error { return d.boolean(v, "schedule.pause_on_failure", &s.PauseOnFailure) })},
		"workload": {sMapping("Overrides of the playbook's workload for scheduled runs."), at("workload", func(v *yaml.Node) error {
			if v.Kind != yaml.MappingNode {
				return d.errf(v, "schedule.workload must be a mapping")
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				s.workloadLines[v.Content[i].Value] = v.Content[i].Line
			}
			d.refuseTemplates(v, "schedule.workload", "every scheduled run gets it as written")
			w, err := d.value(v, "schedule.workload")
			if err == nil {
				s.Workload = w.(map[string]any)
			}
			return err
		})},
	}
}
