package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"playbook/internal/store"
)

// With an s3 store, the credentials it reads never reach a step, even
// when --step-env names them; a directory store reads none.
func TestStoreCredentialsNeverReachAStep(t *testing.T) {
	s3, err := store.Open(context.Background(), "s3://bucket/p?endpoint=http://127.0.0.1:1&region=us-east-1")
	require.NoError(t, err)
	o := Options{StepEnv: []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "DB_URL"}, Store: s3}
	require.Equal(t, []string{"DB_URL"}, o.stepEnv())
	require.Len(t, o.StepEnv, 4, "the options are left as they were")

	dir, err := store.Open(context.Background(), "file://"+t.TempDir())
	require.NoError(t, err)
	o.Store = dir
	require.Equal(t, o.StepEnv, o.stepEnv())
}
