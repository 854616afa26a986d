package aggregator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator/maintenance"
)

// Maintainer does the best-effort bucket upkeep of docs/design.md §6
// (refill, doubling, propagation) for the bucket records of one batch,
// given in stream order. It logs and counts its own failures; nothing it
// does is reported to the stream. *maintenance.Maintainer implements it.
type Maintainer interface {
	Run(ctx context.Context, records []maintenance.Record) maintenance.Stats
}

// batchStats is what one invocation did: the summary log line and the EMF
// document are made from it.
type batchStats struct {
	records  int // delivered
	buckets  int // bucket INSERT/MODIFY records parsed ("processed")
	skipped  int // not bucket INSERT/MODIFY: ignored
	poison   int // bucket records that could not be used: logged, skipped
	runs     int // snapshot runs planned
	writes   int // snapshot UpdateItems that applied ("snapshots_updated")
	failures int // snapshot runs whose work is not done
	reported int // records to redeliver from returned (0 or 1)
	maint    maintenance.Stats
	// lag is now − the oldest ApproximateCreationDateTime; hasLag is false
	// when no record carries one.
	lag    time.Duration
	hasLag bool
	took   time.Duration
}

// process is Process without the panic guard: docs/design.md §6 order of
// work.
func (a *Aggregator) process(ctx context.Context, records batch) (Result, error) {
	started := time.Now()
	now := a.now()
	n := records.len()
	st := batchStats{records: n}

	// 1. Parse and classify.
	// The batch's records are parsed into one slab, not one allocation each.
	recs := make([]*bucketRecord, 0, n)
	slab := make([]bucketRecord, n)
	var oldest time.Time
	for i := range n {
		d := records.record(i)
		if at := d.created; !at.IsZero() && at.Unix() > 0 && (oldest.IsZero() || at.Before(oldest)) {
			oldest = at
		}
		r := &slab[i]
		out, err := r.parse(d, i)
		switch out {
		case outSkipped:
			st.skipped++
		case outPoison:
			st.poison++
			a.log.WarnContext(ctx, "skipping unusable bucket record", "index", i, "reason", err.Error())
		case outBucket:
			var refused []string
			r.contrib, refused = contributions(r.newImg, r.oldImg)
			if len(refused) > 0 {
				a.log.WarnContext(ctx, "limits a usage snapshot cannot hold are left out", "index", i, "limits", refused)
			}
			recs = append(recs, r)
		}
	}
	st.buckets = len(recs)
	if !oldest.IsZero() {
		st.lag, st.hasLag = max(now.Sub(oldest), 0), true
	}

	// Writes are cut off half a margin before the invocation's deadline, so
	// that the response is returned in time even when a write hangs.
	work := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(ctx, dl.Add(-a.cfg.DeadlineMargin/2))
		defer cancel()
	}

	// 2. Snapshots (must succeed).
	keys, byKey := plan(recs, a.cfg.Windows)
	ttl := now.Unix() + int64(a.cfg.SnapshotTTL/time.Second)
	a.writeSnapshots(ctx, work, keys, byKey, ttl)
	var lowest *bucketRecord
	deadlineSkipped := 0
	for _, k := range keys {
		for _, r := range byKey[k] {
			st.runs++
			st.writes += r.writes
			if r.done {
				continue
			}
			st.failures++
			switch {
			case errors.Is(r.err, errDeadline):
				deadlineSkipped++
			case errors.Is(r.err, errSkippedAfterFailure):
			default:
				a.log.WarnContext(ctx, "snapshot write failed; its run's first record is reported",
					"index", r.first().index, "window", string(r.window), "records_in_run", len(r.recs), "error", errorCode(r.err))
			}
			if lowest == nil || r.first().padded < lowest.padded {
				lowest = r.first()
			}
		}
	}
	if deadlineSkipped > 0 {
		a.log.WarnContext(ctx, "deadline near: snapshot runs not started are reported", "runs", deadlineSkipped)
	}

	// 3–5. Refill, doubling, propagation (best effort).
	if a.maint != nil && len(recs) > 0 {
		if a.canStart(ctx) {
			mrecs := make([]maintenance.Record, len(recs))
			for i, r := range recs {
				mrecs[i] = r.maintenanceRecord()
			}
			st.maint = a.runMaintainer(ctx, work, mrecs)
		} else {
			a.log.WarnContext(ctx, "deadline near: bucket maintenance skipped", "bucket_records", len(recs))
		}
	}

	// 7. Result. Lambda treats the reported sequence numbers of a stream
	// batch as a checkpoint: it restarts from the lowest and redelivers
	// everything after it, whatever else is listed. Only the lowest is
	// returned (docs in package aggregator).
	var res Result
	if lowest != nil {
		res.RedeliverFrom = lowest.seq
		st.reported = 1
	}
	st.took = time.Since(started)
	a.summarise(ctx, now, st)
	return res, nil
}

// runMaintainer runs the best-effort maintenance. Its failures are never
// the batch's: a panic in it is logged and counted, and the snapshots
// already written stand.
func (a *Aggregator) runMaintainer(ctx, work context.Context, recs []maintenance.Record) (st maintenance.Stats) {
	defer func() {
		if v := recover(); v != nil {
			a.log.ErrorContext(ctx, "panic in bucket maintenance", "panic", fmt.Sprint(v))
			st = maintenance.Stats{Failures: 1}
		}
	}()
	return a.maint.Run(work, recs)
}

// summarise writes the invocation's summary log line and EMF document.
func (a *Aggregator) summarise(ctx context.Context, now time.Time, st batchStats) {
	attrs := []any{
		"records", st.records,
		"processed", st.buckets,
		"snapshots_updated", st.writes,
		"refills_written", st.maint.Refills,
		"refills_raced", st.maint.RefillRace,
		"doublings", st.maint.Doublings,
		"raises", st.maint.Raises,
		"clones", st.maint.Clones,
		"abstained", st.maint.Abstained,
		"resets_deferred", st.maint.Deferred,
		"skipped", st.skipped,
		"poison", st.poison,
		"error_count", st.failures + st.maint.Failures,
		"reported", st.reported,
		"processing_time_ms", st.took.Milliseconds(),
	}
	if st.hasLag {
		attrs = append(attrs, "stream_lag_ms", st.lag.Milliseconds())
	}
	a.log.InfoContext(ctx, "aggregator batch processed", attrs...)
	if a.metrics != nil {
		if doc := emfDocument(a.cfg.TableName, now, st); doc != nil {
			a.metrics.Emit(doc)
		}
	}
}

// errorCode names a failure without its message (which can quote request
// content): the DynamoDB error code, or the error text for transport and
// context errors.
func errorCode(err error) string {
	var ae interface{ ErrorCode() string } // smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return err.Error()
}
