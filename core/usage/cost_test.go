package usage_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/bucketitem"
	"github.com/zae-limiter/zae-limiter-go/core/usage"
)

// meter is the reader's DB on DynamoDB Local that counts what the reader
// asks for: calls by operation, keys per BatchGetItem, items each Query
// read, and the read units DynamoDB Local reports (ReturnConsumedCapacity
// INDEXES, set on every call).
type meter struct {
	db *dynamodb.Client

	mu    sync.Mutex
	calls map[string]int
	keys  []int     // per BatchGetItem
	read  []int32   // per Query: ScannedCount
	units []float64 // per call: table + index read units
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls, m.keys, m.read, m.units = map[string]int{}, nil, nil, nil
}

func (m *meter) count(op string, cc ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[op]++
	u := 0.0
	for _, c := range cc {
		if c.CapacityUnits != nil {
			u += *c.CapacityUnits
		}
	}
	m.units = append(m.units, u)
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.db.Query(ctx, in, o...)
	if err == nil {
		m.count("Query", *out.ConsumedCapacity)
		m.mu.Lock()
		m.read = append(m.read, out.ScannedCount)
		m.mu.Unlock()
	}
	return out, err
}

func (m *meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.db.GetItem(ctx, in, o...)
	if err == nil {
		m.count("GetItem", *out.ConsumedCapacity)
	}
	return out, err
}

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.db.BatchGetItem(ctx, in, o...)
	if err == nil {
		m.count("BatchGetItem", out.ConsumedCapacity...)
		n := 0
		for _, ka := range in.RequestItems {
			n += len(ka.Keys)
		}
		m.mu.Lock()
		m.keys = append(m.keys, n)
		m.mu.Unlock()
	}
	return out, err
}

// report renders what the meter saw: "BatchGetItem 1, Query 1; keys [10];
// read [12]"; units apart, for the log.
func (m *meter) report() (calls, units string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(m.calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", op, m.calls[op]))
	}
	return fmt.Sprintf("%s; keys %v; read %v", strings.Join(parts, ", "), m.keys, m.read), fmt.Sprint(m.units)
}

// TestReadCosts pins the calls of each read (docs/costs.md, "Reading
// usage") on the snapshot tests' traffic: the items each Query reads
// (what it is charged for), and on the KEYS_ONLY usage index the keys
// read back from the table. The read units DynamoDB Local reports are
// logged (go test -v -run TestReadCosts).
func TestReadCosts(t *testing.T) {
	w := trafficWorld(t)
	m := &meter{db: w.tbl.DB}
	r, err := usage.New(m, w.tbl.Name, w.ns, usage.Options{Logger: quiet, Clock: w.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	from, to := utc(2026, 1, 31, 0, 0), utc(2026, 2, 2, 0, 0)
	measure := func(what, want string, f func() error) {
		t.Helper()
		m.reset()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		calls, units := m.report()
		t.Logf("%-55s %s; read units %s", what, calls, units)
		if calls != want {
			t.Errorf("%s costs\n  %s\nwant\n  %s", what, calls, want)
		}
	}
	page := func(sel usage.Selection) func() error {
		return func() error { _, err := r.SnapshotPage(ctx, sel, ""); return err }
	}
	// The key condition bounds the window starts by the kind's first and
	// last start in the range. alice's partition holds 3 hourly items, 2
	// daily and 1 monthly in it: an hourly read reads all 6, the filter
	// keeps the 3 hourly; a daily read's range ends at 1 February 00:00
	// and leaves out the hour after it (5).
	measure("entity, hourly", "Query 1; keys []; read [6]", page(usage.ForEntity("alice", "gpt-4", usage.Hourly, from, to)))
	measure("entity, daily", "Query 1; keys []; read [5]", page(usage.ForEntity("alice", "gpt-4", usage.Daily, from, to)))
	// The index holds 12 keys of both entities in the hourly range. The
	// filter drops the 2 suffixed #daily; the plain keys of 31 January
	// (daily) and 1 February (monthly) could be hours at midnight, so
	// 6 + 4 keys are read back, 6 kept.
	measure("resource, hourly", "BatchGetItem 1, Query 1; keys [10]; read [12]", page(usage.ForResource("gpt-4", usage.Hourly, from, to)))
	// Daily: 10 keys up to 1 February 00:00; the filter keeps the
	// midnight starts without #hourly: 4 daily and 2 monthly.
	measure("resource, daily", "BatchGetItem 1, Query 1; keys [6]; read [10]", page(usage.ForResource("gpt-4", usage.Daily, from, to)))
	// Monthly: the range is 1 February 00:00 alone (6 keys); the filter
	// keeps the 2 unsuffixed, the monthly items.
	measure("resource, monthly", "BatchGetItem 1, Query 1; keys [2]; read [6]", page(usage.ForResource("gpt-4", usage.Monthly, from, to)))
	// A summary is the pages of its selection.
	small, err := usage.New(m, w.tbl.Name, w.ns, usage.Options{Logger: quiet, PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	measure("summary, entity, hourly, pages of 4", "Query 2; keys []; read [4 2]", func() error {
		_, err := small.Summary(ctx, usage.ForEntity("alice", "gpt-4", usage.Hourly, from, to))
		return err
	})
	// In key order the daily range's 10 keys are 31 January 00:00 (2 kept)
	// and 23:00 (0), then 1 February's monthly and #daily (4 kept), then
	// its #hourly (0, so no BatchGetItem).
	measure("summary, resource, daily, pages of 4", "BatchGetItem 2, Query 3; keys [2 4]; read [4 4 2]", func() error {
		_, err := small.Summary(ctx, usage.ForResource("gpt-4", usage.Daily, from, to))
		return err
	})
	// Live state: one shard is one GetItem; more, one BatchGetItem of the
	// others below the count (absent ones included).
	measure("bucket, 1 shard", "GetItem 1; keys []; read []", func() error { _, err := r.Bucket(ctx, "alice", "gpt-4"); return err })
	w.putShard(t, "carol", "gpt-4", 0, 4, t5, bucketitem.NewLimit{Name: "tpm", Tokens: 1000, Params: rpm100})
	w.putShard(t, "carol", "gpt-4", 2, 4, t5, bucketitem.NewLimit{Name: "tpm", Tokens: 1000, Params: rpm100})
	measure("bucket, 4 shards (2 exist)", "BatchGetItem 1, GetItem 1; keys [3]; read []", func() error { _, err := r.Bucket(ctx, "carol", "gpt-4"); return err })
	// Top: the resource's bucket shards (alice, bob, carol's 2) from the
	// index, their counters from the table.
	measure("top, 4 shards", "BatchGetItem 1, Query 1; keys [4]; read [4]", func() error { _, err := r.Top(ctx, "gpt-4", "tpm", 2); return err })
	measure("top, 4 shards, pages of 4", "BatchGetItem 1, Query 2; keys [4]; read [4 0]", func() error { _, err := small.Top(ctx, "gpt-4", "tpm", 2); return err })
}
