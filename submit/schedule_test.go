package submit

import (
	"testing"
	"time"

	"playbook/interpreter/spec"

	"github.com/stretchr/testify/require"
)

func TestScheduleKey(t *testing.T) {
	pb, err := spec.Parse("x.yaml", []byte(`metadata: {name: nightly}
schedule:
  cron: "0 2 * * *"
  timezone: Europe/Berlin
  overlap: buffer-one
  catchup_window: 30m
  jitter: 10s
  pause_on_failure: true
  workload: {rows: 5}
workload: {rows: 1}
workflow:
  - step: a
`))
	require.NoError(t, err)
	require.NoError(t, CheckSchedule(pb))
	s := pb.Schedule
	require.Equal(t, "0 2 * * *", s.Cron)
	require.Equal(t, "Europe/Berlin", s.Timezone)
	require.Equal(t, "buffer-one", s.Overlap)
	require.Equal(t, 30*time.Minute, s.CatchupWindow)
	require.Equal(t, 10*time.Second, s.Jitter)
	require.True(t, s.PauseOnFailure)
	require.Equal(t, map[string]any{"rows": 5}, s.Workload)
}

// Parse (which runs again when a run replays) checks only the key's shape;
// the cron, time zone and policy are checked at submission.
func TestScheduleErrors(t *testing.T) {
	cases := []struct{ schedule, want string }{
		{`{cron: "0 25 * * *"}`, `x.yaml:2: schedule.cron "0 25 * * *": hour "25": 25 is out of range 0-23`},
		{`{cron: "0 2 * *"}`, `x.yaml:2: schedule.cron "0 2 * *": has 4 fields; write 5 (minute hour day-of-month month day-of-week), 6 (plus year) or 7 (second first)`},
		{`{cron: "*/0 * * * *"}`, `x.yaml:2: schedule.cron "*/0 * * * *": minute "*/0": step "0" must be a whole number of at least 1`},
		{`{cron: "0 2 * * mondy"}`, `x.yaml:2: schedule.cron "0 2 * * mondy": day of week "mondy": "mondy" is not a number in 0-7`},
		{`{cron: "@nightly"}`, `x.yaml:2: schedule.cron "@nightly": unknown shorthand (use @yearly, @monthly, @weekly, @daily or @hourly)`},
		{`{cron: "CRON_TZ=UTC 0 2 * * *"}`, `x.yaml:2: schedule.cron "CRON_TZ=UTC 0 2 * * *": give the time zone as timezone, not in the expression`},
		{"\n  cron: \"@daily\"\n  timezone: Mars/Olympus", `x.yaml:4: schedule.timezone: unknown time zone "Mars/Olympus" (write an IANA name such as Europe/Berlin)`},
		{`{every: 500ms}`, `x.yaml:2: schedule.every 500ms is under Temporal's minimum of 1s`},
		{`{cron: "@daily", every: 1h}`, `x.yaml:2: schedule has both cron and every; keep one`},
		{`{timezone: UTC}`, `x.yaml:2: schedule needs cron or every`},
		{`{cron: "@daily", overlap: never}`, `x.yaml:2: schedule.overlap "never" is not one of skip, buffer-one, buffer-all, cancel-other, terminate-other, allow-all`},
		{`{cron: "@daily", id: "a b"}`, `x.yaml:2: schedule.id "a b" must match [A-Za-z0-9][A-Za-z0-9._-]*`},
	}
	for _, c := range cases {
		pb, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\nschedule: "+c.schedule+"\nworkflow:\n  - step: a\n"))
		require.NoError(t, err, c.schedule)
		err = CheckSchedule(pb)
		require.Error(t, err, c.schedule)
		require.Equal(t, c.want, err.Error())
	}
	_, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\nschedule: {cron: \"@daily\", cronn: x}\nworkflow:\n  - step: a\n"))
	require.EqualError(t, err, `x.yaml:2: unknown key "cronn" in schedule (known: catchup_window, cron, every, id, jitter, overlap, pause_on_failure, timezone, workload)`)

	_, err = LoadBundle("/p/x.yaml", readFrom(map[string]string{"/p/x.yaml": "metadata: {name: x}\nschedule: {cron: \"61 * * * *\"}\nworkflow:\n  - step: a\n"}))
	require.EqualError(t, err, `/p/x.yaml:2: schedule.cron "61 * * * *": minute "61": 61 is out of range 0-59`, "submission checks the schedule")
}

// schedule.workload overrides what every scheduled run starts with: like
// run --set, a key must be declared and its value of the default's type.
func TestScheduleWorkloadChecked(t *testing.T) {
	cases := []struct{ source, want string }{
		{"schedule: {cron: \"@daily\", workload: {rowz: 5}}\n", `x.yaml:2: schedule.workload key "rowz" is not declared (the playbook's workload section declares no keys)`},
		{"schedule:\n  cron: \"@daily\"\n  workload: {rowz: 5}\nworkload: {rows: 1, name: x}\n", `x.yaml:4: schedule.workload key "rowz" is not declared (declared: name, rows)`},
		{"schedule:\n  cron: \"@daily\"\n  workload:\n    rows: 2\n    on: 3\n    zz: 1\nworkload: {rows: 1, on: true}\n",
			"x.yaml:6: schedule.workload.on must be true or false (its default is true), not 3\n" + `x.yaml:7: schedule.workload key "zz" is not declared (declared: on, rows)`},
	}
	for _, c := range cases {
		pb, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\n"+c.source+"workflow:\n  - step: a\n"))
		require.NoError(t, err, c.source)
		err = CheckSchedule(pb)
		require.Error(t, err, c.source)
		require.Equal(t, c.want, err.Error())
	}
	pb, err := spec.Parse("x.yaml", []byte("metadata: {name: x}\nschedule: {cron: \"@daily\", workload: {db: {host: h}}}\nworkload: {db: {host: a, port: 5432}}\nworkflow:\n  - step: a\n"))
	require.NoError(t, err)
	require.NoError(t, CheckSchedule(pb), "a key nested under a declared mapping is accepted")
}

func TestCheckCronAccepts(t *testing.T) {
	for _, x := range []string{"0 2 * * *", "*/15 * * * *", "0 9-17/2 * * mon-fri", "0 0 1 jan,jul *", "30 0 2 * * * 2027", "0 12 * * 7", "@hourly", "0 0 1-31 * 0-6"} {
		require.NoError(t, CheckCron(x), x)
	}
}
