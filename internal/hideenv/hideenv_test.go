package hideenv

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The environment handed over in the memory file comes back whole: values
// holding '=' and empty ones included, the descriptor's variable gone.
func TestRestore(t *testing.T) {
	fd, err := unix.MemfdCreate("test", 0)
	require.NoError(t, err)
	_, err = unix.Write(fd, []byte("HIDEENV_A=1\x00HIDEENV_B=x=y\x00HIDEENV_C="))
	require.NoError(t, err)
	_, err = unix.Seek(fd, 0, 0)
	require.NoError(t, err)
	t.Setenv(fdVar, strconv.Itoa(fd))
	require.NoError(t, restore(strconv.Itoa(fd)))
	require.Equal(t, "1", os.Getenv("HIDEENV_A"))
	require.Equal(t, "x=y", os.Getenv("HIDEENV_B"))
	v, ok := os.LookupEnv("HIDEENV_C")
	require.True(t, ok)
	require.Empty(t, v)
	_, ok = os.LookupEnv(fdVar)
	require.False(t, ok)
	for _, k := range []string{"HIDEENV_A", "HIDEENV_B", "HIDEENV_C"} {
		_ = os.Unsetenv(k)
	}
}
