package submit

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	schedulepb "go.temporal.io/api/schedule/v1"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/service/worker/scheduler"
)

// CheckCron accepts exactly the cron expressions Temporal's own scheduler
// accepts (the server's parser, at go.mod's version), apart from the forms
// it refuses on purpose because the playbook has a key of its own for
// them: a time zone in the expression (timezone:), @every (every:) and #
// comments. Both read a few hand-picked expressions and 20,000 generated
// ones; any other disagreement fails.
func TestCheckCronAgreesWithTheServer(t *testing.T) {
	builder := scheduler.NewSpecBuilder(dynamicconfig.GetIntPropertyFn(1000), dynamicconfig.GetIntPropertyFn(100000))
	server := func(c string) error {
		_, err := builder.NewCompiledSpec(&schedulepb.ScheduleSpec{CronString: []string{c}})
		return err
	}
	onPurpose := func(c string) bool {
		c = strings.TrimSpace(c)
		return strings.HasPrefix(c, "TZ=") || strings.HasPrefix(c, "CRON_TZ=") || strings.HasPrefix(c, "@every") || strings.Contains(c, "#")
	}
	cases := []string{
		"0 6 * * mo-fr", "0 6 * * MO,WE,FR", "0 6 * * m", "0 6 * * mon-sun", "0 6 * * su-sa", "0 6 * * sa-7",
		"0 0 1 ja *", "0 0 1 jan-dec *", "0 0 1 JANUARY *", "0 0 1 jun-may *",
		"*/15 * * * *", "5/15 * * * *", "3/5/7 * * * *", "5/ * * * *", "1-5-7 * * * *", "-5 * * * *", "1,,2 * * * *",
		"0 0 31 2 *", "0 0 0 * *", "60 * * * *", "0 24 * * *", "0 0 * 13 *", "0 0 * * 8", "0 0 * * 7",
		"0 0 * * * 2100", "0 0 * * * 2101", "0 0 * * * 1999", "0 0 0 * * * *", "59 59 23 31 12 6 2100",
		"@daily", "@weekly", "@midnight", "@reboot", "@hourly ", "  0 6 * * *  ",
		"0 6 * *", "0 6 * * * * * *", "", "+5 * * * *", "05 * * * *", "0x5 * * * *", "1.5 * * * *",
		"CRON_TZ=UTC 0 6 * * *", "@every 1h", "0 6 * * * # daily",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	odd := []string{"*", "0", "7", "13", "24", "31", "32", "60", "2000", "2100", "2101",
		"mo", "mon", "monday", "m", "t", "tu", "su", "sa", "th", "ja", "jan", "janu", "dec", "de", "x", "", "-1", "+3"}
	// Mostly a value in the field's range (or a name it knows), sometimes
	// anything at all.
	ranges := [][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}, {2000, 2100}}
	names := [][]string{nil, nil, nil, {"jan", "feb", "mar", "JUNE", "de", "sep"}, {"mo", "TU", "wed", "thursday", "fr", "sa", "su", "s"}, nil}
	value := func(f int) string {
		r := ranges[f]
		switch n := rng.IntN(10); {
		case n == 0:
			return odd[rng.IntN(len(odd))]
		case n < 3 && names[f] != nil:
			return names[f][rng.IntN(len(names[f]))]
		}
		return strconv.Itoa(r[0] + rng.IntN(r[1]-r[0]+1))
	}
	part := func(f int) string {
		if rng.IntN(5) == 0 {
			return "*"
		}
		p := value(f)
		if rng.IntN(3) == 0 {
			p += "-" + value(f)
		}
		if rng.IntN(4) == 0 {
			p += "/" + strconv.Itoa(rng.IntN(5)-1)
		}
		return p
	}
	for range 20000 {
		layout := []int{0, 1, 2, 3, 4}
		switch rng.IntN(6) {
		case 0:
			layout = append(layout, 5)
		case 1:
			layout = []int{0, 0, 1, 2, 3, 4, 5}
		case 2:
			layout = layout[:4+rng.IntN(2)*4/4]
		}
		fields := make([]string, len(layout))
		for i, f := range layout {
			parts := make([]string, 1+rng.IntN(2))
			for j := range parts {
				parts[j] = part(f)
			}
			fields[i] = strings.Join(parts, ",")
		}
		cases = append(cases, strings.Join(fields, " "))
	}
	accepted := 0
	for _, c := range cases {
		if onPurpose(c) {
			require.Error(t, CheckCron(c), "%q is refused on purpose", c)
			continue
		}
		ours, theirs := CheckCron(c), server(c)
		require.Equal(t, theirs == nil, ours == nil, "%q: ours says %v, the server says %v", c, ours, theirs)
		if ours == nil {
			accepted++
		}
	}
	t.Logf("%d of %d accepted", accepted, len(cases))
	require.Greater(t, accepted, 1000, "the generated expressions must exercise acceptance too")
}
