package codec

import (
	"bytes"
	"errors"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
)

func testKey(t *testing.T, b byte) *AESGCM {
	t.Helper()
	c, err := New(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// historyWith is a history whose started event's input is in and whose
// one activity's result is result.
func historyWith(t *testing.T, in, result *commonpb.Payload) *historypb.History {
	t.Helper()
	return &historypb.History{Events: []*historypb.HistoryEvent{
		{EventId: 1, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{Input: &commonpb.Payloads{Payloads: []*commonpb.Payload{in}}}}},
		{EventId: 7, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{result}}}}},
	}}
}

func payload(t *testing.T, v any, c *AESGCM) *commonpb.Payload {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	if c != nil {
		dc = c.DataConverter()
	}
	p, err := dc.ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// UnreadableKey names the key of the first payload a client cannot
// decrypt, wherever in the history it sits, and nothing when it can
// decrypt them all.
func TestUnreadableKey(t *testing.T) {
	a, b := testKey(t, 1), testKey(t, 2)
	plain := historyWith(t, payload(t, "input", nil), payload(t, "result", nil))
	encrypted := historyWith(t, payload(t, "input", a), payload(t, "result", a))
	// A run started before the workers had a key: only what came after is
	// encrypted.
	mixed := historyWith(t, payload(t, "input", nil), payload(t, "result", a))
	for _, tc := range []struct {
		name string
		h    *historypb.History
		c    *AESGCM
		want string
	}{
		{"plain, no key", plain, nil, ""},
		{"plain, a key", plain, b, ""},
		{"encrypted, no key", encrypted, nil, a.KeyID()},
		{"encrypted, its key", encrypted, a, ""},
		{"encrypted, another key", encrypted, b, a.KeyID()},
		{"a later payload encrypted, no key", mixed, nil, a.KeyID()},
		{"a later payload encrypted, its key", mixed, a, ""},
	} {
		if got := UnreadableKey(tc.h, tc.c); got != tc.want {
			t.Errorf("%s: UnreadableKey = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Why says in plain words what the SDK's and Decode's errors mean.
func TestWhy(t *testing.T) {
	a, b := testKey(t, 1), testKey(t, 2)
	var s string
	noKey := converter.GetDefaultDataConverter().FromPayload(payload(t, "x", a), &s)
	otherKey := b.DataConverter().FromPayload(payload(t, "x", a), &s)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{noKey, "it has no codec key"},
		{otherKey, "payload encrypted with key " + a.KeyID() + ", this key is " + b.KeyID()},
	} {
		if !Unreadable(tc.err) {
			t.Errorf("Unreadable(%v) = false", tc.err)
		}
		if got := Why(tc.err); got != tc.want {
			t.Errorf("Why(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if Unreadable(errors.New("context deadline exceeded")) {
		t.Error("Unreadable of another error")
	}
}
