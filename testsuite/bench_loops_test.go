package testsuite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"
)

// BenchmarkHugeLoops runs a loop of 100,000 elements, of noop and of
// `shell true`, 200 in flight, each on a `playbook worker` of its own, and
// prints the wall time, that worker's peak RSS and the size of the parent
// run's history (the loop's driver keeps the elements' events in its own).
// Minutes on two cores.
func BenchmarkHugeLoops(b *testing.B) {
	const n, inFlight = 100_000, 200
	for range b.N {
		for _, loop := range []struct{ name, tool string }{
			{"noop", `{kind: noop, result: "{{ item }}"}`},
			{"shell true", shellTrue},
		} {
			r, rss, parent := hugeLoop(b, loopSource(n, inFlight, loop.tool))
			fmt.Printf("%-26s %7.1f s wall, %.2f ms/element | worker %4.0f MiB peak RSS | parent history %6.1f KiB, %d events\n",
				fmt.Sprintf("loop 100000 %s:", loop.name), r.wall.Seconds(), ms(r.wall)/n, rss, float64(parent)/1024, r.events)
		}
	}
}

// hugeLoop runs a loop on its own worker and returns the parent run, the
// worker's peak RSS in MiB and the parent history's size in bytes.
func hugeLoop(b *testing.B, source string) (benchRun, float64, int) {
	start := time.Now()
	r, rss := loopOnOwnWorker(b, source)
	require.Less(b, time.Since(start), 30*time.Minute)
	return r, rss, historyBytes(b, r.id)
}

// historyBytes is the encoded size of a run's whole history.
func historyBytes(b *testing.B, id string) int {
	it := tc.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(b, err)
		n += proto.Size(e)
	}
	return n
}
