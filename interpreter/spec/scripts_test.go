package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A retry reruns a step whose script changed, never one whose output
// changed: what counts is what the command runs.
func TestScriptsRunCountsWhatRunsNotWhatIsWritten(t *testing.T) {
	for cmd, want := range map[string][]string{
		"./run.sh":                                  {"./run.sh"},
		"python3 scripts/t.py --rows 3":             {"scripts/t.py"},
		"python x.py":                               {"x.py"},
		"bash -x s.sh arg/with/slash":               {"s.sh"},
		". ./env.sh && ./load.sh > out/load.log":    {"./env.sh", "./load.sh"},
		"MODE=fast nohup ./bin/job 2>&1 | tee a/b":  {"./bin/job"},
		"/usr/bin/env python3 tools/x.py":           {"tools/x.py"},
		"cd work; ./go.sh >>/data/marks":            {"./go.sh"},
		"echo first >> /data/marks":                 nil,
		"echo first>/data/marks":                    nil,
		"cat /data/in.csv > /data/out.csv":          nil,
		"python3 -c 'import x; print(1)' a/b":       nil,
		"python3 -m pkg.mod data/in":                nil,
		"sort < /data/in > /data/out":               nil,
		"mkdir -p out/dir && tar czf out/x.tgz in/": nil,
		"./{{ workload.script }}":                   nil,
		`"$D/run.sh"`:                               nil,
		"curl https://x.y/z":                        nil,
		"(./a.sh) &> logs/a.log":                    {"./a.sh"},
		"sh 'my dir/s.sh'":                          {"my dir/s.sh"},
	} {
		require.Equal(t, want, ScriptsRun(cmd), cmd)
	}
}
