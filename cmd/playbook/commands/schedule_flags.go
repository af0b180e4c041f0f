package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"playbook/runs"
	"playbook/submit"
)

// scheduleFlags are the flags that say when and how runs start, shared by
// create and update. Only those given change a schedule.
type scheduleFlags struct {
	cron, timezone, overlap, input string
	every, catchupWindow, jitter   time.Duration
	pauseOnFailure                 bool
	sets                           []string
	set                            *pflag.FlagSet
}

func (f *scheduleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cron, "cron", "", "start runs at the times of a cron `EXPR` (5 fields: minute hour day-of-month month day-of-week; or @daily, @hourly, ...)")
	fs.DurationVar(&f.every, "every", 0, "start a run every `DURATION` (at least 1s), instead of --cron")
	fs.StringVar(&f.timezone, "timezone", "", "read --cron in this IANA time `ZONE` (default UTC)")
	fs.StringVar(&f.overlap, "overlap", runs.DefaultOverlap, "`POLICY` when a run is due while one still runs: skip, buffer-one, buffer-all, cancel-other, terminate-other, allow-all")
	fs.DurationVar(&f.catchupWindow, "catchup-window", runs.DefaultCatchupWindow, "after an outage, start missed runs at most this `LATE`")
	fs.BoolVar(&f.pauseOnFailure, "pause-on-failure", false, "pause the schedule when a run fails")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each run by a random amount up to `DURATION`")
	fs.StringArrayVar(&f.sets, "set", nil, "override a workload value for every run: `KEY=VALUE` (as in run; repeatable)")
	fs.StringVar(&f.input, "input", "", "read workload overrides for every run from a JSON object `FILE`")
	f.set = fs
}

// given says whether the flag name was on the command line.
func (f *scheduleFlags) given(name string) bool { return f.set.Changed(name) }

// setsWhen says whether the flags say when runs start.
func (f *scheduleFlags) setsWhen() bool { return f.given("cron") || f.given("every") }

// applyFlags puts the flags the user gave over w and checks the result.
// Its errors are invalid input (exit 2).
func applyFlags(w *runs.Schedule, f *scheduleFlags) error {
	if f.given("cron") && f.given("every") {
		return errors.New("give --cron or --every, not both")
	}
	if f.given("cron") {
		w.Cron, w.Every = f.cron, 0
		if err := submit.CheckCron(w.Cron); err != nil {
			return fmt.Errorf("--cron %q: %v", w.Cron, err)
		}
	}
	if f.given("every") {
		w.Every, w.Cron = f.every, ""
	}
	if f.given("timezone") {
		w.Timezone = f.timezone
		if err := submit.CheckTimezone(w.Timezone); err != nil {
			return fmt.Errorf("--timezone: %v", err)
		}
	}
	if f.given("overlap") {
		w.Overlap = f.overlap
		if _, err := runs.OverlapPolicy(w.Overlap); err != nil {
			return fmt.Errorf("--overlap: %v", err)
		}
	}
	if f.given("catchup-window") {
		w.CatchupWindow = f.catchupWindow
	}
	if f.given("pause-on-failure") {
		w.PauseOnFailure = f.pauseOnFailure
	}
	if f.given("jitter") {
		if f.jitter < 0 {
			return fmt.Errorf("--jitter %s: give a duration of 0 or more", f.jitter)
		}
		w.Jitter = f.jitter
	}
	if f.given("set") || f.given("input") {
		overrides, err := submit.ReadOverrides(f.input, f.sets)
		if err != nil {
			return err
		}
		// What this command sets is checked; keys the schedule already has
		// stay as they are (nil: a frozen playbook this version cannot parse).
		if w.Playbook == nil {
			overrides = submit.PlainOverrides(overrides)
		} else if overrides, err = submit.CheckOverrides(w.Playbook, overrides); err != nil {
			return err
		}
		// On top of the overrides the schedule has (its playbook's
		// schedule.workload, or an earlier --set).
		merged := map[string]any{}
		for k, v := range w.Input.Workload {
			merged[k] = v
		}
		for k, v := range overrides {
			merged[k] = v
		}
		w.Input.Workload = merged
	}
	switch {
	case w.Cron == "" && w.Every == 0:
		return errors.New("say when runs start: --cron EXPR or --every DURATION (or a schedule: key in the playbook)")
	case w.Every != 0 && w.Every < time.Second:
		return fmt.Errorf("--every %s is under Temporal's minimum of 1s", w.Every)
	case w.CatchupWindow < 10*time.Second:
		return fmt.Errorf("--catchup-window %s is under Temporal's minimum of 10s", w.CatchupWindow)
	}
	return nil
}
