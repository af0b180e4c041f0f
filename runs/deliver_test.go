package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// A decision sent while the run cannot answer (its worker or the server
// restarting: each try ends in a deadline) is sent again, with the same
// update ID, until it is answered (#39); a refusal is not sent again; and
// when the bound passes the error says what happened, not a bare
// "context deadline exceeded".
func TestDeliverAsksAgainUntilAnswered(t *testing.T) {
	var ids []string
	answer, err := deliverWithin(context.Background(), "r", time.Minute, func(ctx context.Context, id string) (string, error) {
		ids = append(ids, id)
		if len(ids) < 3 {
			return "", context.DeadlineExceeded
		}
		return "approved", nil
	})
	require.NoError(t, err)
	require.Equal(t, "approved", answer)
	require.Len(t, ids, 3)
	require.Equal(t, ids[0], ids[2], "one update ID, so that the server applies the decision once")

	for _, refusal := range []error{
		&RefusedError{Run: "r", Err: errors.New("no")},
		temporal.NewApplicationError("refused by the validator", "x"),
		serviceerror.NewNotFound("no such run"),
		serviceerror.NewInvalidArgument("bad"),
	} {
		tries := 0
		_, err := deliverWithin(context.Background(), "r", time.Minute, func(context.Context, string) (string, error) {
			tries++
			return "", refusal
		})
		require.ErrorIs(t, err, refusal)
		require.Equal(t, 1, tries, "%v is not asked again", refusal)
	}

	tries := 0
	_, err = deliverWithin(context.Background(), "r", time.Second, func(context.Context, string) (string, error) {
		tries++
		return "", context.DeadlineExceeded
	})
	require.EqualError(t, err, "run r did not answer within 1s (2 tries; last: context deadline exceeded): its worker or the server may still be restarting, and nothing confirms the decision was applied; `playbook status r` shows whether it was, and sending it again is safe")
}
