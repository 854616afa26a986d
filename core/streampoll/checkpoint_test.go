package streampoll_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
)

// checkpoints records every checkpoint a poller hands to OnCheckpoint.
type checkpoints struct{ all []streampoll.Checkpoint }

func (c *checkpoints) save(_ context.Context, cp streampoll.Checkpoint) { c.all = append(c.all, cp) }

func (c *checkpoints) last(t *testing.T) streampoll.Checkpoint {
	t.Helper()
	if len(c.all) == 0 {
		t.Fatal("no checkpoint was handed to OnCheckpoint")
	}
	return c.all[len(c.all)-1]
}

// A poller resumed from the checkpoint of an earlier one delivers only what
// that one had not: the records written since, in a shard it was reading
// and in a child found later, and nothing of a shard it had finished.
func TestResumeFromCheckpoint(t *testing.T) {
	f := &fakeStream{}
	old := f.addShard("old", "")
	f.put(old, "o1")
	f.close(old)
	cur := f.addShard("cur", "old")
	f.put(cur, "c1")
	f.put(cur, "c2")

	var saved checkpoints
	first := &recorder{}
	drain(t, newPoller(t, f, fakeARN, streampoll.Options{Handler: first.handle, OnCheckpoint: saved.save}))
	if got := joined(first.pks()); got != "o1 | c1,c2" {
		t.Fatalf("first run delivered %s", got)
	}
	cp := saved.last(t)
	want := map[string]streampoll.ShardCheckpoint{
		"old": {Position: "AFTER_SEQUENCE_NUMBER", Sequence: "000000000000000000001", Done: true},
		"cur": {Position: "AFTER_SEQUENCE_NUMBER", Sequence: "000000000000000000003"},
	}
	if cp.StreamARN != fakeARN || len(cp.Shards) != len(want) {
		t.Fatalf("checkpoint = %+v", cp)
	}
	for id, w := range want {
		if cp.Shards[id] != w {
			t.Errorf("checkpoint of %s = %+v, want %+v", id, cp.Shards[id], w)
		}
	}

	// The process stops; more is written; a shard splits.
	f.put(cur, "c3")
	f.close(cur)
	next := f.addShard("next", "cur")
	f.put(next, "n1")

	resumed := &recorder{}
	p := newPoller(t, f, fakeARN, streampoll.Options{Handler: resumed.handle, Resume: &cp})
	if got := p.Checkpoint(); got.Shards["cur"] != want["cur"] {
		t.Errorf("before the first start, Checkpoint() = %+v, want Resume's", got)
	}
	drain(t, p)
	if got := joined(resumed.pks()); got != "c3 | n1" {
		t.Fatalf("resumed run delivered %s, want c3 | n1", got)
	}
	end := p.Checkpoint()
	if !end.Shards["cur"].Done || end.Shards["next"].Sequence != "000000000000000000005" {
		t.Errorf("checkpoint after the resumed run = %+v", end)
	}
}

// A record whose delivery failed is where the checkpoint stands (AT its
// sequence number) until it succeeds; a poller resumed from there
// re-delivers it and what follows, not the records before it.
func TestCheckpointAtFailedRecord(t *testing.T) {
	f := &fakeStream{}
	sh := f.addShard("s", "")
	f.put(sh, "a")
	f.put(sh, "b")
	seqC := f.put(sh, "c")
	f.put(sh, "d")

	// The first delivery fails at c, and the process stops after it.
	var saved checkpoints
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPoller(t, f, fakeARN, streampoll.Options{
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			cancel()
			return fail(ev, "c"), nil
		},
		OnCheckpoint: saved.save, MaxRetries: streampoll.RetryForever,
	})
	if _, err := p.DrainOnce(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("DrainOnce = %v, want context.Canceled", err)
	}
	cp := saved.last(t)
	if got, want := cp.Shards["s"], (streampoll.ShardCheckpoint{Position: "AT_SEQUENCE_NUMBER", Sequence: seqC}); got != want {
		t.Fatalf("checkpoint after a failure at c = %+v, want %+v", got, want)
	}

	rec := &recorder{}
	drain(t, newPoller(t, f, fakeARN, streampoll.Options{Handler: rec.handle, Resume: &cp}))
	if got := joined(rec.pks()); got != "c,d" {
		t.Fatalf("resumed run delivered %s, want c,d", got)
	}
}

// A checkpoint of another stream, or one whose positions DynamoDB would not
// take, is refused by New.
func TestResumeValidated(t *testing.T) {
	h := (&recorder{}).handle
	for name, cp := range map[string]streampoll.Checkpoint{
		"other stream":   {StreamARN: fakeARN + "x", Shards: map[string]streampoll.ShardCheckpoint{}},
		"after, no seq":  {StreamARN: fakeARN, Shards: map[string]streampoll.ShardCheckpoint{"s": {Position: "AFTER_SEQUENCE_NUMBER"}}},
		"at, no seq":     {StreamARN: fakeARN, Shards: map[string]streampoll.ShardCheckpoint{"s": {Position: "AT_SEQUENCE_NUMBER"}}},
		"bad position":   {StreamARN: fakeARN, Shards: map[string]streampoll.ShardCheckpoint{"s": {Position: "AT_TIMESTAMP"}}},
		"empty position": {StreamARN: fakeARN, Shards: map[string]streampoll.ShardCheckpoint{"s": {}}},
	} {
		if _, err := streampoll.New(&fakeStream{}, fakeARN, streampoll.Options{Handler: h, Resume: &cp}); !errors.Is(err, streampoll.ErrInvalidOptions) {
			t.Errorf("%s: New = %v, want ErrInvalidOptions", name, err)
		}
	}
}

// The checkpoint's JSON form is what a process writes to disk and reads
// back after an upgrade: its field names are fixed here.
func TestCheckpointJSON(t *testing.T) {
	cp := streampoll.Checkpoint{StreamARN: fakeARN, Shards: map[string]streampoll.ShardCheckpoint{
		"a": {Position: "AFTER_SEQUENCE_NUMBER", Sequence: "42", Done: true},
		"b": {Position: "TRIM_HORIZON"},
	}}
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"stream_arn":"` + fakeARN + `","shards":{"a":{"position":"AFTER_SEQUENCE_NUMBER","sequence":"42","done":true},"b":{"position":"TRIM_HORIZON"}}}`
	if string(b) != want {
		t.Fatalf("JSON = %s\nwant   %s", b, want)
	}
	var back streampoll.Checkpoint
	if err := json.Unmarshal(b, &back); err != nil || back.Shards["a"] != cp.Shards["a"] || back.Shards["b"] != cp.Shards["b"] {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
}

// Backlog counts what a poller resuming from a checkpoint has yet to read:
// after the position in a shard it was reading, from the record itself at
// an AT position, all of a shard found since, nothing of a finished shard;
// and it stops at its cap.
func TestBacklog(t *testing.T) {
	f := &fakeStream{}
	old := f.addShard("old", "")
	f.put(old, "o1")
	f.close(old)
	cur := f.addShard("cur", "old")
	f.put(cur, "c1")
	var saved checkpoints
	drain(t, newPoller(t, f, fakeARN, streampoll.Options{Handler: (&recorder{}).handle, OnCheckpoint: saved.save}))
	cp := saved.last(t)
	ctx := context.Background()
	backlog := func(c streampoll.Checkpoint, most int) (int, bool) {
		t.Helper()
		n, capped, err := streampoll.Backlog(ctx, f, c, most)
		if err != nil {
			t.Fatal(err)
		}
		return n, capped
	}
	if n, capped := backlog(cp, 100); n != 0 || capped {
		t.Fatalf("caught up: backlog %d (capped %v), want 0", n, capped)
	}
	f.put(cur, "c2")
	seqC3 := f.put(cur, "c3")
	f.put(cur, "c4")
	f.close(cur)
	next := f.addShard("next", "cur")
	f.put(next, "n1")
	if n, capped := backlog(cp, 100); n != 4 || capped {
		t.Errorf("backlog %d (capped %v), want 4: c2, c3, c4 and n1", n, capped)
	}
	at := streampoll.Checkpoint{StreamARN: cp.StreamARN, Shards: map[string]streampoll.ShardCheckpoint{
		"old": cp.Shards["old"], "cur": {Position: "AT_SEQUENCE_NUMBER", Sequence: seqC3}}}
	if n, _ := backlog(at, 100); n != 3 {
		t.Errorf("from AT c3: backlog %d, want 3: c3, c4 and n1", n)
	}
	if n, capped := backlog(cp, 2); n != 2 || !capped {
		t.Errorf("capped at 2: backlog %d (capped %v)", n, capped)
	}
}
