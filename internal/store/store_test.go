package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
	"playbook/internal/store/storetest"
)

func TestStoreContract(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		storetest.Contract(t, func(t *testing.T) store.Store {
			s, err := store.Open(context.Background(), "file://"+t.TempDir())
			require.NoError(t, err)
			return s
		})
	})
	t.Run("s3", func(t *testing.T) {
		raw := os.Getenv(storetest.S3Var)
		if raw == "" {
			t.Skipf("no S3-compatible server: %s is not set (make test-cluster starts VersityGW and sets it)", storetest.S3Var)
		}
		storetest.Contract(t, OpenUnder(raw))
	})
}

// OpenUnder opens raw with each case under a prefix of its own, so that
// cases and runs never meet in the bucket.
func OpenUnder(raw string) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		base, query, _ := strings.Cut(raw, "?")
		s, err := store.Open(context.Background(), fmt.Sprintf("%s/t%d?%s", strings.TrimSuffix(base, "/"), time.Now().UnixNano(), query))
		require.NoError(t, err)
		return s
	}
}

func TestOpenRefusesWhatItCannotUse(t *testing.T) {
	for _, raw := range []string{"", "dir", "file://relative/dir", "file:///d?x=1", "s3://", "s3://b/p?bogus=1", "gs://b"} {
		_, err := store.Open(context.Background(), raw)
		require.Error(t, err, raw)
	}
}
