package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// Delivering a person's decision to a run right after the server or the
// run's worker restarted: the query that finds the step and the Update
// that decides it cannot be answered until a worker polls again, and each
// question alone would end in a bare "context deadline exceeded". They are
// asked again, each try bounded, until deliverFor has passed.
const (
	deliverFor = 90 * time.Second
	deliverTry = 15 * time.Second
)

// Deliver runs send until it is answered, refused (invalid input, the
// run's validator, no such run) or deliverFor has passed; then it says
// what happened in words. send gets the same update ID each time, so that
// the server applies a decision sent twice once.
func Deliver[T any](ctx context.Context, run string, send func(ctx context.Context, updateID string) (T, error)) (T, error) {
	return deliverWithin(ctx, run, deliverFor, send)
}

// deliverWithin is Deliver asking until within has passed.
func deliverWithin[T any](ctx context.Context, run string, within time.Duration, send func(ctx context.Context, updateID string) (T, error)) (T, error) {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	return deliverAs(ctx, run, "decide-"+hex.EncodeToString(id), within, send)
}

// deliverAs is deliverWithin with the update ID given: one the sender
// derived from what it sends, so that the server applies it once however
// often it is sent, in this call or another.
func deliverAs[T any](ctx context.Context, run, updateID string, within time.Duration, send func(ctx context.Context, updateID string) (T, error)) (T, error) {
	var none T
	deadline := time.Now().Add(within)
	for tries := 1; ; tries++ {
		try, cancel := context.WithTimeout(ctx, deliverTry)
		answer, err := send(try, updateID)
		cancel()
		if err == nil || !worthAgain(err) || ctx.Err() != nil {
			return answer, err
		}
		if time.Now().After(deadline) {
			return none, fmt.Errorf("run %s did not answer within %s (%d tries; last: %v): its worker or the server may still be restarting, and nothing confirms the decision was applied; `playbook status %s` shows whether it was, and sending it again is safe", run, within, tries, err, run)
		}
		select {
		case <-ctx.Done():
			return none, ctx.Err()
		case <-time.After(min(time.Duration(tries)*time.Second, 5*time.Second)):
		}
	}
}

// worthAgain tells whether a failed question may be answered later: not
// a refusal (invalid input, the run's validator, a run that is not there
// or has ended).
func worthAgain(err error) bool {
	var (
		refused  *RefusedError
		ended    *EndedError
		app      *temporal.ApplicationError
		notFound *serviceerror.NotFound
		argument *serviceerror.InvalidArgument
	)
	return !errors.As(err, &refused) && !errors.As(err, &ended) && !errors.As(err, &app) && !errors.As(err, &notFound) && !errors.As(err, &argument)
}
