package playbookwf

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// waitSet is what the run's loop waits on: its channels (wake, signals),
// then the futures of the steps it started and of their pending_timeout
// timers, in the order they were added. Each Select runs the first case
// ready, in that order.
//
// When none is ready it has to wait, and there the two versions part
// (changeWaitInOrder). The SDK's Selector, which the workflow used first,
// registers a callback on every case each time it waits, and the case that
// becomes ready first wins; with hundreds of steps running, that is most of
// the workflow's own work. In order, the loop waits until any case is
// ready (a check of each case, no callback) and then runs the first ready in
// the order they were added, like a Select that finds cases ready.
//
// Runs from before wait as they always did, on a Selector built with the
// same cases in the same order. The version is asked at the first wait with
// two or more futures pending, where the two ways can differ. A wait with
// one future pending uses the Selector too (it costs little there), so a
// chain records no marker.
type waitSet struct {
	receives []receiveCase
	futures  []futureCase
	// inOrder is nil until the version is asked.
	inOrder *bool
	// awaitCtx is never cancelled: a cancelled run still waits for its
	// steps, and the cancel reaches the loop through a channel.
	awaitCtx workflow.Context
}

type receiveCase struct {
	c  workflow.ReceiveChannel
	fn func(c workflow.ReceiveChannel, more bool)
}

type futureCase struct {
	f  workflow.Future
	fn func(f workflow.Future)
}

// AddReceive adds a channel; every channel is added before the first future.
func (w *waitSet) AddReceive(c workflow.ReceiveChannel, fn func(c workflow.ReceiveChannel, more bool)) {
	if len(w.futures) > 0 {
		panic("waitSet: channels go before futures")
	}
	w.receives = append(w.receives, receiveCase{c, fn})
}

// AddFuture adds a future; its function runs once, when a Select takes it.
func (w *waitSet) AddFuture(f workflow.Future, fn func(f workflow.Future)) {
	w.futures = append(w.futures, futureCase{f, fn})
}

// HasPending tells whether a Select would not wait.
func (w *waitSet) HasPending() bool {
	r, f := w.firstReady()
	return r >= 0 || f >= 0
}

// Select runs the first case ready, waiting for one if none is.
func (w *waitSet) Select(ctx workflow.Context) {
	for {
		if w.runFirstReady() {
			return
		}
		if len(w.futures) < 2 || !w.waitsInOrder(ctx) {
			w.selectLikeBefore(ctx)
			return
		}
		if w.awaitCtx == nil {
			w.awaitCtx, _ = workflow.NewDisconnectedContext(ctx)
		}
		_ = workflow.Await(w.awaitCtx, w.HasPending)
	}
}

// firstReady finds the first channel with a value to receive, else the
// first future ready; -1 where none is.
func (w *waitSet) firstReady() (receive, future int) {
	for i, r := range w.receives {
		if r.c.Len() > 0 {
			return i, -1
		}
	}
	for i, f := range w.futures {
		if f.f.IsReady() {
			return -1, i
		}
	}
	return -1, -1
}

func (w *waitSet) runFirstReady() bool {
	r, f := w.firstReady()
	switch {
	case r >= 0:
		w.receives[r].fn(w.receives[r].c, true)
	case f >= 0:
		fc := w.futures[f]
		w.futures = slices.Delete(w.futures, f, f+1)
		fc.fn(fc.f)
	default:
		return false
	}
	return true
}

func (w *waitSet) waitsInOrder(ctx workflow.Context) bool {
	if w.inOrder == nil {
		v := version(ctx, changeWaitInOrder) >= 1
		w.inOrder = &v
	}
	return *w.inOrder
}

// selectLikeBefore waits on a Selector holding every case in order: the
// case that becomes ready first runs.
func (w *waitSet) selectLikeBefore(ctx workflow.Context) {
	sel := workflow.NewSelector(ctx)
	for _, r := range w.receives {
		sel.AddReceive(r.c, r.fn)
	}
	for _, fc := range w.futures {
		sel.AddFuture(fc.f, func(f workflow.Future) {
			w.futures = slices.DeleteFunc(w.futures, func(c futureCase) bool { return c.f == fc.f })
			fc.fn(f)
		})
	}
	sel.Select(ctx)
}
