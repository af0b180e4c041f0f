package commands

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The elements a loop logged here are named as they are: a range only
// when they run without a gap (a retry that ran element 2 alone logged
// element 2, not "index 0 to 0").
func TestLoggedElementsAreNamedAsTheyAre(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{[]int{2}, "index 2"},
		{[]int{0, 1, 2}, "index 0 to 2"},
		{[]int{2, 5, 7}, "index 2, 5, 7"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}, "index 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, and 2 more"},
	} {
		require.Equal(t, c.want, indexList(c.in))
	}
}
