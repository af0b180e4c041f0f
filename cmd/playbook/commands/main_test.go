package commands

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const hello = "../../../playbooks/hello.yaml"

// nowhere is an address no Temporal listens on: a command that gets as far
// as connecting exits 4.
const nowhere = "127.0.0.1:1"

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("TEMPORAL_CONFIG_FILE", t.TempDir()+"/none.toml")
	var out, errOut bytes.Buffer
	code = Main(context.Background(), append([]string{"playbook"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Usage errors exit 2 with one line naming the command; help exits 0.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"nosuch"}, 2, "playbook: no command \"nosuch\" (see `playbook --help`)\n"},
		{[]string{"schedule", "nosuch"}, 2, "schedule: no command \"nosuch\" (see `playbook schedule --help`)\n"},
		{[]string{"status"}, 2, "status: give the RUN (workflow ID)\n"},
		{[]string{"status", "a", "b"}, 2, "status: give the RUN (workflow ID)\n"},
		{[]string{"list", "x"}, 2, "list: takes no arguments (flags only)\n"},
		{[]string{"validate", hello, "--bogus"}, 2, "validate: unknown flag: --bogus (see `playbook validate --help`)\n"},
		{[]string{"list", "--limit", "x"}, 2, "list: invalid argument \"x\" for \"--limit\" flag: strconv.ParseInt: parsing \"x\": invalid syntax (see `playbook list --help`)\n"},
		{[]string{"list", "--limit", "-5"}, 2, "list: --limit -5: give a number of runs, 1 or more (0: all of them)\n"},
		{[]string{"list", "--status", "lost"}, 2, "list: --status \"lost\" is not a run status (running, waiting, queued, completed, completed_with_warnings, failed, cancelled, terminated, timed_out)\n"},
		// Refused before anything is sent: no server is asked (exit 2, not 4).
		{[]string{"classify", "--address", nowhere, "run-1", "step", "retyr"}, 2, "classify: \"retyr\" is not an action: give retry, fail or skip\n"},
		{[]string{"schedule", "backfill", "s", "--from", "yesterday", "--to", "2026-01-01T00:00:00Z"}, 2,
			"schedule backfill: invalid argument \"yesterday\" for \"--from\" flag: give RFC 3339, e.g. 2026-03-01T00:00:00Z, or a date, 2026-03-01 (midnight UTC) (see `playbook schedule backfill --help`)\n"},
		{[]string{"list", "--grpc-compression", "brotli"}, 2, "list: --grpc-compression \"brotli\": give auto, gzip or none\n"},
		// The commands that do not talk to Temporal take no connection flags.
		{[]string{"validate", "--address", nowhere, hello}, 2, "validate: unknown flag: --address (see `playbook validate --help`)\n"},
		{[]string{"codec-server", "--profile", "p"}, 2, "codec-server: unknown flag: --profile (see `playbook codec-server --help`)\n"},
		{[]string{"--help"}, 0, ""},
		{[]string{"schedule"}, 0, ""},
		{[]string{"run", "--help"}, 0, ""},
		{[]string{"help", "status"}, 0, ""},
	} {
		code, _, errOut := cli(t, c.args...)
		require.Equal(t, c.code, code, "%v: %s", c.args, errOut)
		require.Equal(t, c.err, errOut, c.args)
	}
}

// A command's help lists its own flags, and the connection flags only when
// it talks to Temporal.
func TestHelp(t *testing.T) {
	_, out, _ := cli(t, "status", "--help")
	require.Contains(t, out, "Usage:\n  playbook status RUN [flags]\n")
	require.Contains(t, out, "--json")
	require.Contains(t, out, "Temporal connection flags:\n      --address string")
	_, out, _ = cli(t, "validate", "--help")
	require.NotContains(t, out, "--address")
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		code, out, _ := cli(t, args...)
		require.Equal(t, 0, code)
		require.True(t, strings.HasPrefix(out, "playbook "), out)
		require.Contains(t, out, "\nworkflow changes ")
	}
}

// Flags go before or after the arguments; after `--` everything is an
// argument.
func TestFlagsAnywhere(t *testing.T) {
	code, out, _ := cli(t, "validate", hello, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Usage:")
	code, out, _ = cli(t, "validate", "--", hello)
	require.Equal(t, 0, code)
	require.Equal(t, hello+": ok (hello, 3 steps)\n", out)
	code, _, errOut := cli(t, "validate", "--", "--help")
	require.Equal(t, 2, code)
	require.Equal(t, "--help: cannot read: no such file or directory\n", errOut)
	code, _, errOut = cli(t, "status", "run-1", "--address", nowhere, "--json")
	require.Equal(t, 4, code, errOut)
	require.True(t, strings.HasPrefix(errOut, "status: cannot reach Temporal at "+nowhere+": "), errOut)
}

// A --set value is never split on commas: split, "b=c" would be a workload
// key hello does not declare (exit 2); whole, the command gets as far as
// connecting (exit 4).
func TestSetKeepsCommas(t *testing.T) {
	code, _, errOut := cli(t, "run", hello, "--set", "who=Smith, b=c", "--address", nowhere)
	require.Equal(t, 4, code, errOut)
	code, _, errOut = cli(t, "schedule", "create", hello, "--every", "1h", "--set", "who=Smith, b=c", "--address", nowhere)
	require.Equal(t, 4, code, errOut)
	code, _, errOut = cli(t, "run", hello, "--set", "who=x", "--set", "b=c", "--address", nowhere)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `workload key "b" is not declared`)
}

// --detach=false is --detach's default, written out.
func TestBooleanFlagValue(t *testing.T) {
	code, _, errOut := cli(t, "run", hello, "--detach=false", "--address", nowhere)
	require.Equal(t, 4, code, errOut)
	code, _, errOut = cli(t, "run", hello, "--detach=maybe")
	require.Equal(t, 2, code, errOut)
}
