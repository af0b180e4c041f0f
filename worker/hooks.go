package worker

import (
	"bytes"
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
	"playbook/interpreter/contract"
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

// HookAnswer is a delivery's answer, or an event's, as JSON.
type HookAnswer struct {
	// RunID is the run the delivery started, or the run an earlier
	// delivery of the same ID started (Existing), or the run an event was
	// sent to.
	RunID    string `json:"run_id,omitempty"`
	Existing bool   `json:"existing,omitempty"`
	// Status and Result are the run's outcome, with ?wait= ("running"
	// when the wait ended first).
	Status string `json:"status,omitempty"`
	Result any    `json:"result,omitempty"`
	// Event is the event sent, and Received the run's answer: which of
	// its steps received it.
	Event    string `json:"event,omitempty"`
	Received string `json:"received,omitempty"`
	// Error says why nothing was started or sent.
	Error string `json:"error,omitempty"`
}

type hooks struct {
	HookOptions
	client client.Client
}

// routes serves a webhook's deliveries (POST /hooks/NAME starts a run)
// and its events (POST /hooks/NAME/runs/RUN/events/EVENT sends one to a
// run of the hook's playbook), both signed with the hook's secret.
func (h hooks) routes(mux *http.ServeMux) {
	mux.Handle("POST /hooks/{name}", h.answer("webhook delivery", h.deliver))
	mux.Handle("POST /hooks/{name}/runs/{run}/events/{event}", h.answer("webhook event", h.sendEvent))
}

// answer writes what serve answers as JSON, and logs it as what.
func (h hooks) answer(what string, serve func(context.Context, http.ResponseWriter, *http.Request) (int, HookAnswer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, answer := serve(r.Context(), w, r)
		if h.Log != nil {
			attrs := []any{"hook", r.PathValue("name"), "status", code}
			if event := r.PathValue("event"); event != "" {
				// An event's run is named by its path, refused or not.
				attrs = append(attrs, "run", r.PathValue("run"), "event", event)
			} else {
				attrs = append(attrs, "run", answer.RunID, "existing", answer.Existing)
			}
			h.Log.Info(what, append(attrs, "error", answer.Error)...)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(answer)
	})
}

// refuse is a refusal's status and answer.
func refuse(code int, format string, args ...any) (int, HookAnswer) {
	return code, HookAnswer{Error: fmt.Sprintf(format, args...)}
}

// signedDelivery is a request to a hook, its signature checked.
type signedDelivery struct {
	reg  contract.TriggerRegistration
	body []byte
	// delivery is its hook's name and its delivery ID.
	delivery runs.Delivery
}

// authenticate reads a request's body within its bounds and checks that
// it is signed with its hook's secret; otherwise it answers the refusal's
// status (not 0), whose message ends with nothing ("nothing started").
func (h hooks) authenticate(ctx context.Context, w http.ResponseWriter, r *http.Request, nothing string) (signedDelivery, int, HookAnswer) {
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
		return unsigned(refuse(http.StatusRequestEntityTooLarge, "the body is over %d bytes (1 MiB): %s", MaxHookBody, nothing))
	case err != nil:
		return unsigned(refuse(http.StatusBadRequest, "the body could not be read: %v", err))
	}
	reg, err := runs.Hook(ctx, h.client, name)
	switch {
	case errors.Is(err, runs.ErrUnknownHook):
		return unsigned(refuse(http.StatusNotFound, "webhook %q: %v", name, err))
	case err != nil:
		return unsigned(refuse(http.StatusServiceUnavailable, "webhook %q: its registration could not be read: %v", name, err))
	}
	secret, err := activities.ReadSecret(h.SecretsDir, reg.Secret)
	if err != nil {
		// Said in the worker's log only: the caller is not known yet, and
		// the secrets directory's place is not theirs to learn.
		if h.Log != nil {
			h.Log.Error("webhook secret unreadable", "hook", name, "error", err)
		}
		return unsigned(refuse(http.StatusServiceUnavailable, "webhook %q cannot check signatures on this worker (its log says why): %s", name, nothing))
	}
	if !signed(body, secret, r.Header.Get(HookSignatureHeader)) {
		return unsigned(refuse(http.StatusUnauthorized, "webhook %q: %s is missing or is not the body's HMAC-SHA256 with the hook's secret (write sha256=HEX): %s", name, HookSignatureHeader, nothing))
	}
	delivery := r.Header.Get(HookDeliveryHeader)
	if len(delivery) > maxDeliveryID || strings.ContainsFunc(delivery, unicode.IsControl) {
		return unsigned(refuse(http.StatusBadRequest, "%s must be at most %d bytes of text without control characters", HookDeliveryHeader, maxDeliveryID))
	}
	return signedDelivery{reg: reg, body: body, delivery: runs.Delivery{Hook: name, ID: delivery}}, 0, HookAnswer{}
}

// unsigned is a refusal as authenticate answers it.
func unsigned(code int, answer HookAnswer) (signedDelivery, int, HookAnswer) {
	return signedDelivery{}, code, answer
}

// deliver checks a delivery and starts its run: the HTTP status and answer.
func (h hooks) deliver(ctx context.Context, w http.ResponseWriter, r *http.Request) (int, HookAnswer) {
	name := r.PathValue("name")
	d, code, refusal := h.authenticate(ctx, w, r, "nothing started")
	if code != 0 {
		return code, refusal
	}
	var err error
	var wait time.Duration
	if text := r.URL.Query().Get("wait"); text != "" {
		if wait, err = time.ParseDuration(text); err != nil || wait < time.Second || wait > MaxHookWait {
			return refuse(http.StatusBadRequest, "?wait=%s: give a duration from 1s to %s", text, MaxHookWait)
		}
	}
	if d.delivery.Workload, err = submit.DecodeOverrides(d.body, "the body"); err != nil {
		return refuse(http.StatusBadRequest, "webhook %q: %v: nothing started", name, err)
	}
	wr, existing, err := runs.StartFromHook(ctx, h.client, h.Namespace, d.reg, d.delivery, submit.CheckOverrides)
	var invalid *runs.InvalidError
	switch {
	case errors.As(err, &invalid):
		return refuse(http.StatusBadRequest, "webhook %q: %v: nothing started", name, invalid.Err)
	case err != nil:
		return refuse(http.StatusServiceUnavailable, "webhook %q: the run could not start: %v", name, err)
	}
	answer := HookAnswer{RunID: wr.GetID(), Existing: existing}
	code = http.StatusCreated
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

// sendEvent checks an event's delivery and sends the event to its run,
// which must be a run of the hook's playbook: the HTTP status and answer.
func (h hooks) sendEvent(ctx context.Context, w http.ResponseWriter, r *http.Request) (int, HookAnswer) {
	name, run, event := r.PathValue("name"), r.PathValue("run"), r.PathValue("event")
	d, code, refusal := h.authenticate(ctx, w, r, "nothing sent")
	if code != 0 {
		return code, refusal
	}
	if err := contract.CheckSize("the event's data", len(bytes.TrimSpace(d.body))); err != nil {
		return refuse(http.StatusRequestEntityTooLarge, "webhook %q: %v", name, err)
	}
	data, err := eventData(d.body)
	if err == nil {
		err = contract.CheckEvent(event, data, "webhook "+name)
	}
	if err != nil {
		return refuse(http.StatusBadRequest, "webhook %q: %v: nothing sent", name, err)
	}
	received, err := runs.SendFromHook(ctx, h.client, d.reg, d.delivery, run, event, data)
	var (
		notFound *runs.NotFoundError
		refused  *runs.RefusedError
		ended    *runs.EndedError
	)
	switch {
	case errors.As(err, &notFound):
		// A run of another playbook is answered as an unknown one: the
		// hook's secret tells nothing of other playbooks' runs.
		return refuse(http.StatusNotFound, "webhook %q: no run %s of playbook %s: nothing sent", name, run, d.reg.Playbook)
	case errors.As(err, &refused), errors.As(err, &ended):
		return refuse(http.StatusConflict, "webhook %q: %v", name, err)
	case err != nil:
		return refuse(http.StatusServiceUnavailable, "webhook %q: the event could not be sent: %v", name, err)
	}
	return http.StatusOK, HookAnswer{RunID: run, Event: event, Received: received}
}

// eventData is an event's body as its data: one JSON value, whole numbers
// kept as written; an empty body is null.
func eventData(body []byte) (any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON (%v)", err)
	}
	if dec.More() {
		return nil, errors.New("the body holds more than one JSON value")
	}
	return v, nil
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
