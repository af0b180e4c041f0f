package expr

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Zones come from the embedded database; the worker's own zone is refused
// when an expression is evaluated, and a date without a zone is UTC.
func TestZonesComeFromTheEmbeddedDatabase(t *testing.T) {
	env := map[string]any{"workload": map[string]any{"tz": "Local", "empty": "", "paris": "Europe/Paris"}}
	for _, c := range []struct{ src, want, err string }{
		{`timezone("Europe/Paris").String()`, "Europe/Paris", ""},
		{`date("2026-07-01 12:00", "2006-01-02 15:04", "America/New_York").UTC().Hour()`, "", ""},
		{`date("2026-07-01 12:00", "2006-01-02 15:04", workload.paris).Format("2006-01-02T15:04:05Z07:00 MST")`, "2026-07-01T12:00:00+02:00 CEST", ""},
		{`date(timezone("Asia/Tokyo"), "2026-07-01").Format("15:04 MST")`, "00:00 JST", ""},
		{`date("2026-07-01 12:00:00").Location().String()`, "UTC", ""},
		{`date("2026-07-01", "2006-01-02", "UTC").In(timezone("Asia/Kolkata")).Format("15:04")`, "05:30", ""},
		{`timezone(workload.tz).String()`, "", `time zone "Local" is the zone of whichever worker evaluates it: name one, such as "UTC" or "Europe/Paris"`},
		{`date("2026-07-01", "2006-01-02", workload.empty).Day()`, "", `time zone "" is the zone of whichever worker evaluates it: name one, such as "UTC" or "Europe/Paris"`},
		{`date("2026-07-01").Local().Hour()`, "", `.Local() is the zone of whichever worker evaluates it: use .UTC(), or .In(timezone("Europe/Paris"))`},
		{`timezone("Mars/Olympus").String()`, "", "unknown time zone Mars/Olympus"},
	} {
		e, err := CompileExpr(c.src, ScopeStep, false)
		require.NoError(t, err, c.src)
		v, err := e.Eval(env)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.src)
			continue
		}
		require.NoError(t, err, c.src)
		if c.want != "" {
			require.Equal(t, c.want, v, c.src)
		}
	}
	// The offset of a date that names none is kept as an offset: no host
	// zone is matched to it (time.Parse would name it after the local zone).
	e, err := CompileExpr(`date("2026-07-01T12:00:00+02:00").Format("-07:00 MST")`, ScopeStep, false)
	require.NoError(t, err)
	v, err := e.Eval(env)
	require.NoError(t, err)
	require.Equal(t, "+02:00 +0200", v)
}

// A run from before embedded zones looks them up on the host, as it did:
// "Local" is then accepted.
func TestZonesOnTheHostForOldRuns(t *testing.T) {
	e, err := CompileExpr(`timezone("Local").String()`, ScopeStep, false)
	require.NoError(t, err)
	asked := 0
	e.LookUpZonesOnHost(func() bool { asked++; return true })
	v, err := e.Eval(nil)
	require.NoError(t, err)
	require.Equal(t, "Local", v)
	require.Equal(t, 1, asked)
	local, err := CompileExpr(`date("2026-07-01").Local().Year()`, ScopeStep, false)
	require.NoError(t, err)
	local.LookUpZonesOnHost(func() bool { return true })
	v, err = local.Eval(nil)
	require.NoError(t, err)
	require.Equal(t, 2026, v)

	// An expression that reads no zone never asks.
	plain, err := CompileExpr(`1 + 1`, ScopeStep, false)
	require.NoError(t, err)
	plain.LookUpZonesOnHost(func() bool { t.Fatal("asked"); return true })
	_, err = plain.Eval(nil)
	require.NoError(t, err)
}

// zoneProbes are evaluated by a test binary run with different tz
// databases (TestZonesDoNotDependOnTheHost).
var zoneProbes = []string{
	`date("2026-07-01 12:00", "2006-01-02 15:04", "Europe/Paris").Unix()`,
	`date("2026-07-01 12:00", "2006-01-02 15:04", "Europe/Paris").Format("15:04 MST")`,
	`date("2026-07-01T12:00:00Z").In(timezone("Europe/Paris")).Hour() == 14`,
}

// TestZoneProbe prints each probe's value when PLAYBOOK_ZONE_PROBE says
// how (embedded, host): the process's tz database is the one under test.
func TestZoneProbe(t *testing.T) {
	mode := os.Getenv("PLAYBOOK_ZONE_PROBE")
	if mode == "" {
		t.Skip("run by TestZonesDoNotDependOnTheHost")
	}
	for _, src := range zoneProbes {
		e, err := CompileExpr(src, ScopeStep, false)
		require.NoError(t, err)
		e.LookUpZonesOnHost(func() bool { return mode == "host" })
		v, err := e.Eval(nil)
		fmt.Printf("probe %v %v\n", v, err)
	}
}

// Two workers, one with a tz database whose Europe/Paris is Tokyo's zone
// ($ZONEINFO), one with the system's: the same expressions give the same
// values, from the embedded database. Looking zones up on the host, as
// runs before embedded zones do, gives different ones: the test can fail.
func TestZonesDoNotDependOnTheHost(t *testing.T) {
	data, err := zoneData()
	require.NoError(t, err)
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	for name, tzif := range data {
		if name == "Europe/Paris" {
			tzif = data["Asia/Tokyo"]
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		require.NoError(t, err)
		_, err = w.Write([]byte(tzif))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	odd := filepath.Join(t.TempDir(), "zoneinfo.zip")
	require.NoError(t, os.WriteFile(odd, z.Bytes(), 0o644))

	probe := func(mode string, env ...string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestZoneProbe$", "-test.count=1")
		cmd.Env = append(os.Environ(), append(env, "PLAYBOOK_ZONE_PROBE="+mode)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "probe ") {
				lines = append(lines, l)
			}
		}
		require.Len(t, lines, len(zoneProbes), string(out))
		return strings.Join(lines, "\n")
	}
	system := probe("embedded", "ZONEINFO=", "TZ=UTC")
	require.Equal(t, "probe 1782900000 <nil>\nprobe 12:00 CEST <nil>\nprobe true <nil>", system)
	require.Equal(t, system, probe("embedded", "ZONEINFO="+odd, "TZ=Asia/Tokyo"))
	require.NotEqual(t, probe("host", "ZONEINFO=", "TZ=UTC"), probe("host", "ZONEINFO="+odd, "TZ=Asia/Tokyo"),
		"expr-lang's own lookups read $ZONEINFO")
}
