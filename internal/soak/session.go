package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/bucket"
	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/streamimage"
)

// The session-quota pair (docs/design.md §11, §15): s1 on the session
// resource holds one session quota whose window is a fifth of the run, so
// that windows open on first use, are exhausted and end inside the run,
// under the same faults and aggregator restarts as every other pair. An
// operator tops it up at 0.4 of the run and resets it at 0.8. The windows'
// starts are read off the stream (every write of a bucket reaches it), and
// each window is an epoch of the pair's ledger.
const (
	resSession   = "session"
	sessionLimit = "tokens"
	// sessionMaxTake is the most tokens one session request consumes: small
	// beside the allowance, so that a request whose outcome or window is
	// uncertain loosens the check by little.
	sessionMaxTake = 4
	// sessionWeight is how many times the session pair is in the load's
	// draw for once each plain pair is: enough that every window is
	// exhausted.
	sessionWeight = 6
)

var sessionEntities = []string{"s1"}

// sessionWindow is the window length for a run of d: a fifth of it in
// whole seconds, at least 1.
func sessionWindow(d time.Duration) time.Duration {
	return max(time.Second, (d / 5).Truncate(time.Second))
}

// sessionAllowance is the window's allowance: 4 tokens per second of it,
// at least 8, so that the load exhausts each window (as quotaAllowance
// does a period).
func sessionAllowance(window time.Duration) int64 {
	return max(8, int64(window.Seconds()*4))
}

func (w *world) sessionLimits() []limit.Limit {
	return []limit.Limit{limit.Session(sessionLimit, w.sessionC, w.sessionW)}
}

// setupSessions writes the session resource's limit (past the 0.15.0
// reader gate: the table is stamped with this build's version).
func (w *world) setupSessions(ctx context.Context, ctl *control.Controls) error {
	w.sessionW = sessionWindow(w.cfg.Duration)
	w.sessionC = sessionAllowance(w.sessionW)
	w.windows, w.seen = map[int64]sessionWindowUse{}, map[string]bool{}
	_, err := ctl.SetResourceLimits(ctx, w.ns, resSession, w.sessionLimits(), "soak")
	return err
}

// sessionWindowUse is what the stream showed of one window of the session
// pair: the consumption its writes added (Σ of tc's changes, credits
// included, millitokens) and the top-up it held (tu, wiped when a window
// opens, so its largest value in the window is the window's top-ups).
type sessionWindowUse struct {
	consumed, topUps int64
	opened           bool // a write started it live (not an operator's reset)
}

// noteWindows books the stream's writes of the session pair by the window
// their new image reflects (wa): exact, whatever the clients' clocks,
// faults or retries did. A record delivered again (the aggregator's
// restarts read the stream from its start) is booked once.
func (w *world) noteWindows(ev events.DynamoDBEvent) {
	for _, rec := range ev.Records {
		img, ok := sessionImage(rec.Change.NewImage)
		if !ok {
			continue
		}
		li := img.Limit(sessionLimit)
		if li == nil || !li.Fields.Has(bucketitem.FieldWindowAnchor) {
			continue // no window yet (a bypassed create; not in this load)
		}
		var oldTC int64
		if old, ok := sessionImage(rec.Change.OldImage); ok {
			if ol := old.Limit(sessionLimit); ol != nil {
				oldTC = ol.Consumed
			}
		}
		wa := li.WindowAnchor
		w.mu.Lock()
		if !w.seen[rec.Change.SequenceNumber] {
			w.seen[rec.Change.SequenceNumber] = true
			u := w.windows[wa]
			u.consumed += li.Consumed - oldTC
			u.topUps = max(u.topUps, li.TopUp)
			u.opened = u.opened || img.RF < wa+w.sessionW.Milliseconds()
			w.windows[wa] = u
		}
		w.mu.Unlock()
	}
}

// sessionImage decodes a stream image of a session-pair bucket; ok is
// false for any other item, and for one that does not decode (the rogue
// writer's poison).
func sessionImage(image map[string]events.DynamoDBAttributeValue) (*bucketitem.Image, bool) {
	if r := image["resource"]; r.DataType() != events.DataTypeString || r.String() != resSession {
		return nil, false
	}
	item, err := streamimage.ImageToDynamoDB(image)
	if err != nil {
		return nil, false
	}
	img, err := bucketitem.Decode(item)
	return &img, err == nil
}

// sessionTopUp tops s1 up by a quarter of the allowance (it opens a window
// where none is live); the stream shows it in the window's tu.
func (w *world) sessionTopUp(ctx context.Context, ctl *control.Controls) error {
	n := w.sessionC / 4
	from := w.now()
	op, err := w.operate(ctx, func(id string) (control.Operation, error) {
		return ctl.TopUp(ctx, w.ns, "s1", resSession, map[string]int64{sessionLimit: n}, control.OperationOptions{OperationID: id, Principal: "soak"})
	}, "soak-session-top-up")
	if err != nil {
		return fmt.Errorf("top-up of s1: %w", err)
	}
	granted := op.Granted[sessionLimit]
	fmt.Fprintf(w.log, "soak: session s1 topped up by %d, on the run's clock from %s to %s\n", granted, from.Format("15:04:05.000"), w.now().Format("15:04:05.000"))
	w.count(func(r *Report) {
		r.TopUps++
		if granted != n {
			r.TopUpsInexact = append(r.TopUpsInexact, fmt.Sprintf("s1: %d of %d", granted, n))
		}
	})
	return nil
}

// sessionReset resets s1: its window ends, and the next use opens one.
func (w *world) sessionReset(ctx context.Context, ctl *control.Controls) error {
	from := w.now()
	_, err := w.operate(ctx, func(id string) (control.Operation, error) {
		return ctl.Reset(ctx, w.ns, "s1", resSession, nil, control.OperationOptions{OperationID: id, Principal: "soak"})
	}, "soak-session-reset")
	if err != nil {
		return fmt.Errorf("reset of s1: %w", err)
	}
	fmt.Fprintf(w.log, "soak: session s1 reset, on the run's clock from %s to %s\n", from.Format("15:04:05.000"), w.now().Format("15:04:05.000"))
	w.count(func(r *Report) { r.OperatorResets++ })
	return nil
}

// checkSessions checks what the stream showed of the session pair: no
// window consumed more than its allowance and its top-ups (exactly, from
// tc's changes: a credit counts against the window it lands in), and at
// least two windows opened, so that the run saw one end and the next
// open.
func (w *world) checkSessions(context.Context) error {
	r := w.report
	w.mu.Lock()
	defer w.mu.Unlock()
	var overDiff int64
	var overDetail, seen []string
	for _, wa := range slices.Sorted(maps.Keys(w.windows)) {
		u := w.windows[wa]
		if u.opened {
			r.SessionWindows++
		}
		seen = append(seen, fmt.Sprintf("%s: %d + tu %d", time.UnixMilli(wa).UTC().Format("15:04:05.000"), u.consumed, u.topUps))
		if d := u.consumed - (w.sessionC*bucket.MilliPerToken + u.topUps); d > 0 {
			overDiff += bucket.CeilDiv(d, bucket.MilliPerToken)
			overDetail = append(overDetail, fmt.Sprintf("window at %d consumed %d > C %d + top-ups %d (millitokens)", wa, u.consumed, w.sessionC*bucket.MilliPerToken, u.topUps))
		}
	}
	fmt.Fprintf(w.log, "soak: session s1 (C %d, window %v), by window (millitokens): %s\n", w.sessionC, w.sessionW, strings.Join(seen, "; "))
	r.add("session: no window consumed more than C + its top-ups", overDiff, strings.Join(first(overDetail, 5), "; "))
	var few int64
	if r.SessionWindows < 2 {
		few = int64(2 - r.SessionWindows)
	}
	r.add("session: windows opened and ended inside the run", few, fmt.Sprintf("%d windows opened", r.SessionWindows))
	return nil
}
