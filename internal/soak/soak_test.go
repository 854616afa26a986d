package soak_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/soak"
)

func TestMain(m *testing.M) { ddbtest.Main(m, ddbtest.SustainedLoad()) }

// TestSoakShort is `make soak` in 20 seconds with a fixed seed and every
// fault kind on: every check must hold, and the run must have exercised
// what the checks are about, the calendar quotas' reset edge included.
func TestSoakShort(t *testing.T) {
	tbl := ddbtest.NewTable(t) // starts (or finds) the emulator
	var log bytes.Buffer
	r, err := soak.Run(context.Background(), tbl.Endpoint, soak.Config{
		Duration: 20 * time.Second, Seed: 7, Faults: soak.DefaultFaults(),
	}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out bytes.Buffer
	r.WriteTable(&out)
	t.Log("\n" + out.String())
	if !r.OK() {
		t.Fatalf("a check failed:\n%s%s", out.String(), log.String())
	}
	if r.Admitted == 0 || r.Rejected == 0 || r.Restarts == 0 || r.StreamRecords == 0 || r.HotShards < 8 {
		t.Fatalf("the run did not exercise the system:\n%s", out.String())
	}
	// The quotas: exhausted (429s), the reset edge crossed (shards written
	// after it), qhot doubled (2 shards at setup), top-ups applied.
	if r.QuotaAdmitted == 0 || r.QuotaRejected == 0 || r.ResetEdges != 1 || r.QuotaPastEdge == 0 ||
		r.QuotaDoublings == 0 || r.QuotaShards["qhot"] <= 2 || r.TopUps == 0 || r.OperatorResets == 0 {
		t.Fatalf("the run did not exercise the calendar quotas:\n%s", out.String())
	}
	// The session pair: windows opened and ended inside the run (the
	// checks above ask for two starts at least).
	if r.SessionWindows < 2 {
		t.Fatalf("the run did not exercise the session quota:\n%s", out.String())
	}
	// The changing resource: its limit changed several times under load.
	if r.LimitChanges < 3 {
		t.Fatalf("the run did not change limits under load:\n%s", out.String())
	}
}
