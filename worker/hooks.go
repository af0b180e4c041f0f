package worker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"playbook/activities"
	"playbook/runs"
	"playbook/submit"
)

// A webhook delivery: POST /hooks/NAME with a JSON object body, signed as
// GitHub signs its deliveries.
const (
	// MaxHookBody bounds a delivery's body: a larger one is refused (413)
	// before anything reads it whole.
	MaxHookBody = 1 << 20
	// HookSignatureHeader holds "sha256=" and the hex HMAC-SHA256 of the
	// body, keyed with the hook's secret.
	HookSignatureHeader = "X-Playbook-Signature"
	// HookDeliveryHeader, when given, names the delivery: a second
	// delivery of the same ID to the same hook answers the first one's
	// run instead of starting another.
	HookDeliveryHeader = "X-Playbook-Delivery"
	// hookBodyRead bounds how long a delivery's body takes to arrive.
	hookBodyRead = 30 * time.Second
	// MaxHookWait bounds ?wait=.
	MaxHookWait = 10 * time.Minute
	// maxDeliveryID bounds a delivery ID, as an idempotency key is bounded.
	maxDeliveryID = 512
)

// HookOptions configure the endpoint's /hooks/: where the hooks' secrets
// are, and the namespace the runs start in.
type HookOptions struct {
	// Required: the namespace the worker's client speaks to.
	Namespace string
	// Optional: the worker's secrets directory; "": the default.
	SecretsDir string
	// Optional: where each delivery's outcome is logged; nil: nowhere.
	Log *slog.Logger
}

// HookAnswer is a delivery's answer, as JSON.
type HookAnswer struct {
	// RunID is the run the delivery started, or the run an earlier
	// delivery of the same ID started (Existing).
	RunID    string `json:"run_id,omitempty"`
	Existing bool   `json:"existing,omitempty"`
	// Status and Result are the run's outcome, with ?wait= ("running"
	// when the wait ended first).
	Status string `json:"status,omitempty"`
	Result any    `json:"result,omitempty"`
	// Error says why nothing was started.
	Error string `json:"error,omitempty"`
}

type hooks struct {
	HookOptions
	client client.Client
}

func (h hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	code, answer := h.deliver(r.Context(), w, r)
	if h.Log != nil {
		h.Log.Info("webhook delivery", "hook", r.PathValue("name"), "status", code, "run", answer.RunID, "existing", answer.Existing, "error", answer.Error)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(answer)
}

// deliver checks a delivery and starts its run: the HTTP status and answer.
func (h hooks) deliver(ctx context.Context, w http.ResponseWriter, r *http.Request) (int, HookAnswer) {
	refuse := func(code int, format string, args ...any) (int, HookAnswer) {
		return code, HookAnswer{Error: fmt.Sprintf(format, args...)}
	}
	name := r.PathValue("name")
	// The body is read within hookBodyRead, so that a client that
	// trickles one holds no connection long; the deadline is lifted once
	// it is read, for ?wait= answers later.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(hookBodyRead))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHookBody))
	_ = rc.SetReadDeadline(time.Time{})
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return refuse(http.StatusRequestEntityTooLarge, "the body is over %d bytes (1 MiB): nothing started", MaxHookBody)
	case err != nil:
		return refuse(http.StatusBadRequest, "the body could not be read: %v", err)
	}
	reg, err := runs.Hook(ctx, h.client, name)
	switch {
	case errors.Is(err, runs.ErrUnknownHook):
		return refuse(http.StatusNotFound, "webhook %q: %v", name, err)
	case err != nil:
		return refuse(http.StatusServiceUnavailable, "webhook %q: its registration could not be read: %v", name, err)
	}
	secret, err := activities.ReadSecret(h.SecretsDir, reg.Secret)
	if err != nil {
		return refuse(http.StatusInternalServerError, "webhook %q: %v", name, err)
	}
	if !signed(body, secret, r.Header.Get(HookSignatureHeader)) {
		return refuse(http.StatusUnauthorized, "webhook %q: %s is missing or is not the body's HMAC-SHA256 with the hook's secret (write sha256=HEX): nothing started", name, HookSignatureHeader)
	}
	delivery := r.Header.Get(HookDeliveryHeader)
	if len(delivery) > maxDeliveryID || strings.ContainsFunc(delivery, unicode.IsControl) {
		return refuse(http.StatusBadRequest, "%s must be at most %d bytes of text without control characters", HookDeliveryHeader, maxDeliveryID)
	}
	var wait time.Duration
	if text := r.URL.Query().Get("wait"); text != "" {
		if wait, err = time.ParseDuration(text); err != nil || wait <= 0 || wait > MaxHookWait {
			return refuse(http.StatusBadRequest, "?wait=%s: give a duration from 1s to %s", text, MaxHookWait)
		}
	}
	overrides, err := submit.DecodeOverrides(body, "the body")
	if err != nil {
		return refuse(http.StatusBadRequest, "webhook %q: %v: nothing started", name, err)
	}
	wr, existing, err := runs.StartFromHook(ctx, h.client, h.Namespace, reg, runs.Delivery{Hook: name, Workload: overrides, ID: delivery}, submit.CheckOverrides)
	var invalid *runs.InvalidError
	switch {
	case errors.As(err, &invalid):
		return refuse(http.StatusBadRequest, "webhook %q: %v: nothing started", name, invalid.Err)
	case err != nil:
		return refuse(http.StatusServiceUnavailable, "webhook %q: the run could not start: %v", name, err)
	}
	answer := HookAnswer{RunID: wr.GetID(), Existing: existing}
	code := http.StatusCreated
	if existing {
		code = http.StatusOK
	}
	if wait == 0 {
		return code, answer
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	agg, err := runs.Result(wctx, wr)
	var terminated *temporal.TerminatedError
	var timedOut *temporal.TimeoutError
	switch {
	case err == nil:
	case wctx.Err() != nil:
		answer.Status = "running"
		return http.StatusAccepted, answer
	case errors.As(err, &terminated):
		answer.Status, answer.Error = "terminated", err.Error()
		return code, answer
	case errors.As(err, &timedOut):
		answer.Status, answer.Error = "timed_out", err.Error()
		return code, answer
	default:
		answer.Status, answer.Error = "failed", err.Error()
		return code, answer
	}
	answer.Status, answer.Result = agg.Status, agg
	return code, answer
}

// signed tells whether header is "sha256=" and the hex HMAC-SHA256 of
// body keyed with secret, compared in constant time.
func signed(body []byte, secret, header string) bool {
	given, ok := strings.CutPrefix(header, "sha256=")
	if !ok || secret == "" {
		return false
	}
	sum, err := hex.DecodeString(given)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(sum, mac.Sum(nil))
}
