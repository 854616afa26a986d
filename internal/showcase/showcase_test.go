package showcase_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
	"github.com/zae-limiter/zae-limiter-go/internal/showcase"
)

// zlBin is the zl binary every run's command-line step runs, built once
// by TestMain rather than by each run.
var zlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "showcase-zl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zlBin = filepath.Join(dir, "zl")
	if out, err := exec.Command("go", "build", "-o", zlBin, "github.com/zae-limiter/zae-limiter-go/cmd/zl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building zl: %v\n%s", err, out)
		os.Exit(1)
	}
	code := ddbtest.Run(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestRunShowsEachStep keeps `make run` honest: the walk-through runs on the
// emulator and prints every step with the results the queries must return.
func TestRunShowsEachStep(t *testing.T) {
	var out bytes.Buffer
	err := showcase.Run(context.Background(), &out, showcase.Options{
		Endpoint: ddbtest.Endpoint(t),
		Table:    ddbtest.TableName(t.Name()),
		Now:      func() time.Time { return time.Date(2026, 11, 29, 19, 30, 0, 0, time.UTC) },
		ZL:       zlBin,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"stream NEW_AND_OLD_IMAGES",
		"GSI2  GSI2PK/GSI2SK  KEYS_ONLY",
		"GSI1 children of org-acme: 2",
		"GSI2 buckets of openai/gpt-4: 4",
		"GSI2 usage of openai/gpt-4: 1",
		"GSI3 entities with their own openai/gpt-4 limits: 1",
		"GSI3 buckets of key-1 on openai/gpt-4: 2",
		"GSI4 everything in the namespace (purge): 12",
		"USAGE#2026-11-29T19:00:00Z#key-1",
		"*schema.InvalidNameError",
		"b_tpm_tc 0 -> 1500000 millitokens  -> reported as a batch item failure",
		"delivered 19 records in 2 batches, 1 re-delivery after the reported failure",
		"resource openai/gpt-4        accepted",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q\n%s", want, text)
		}
	}
	// The acquire step, line by line: each admission with its balances and
	// the path its DynamoDB calls show, the 429 with its retry-after, body
	// and header, admission once the clock has moved past it, and leases.
	step := text[strings.Index(text, "== 7. Acquire"):strings.Index(text, "== 8. ")]
	for _, want := range []string{
		"the limiter's clock starts at 2026-11-29T19:30:00Z and moves only when this step moves it",
		"  #1      admitted, rpm 4, tpm 8500 left     slow path, new bucket: UpdateItem (condition failed), BatchGetItem ×3, PutItem",
		"  #2      admitted, rpm 3, tpm 7000 left     fast path: UpdateItem",
		"  #3      admitted, rpm 2, tpm 5500 left     fast path: UpdateItem",
		"  #4      admitted, rpm 1, tpm 4000 left     fast path: UpdateItem",
		"  #5      admitted, rpm 0, tpm 2500 left     fast path: UpdateItem",
		"  #6      429 Too Many Requests              local rejection (rejection cache): no DynamoDB call",
		"another process, cache off, pays one failed conditional write (1 WCU) for the same answer:",
		"  #6      429 Too Many Requests              fast rejection: UpdateItem (condition failed)",
		"5 admitted, then a 429: retry_after_seconds 12.001, Retry-After: 13, body:",
		`      "message": "rate limit exceeded for key-a on anthropic/claude: rpm; retry after 12.001s",`,
		`      "retry_after_seconds": 12.001,`,
		`      "retry_after_ms": 12001,`,
		"clock moved on 13s, past the retry-after and past vu (the instant a limit could have refilled to its",
		"  #7      admitted, rpm 0, tpm 3166 left     refill pass, no read: UpdateItem",
		"  key-vip admitted, rpm 99, tpm 98500 left   slow path, new bucket: UpdateItem (condition failed), BatchGetItem ×3, PutItem",
		"  search  admitted, rpm 59 left              slow path, new bucket: UpdateItem (condition failed), BatchGetItem ×3, PutItem",
		"  lease   admitted, rpm 98, tpm 96500 left   fast path: UpdateItem",
		"          used 1200 of the 2000 tpm estimated: Adjust(tpm, -800) then Commit: tpm 97300 left; 1 call: UpdateItem",
		"  lease   admitted, rpm 97, tpm 96800 left   refill pass, no read: UpdateItem",
		"          Rollback gives back rpm 1 and tpm 500; 1 call: UpdateItem",
		"  peek    admitted, rpm 98, tpm 97300 left   refill pass, no read: UpdateItem",
		// 101 calls: the idle minute passed the new bucket's recheck
		// deadline, so the first of them reads the config once (§8).
		"key-vip idle 65s, then 150 requests at one instant: 100 admitted, the rpm capacity of 100 (101 calls; 50 429s decided locally)",
		`  rpd     *limiter.LimitNotConfiguredError: limiter: limit rpd is not configured for entity key-a on resource anthropic/claude: its limits come from the resource level, which gives rpm, tpm`,
	} {
		if !strings.Contains(step, "\n"+want+"\n") {
			t.Errorf("the acquire step lacks the line %q\n%s", want, step)
		}
	}
	if n := strings.Count(step, " admitted, rpm "); n != 11 {
		t.Errorf("the acquire step admitted %d requests, want 11", n)
	}
	if n := strings.Count(step, "429 Too Many Requests"); n != 2 {
		t.Errorf("the acquire step shows %d 429s, want 2 (one local, the same from another process)", n)
	}
	// The HTTP step: two 200s with the tightest limit's fields, then a 429
	// with every limit's, Retry-After and the problem body; the estimate
	// settled to the usage the handler reported.
	httpStep := text[strings.Index(text, "== 11. HTTP"):strings.Index(text, "== 12. ")]
	reset := func(s int64) string {
		return strconv.FormatInt(time.Date(2026, 11, 29, 19, 30, 0, 0, time.UTC).Unix()+s, 10)
	}
	for _, want := range []string{
		"request 1: HTTP/1.1 200 OK",
		`  Ratelimit: "rpm";r=1;t=30`,
		`  Ratelimit-Policy: "rpm";q=2;w=60`,
		"  X-Ratelimit-Reset: " + reset(30),
		"request 2: HTTP/1.1 200 OK",
		`  Ratelimit: "rpm";r=0;t=60`,
		"request 3: HTTP/1.1 429 Too Many Requests",
		"  Content-Type: application/problem+json",
		`  Ratelimit: "rpm";r=0;t=31, "tpm";r=9200;t=5`,
		`  Ratelimit-Policy: "rpm";q=2;w=60, "tpm";q=10000;w=60`,
		"  Retry-After: 31",
		"  X-Ratelimit-Reset: " + reset(31),
		`    "type": "https://iana.org/assignments/http-problem-types#quota-exceeded",`,
		`    "detail": "rpm exhausted; retry after 31 s",`,
		`        "retry_after_seconds": 31`,
		"the bucket holds tpm 9200: two requests settled at the 400 they used, not the 1000 estimated",
		// The limiter's counters: three admissions (two requests and the
		// balance check) and one 429, each counted once.
		"  zae_limiter.acquisitions{resource=http/chat,result=admitted} 3",
		"  zae_limiter.acquisitions{resource=http/chat,result=rejected} 1",
		"  zae_limiter.lease.adjustments{resource=http/chat} 2",
		"  zae_limiter.lease.commits{outcome=ok,resource=http/chat} 3",
	} {
		if !strings.Contains(httpStep, "\n"+want+"\n") {
			t.Errorf("the HTTP step lacks the line %q\n%s", want, httpStep)
		}
	}
	// The command-line step: the real zl binary reads what the earlier
	// steps wrote, writes through the audited door, and answers mistakes
	// with the exit codes it documents.
	cliStep := text[strings.Index(text, "== 12. The command line"):]
	for _, want := range []string{
		"$ zl -N demo entity list -o table",
		"│ org-acme │ Acme Corp │ -        │ no      │ 2026-11-29T19:30:00Z │",
		"│ rpm   │ 5        │ 5 per minute     │ no   │ -        │",
		"Buckets in use: 1 found: 1 brought in line, 0 already in line, 0 vanished, 0 failed.",
		"    action: access_set",
		`zl: namespace "nope" is not registered: zl namespace register nope`,
		"(exit 1)",
		`zl: --window "weekly" is not a window kind: pass hourly, daily or monthly`,
		"(exit 2)",
	} {
		if !strings.Contains(cliStep, "\n"+want+"\n") {
			t.Errorf("the command-line step lacks the line %q\n%s", want, cliStep)
		}
	}
	for _, entity := range []string{"key-a", "key-vip"} {
		if n := strings.Count(cliStep, "│ "+entity+" "); n != 2 {
			t.Errorf("the command-line step shows %s in %d rows, want 2 (its snapshot and its rank)\n%s", entity, n, cliStep)
		}
	}
}

// TestRunShowsSnapshots: the last step runs the aggregator on the real
// stream and shows exact snapshots of the acquire step's traffic, and that
// redelivery changes nothing. Window starts come from the records' real
// ApproximateCreationDateTime, so only the counters are asserted.
func TestRunShowsSnapshots(t *testing.T) {
	var out bytes.Buffer
	err := showcase.Run(context.Background(), &out, showcase.Options{
		Endpoint: ddbtest.Endpoint(t),
		Table:    ddbtest.TableName(t.Name()),
		Now:      func() time.Time { return time.Date(2026, 11, 29, 19, 30, 0, 0, time.UTC) },
		ZL:       zlBin,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	_, step, ok := strings.Cut(out.String(), "== 8. ")
	if !ok {
		t.Fatalf("no step 8:\n%s", out.String())
	}
	lines := strings.Split(step, "\n")
	// sum adds a counter over the lines of a window and entity: a run that
	// crosses midnight (or an hour) splits its traffic over two items.
	sum := func(window, entity, counter string) (total int, n int) {
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 3 || f[0] != window || f[1] != entity {
				continue
			}
			n++
			for _, kv := range f[3:] {
				if v, ok := strings.CutPrefix(kv, counter+"="); ok {
					x, _ := strconv.Atoi(v)
					total += x
				}
			}
		}
		return total, n
	}
	// key-a: 6 admissions of rpm 1 + tpm 1500; key-vip: 1500 + 2000 − 800 +
	// 500 − 500 tpm and 1 + 1 + 1 − 1 rpm, then 100 rpm of the burst after idle.
	for _, c := range []struct {
		entity, counter string
		want            int
	}{
		{"key-a", "rpm", 6}, {"key-a", "tpm", 9000}, {"key-a", "total_events", 12},
		{"key-vip", "rpm", 102}, {"key-vip", "tpm", 2700}, {"key-vip", "total_events", 109},
	} {
		if got, n := sum("daily", c.entity, c.counter); got != c.want || n == 0 {
			t.Errorf("daily %s %s = %d over %d items, want %d\n%s", c.entity, c.counter, got, n, c.want, step)
		}
		// Every hour has its own item, the one starting at midnight too.
		if got, n := sum("hourly", c.entity, c.counter); got != c.want || n == 0 {
			t.Errorf("hourly %s %s = %d over %d items, want %d\n%s", c.entity, c.counter, got, n, c.want, step)
		}
	}
	// The snapshot writes went out as the Lambda sends them: directly,
	// the redelivery's refused conditions read without the SDK.
	if !regexp.MustCompile(`snapshot writes sent by condwrite without the SDK's stack: [1-9][0-9]* applied, [1-9][0-9]* refused conditions read \(the redelivery\); 0 sent again through the SDK`).MatchString(step) {
		t.Errorf("step 8 does not show the snapshot writes sent directly:\n%s", step)
	}
	for _, want := range []string{"; 0 reported as failed", "snapshots unchanged: true",
		// A Python client's scheduled bucket: halved in business hours,
		// vu at the boundary near its end, the stored rate on Saturday.
		"  Fri 10:00:00 EST  rpm 1 → 26 tokens, vu 10:00:28.800 EST  (1 refill)\n",
		"  Fri 17:59:30 EST  rpm 1 → 2 tokens, vu 18:00:00.000 EST  (1 refill)\n",
		"  Sat 10:00:00 EST  rpm 1 → 51 tokens, vu 10:00:29.400 EST  (1 refill)\n",
	} {
		if !strings.Contains(step, want) {
			t.Errorf("step 8 lacks %q:\n%s", want, step)
		}
	}
}

// TestRunShowsOperatorControls: the last step shows each operator control
// taking effect on the next request, and the audit trail.
func TestRunShowsOperatorControls(t *testing.T) {
	var out bytes.Buffer
	err := showcase.Run(context.Background(), &out, showcase.Options{
		Endpoint: ddbtest.Endpoint(t),
		Table:    ddbtest.TableName(t.Name()),
		Now:      func() time.Time { return time.Date(2026, 11, 29, 19, 30, 0, 0, time.UTC) },
		ZL:       zlBin,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	_, step, ok := strings.Cut(out.String(), "== 9. ")
	if !ok {
		t.Fatalf("no step 9:\n%s", out.String())
	}
	for _, want := range []string{
		"disable the resource: 3 buckets re-stamped before the call returned",
		"carve u1 out (disabled = false on its own config): 1 bucket re-stamped",
		"  u1  admitted",
		"  u2  403 resource images/generate is disabled for entity u2 (decided at bucket level)",
		"  u2  admitted, tpm -400 left, overdrawn [tpm]",
		"bypass u3, then 20 requests against rpm 10: 20 admitted; rpm tk 9000 → 9000 (nothing debited), rpm tc 1000 → 21000 (counted), wcu 1000000 → 980000 (every write still pays its write-capacity token)",
		"top up u2's rpm by 3 (operation purchase-42): granted 3 on 1 shard",
		"the same operation id again: replayed true, nothing written",
		"reset u2: rpm +0, tpm +1400 (debt forgiven), tc untouched",
		"  access_set        by ops@example.com scope=resource value=disabled",
		"  bucket_topped_up  by ops@example.com limits=rpm operation_id=purchase-42 requested=rpm=3 granted=rpm=3",
		"  access_set        by ops@example.com scope=entity value=bypass",
		// A scheduled limit: the fast path stops at the 12:00 boundary; the
		// first acquire after it materialises at 50 a minute (42 left, not
		// 75); 51 is above the halved ceiling.
		"  11:59:30  80 taken: 20 left, vu 12:00:00.000",
		"  11:59:50  10 taken: 43 left, vu 12:00:00.000",
		"  12:00:10   1 taken: 42 left, vu 12:00:19.201",
		"  12:00:10  51 asked: 429, never (above the ceiling in force)",
		// A limit lowered, then raised, while a bucket is in use, with the
		// service in another process (docs/design.md §8): the lowered
		// capacity clamps the balance before the call returns; the raise
		// grants nothing at once; the new rate counts from the change.
		"  12:00:00   10 asked one at a time:  10 admitted (tk 90 of cp 100)",
		"  12:00:06  rpm set to 20 a minute: 1 bucket found, 1 brought in line; the balance clamped to the new ceiling (tk 20 of cp 20)",
		"  12:00:06   25 asked one at a time:  20 admitted (tk 0 of cp 20)",
		"  12:00:36   15 asked one at a time:  10 admitted (tk 0 of cp 20)",
		"  12:00:40  rpm set to 200 a minute: 1 bucket found, 1 brought in line; a raise grants nothing at once (tk 1.333 of cp 200)",
		"  12:00:46   30 asked one at a time:  21 admitted (tk 0.333 of cp 200)",
		// A daily quota in New York: exhausted, its 429 names the reset;
		// a top-up raises the day's ceiling; past midnight one lump back
		// while tc keeps climbing. The new bucket's vu first stops at its
		// recheck deadline (docs/design.md §8).
		"  21:00:00   600 taken: 400 left (tk 400, tc 600, gc 1, vu Nov 30 21:01 EST: a new bucket's recheck deadline, its limits confirmed against config by then)",
		"  21:30:00   400 taken: 0 left (tk 0, tc 1000, gc 1, vu Dec 1 00:00 EST)",
		"  22:00:00   100 asked: 429, retry after 2h0m0s: at Dec 1 00:00 EST, the reset",
		"  22:05:00  top-up of 250 (purchase-42): 250 granted over 1 shard, above the day's 1,000 until midnight (tk 250, tc 1000, gc 1, tu 250, vu 0: the next acquire materialises)",
		"  22:10:00   250 taken: 0 left (tk 0, tc 1250, gc 1, tu 250, vu Dec 1 00:00 EST)",
		"  23:59:59     1 asked: 429, retry after 1s: at Dec 1 00:00 EST, the reset",
		"  00:00:05   100 taken: 900 left (tk 900, tc 1350, gc 1, vu Dec 2 00:00 EST)",
		// A session quota: the window opens at the first use, its 429
		// names its end, a top-up adds to it, a reset ends it, the next
		// use opens a new one, and so does the first use after that ended;
		// tc climbs throughout.
		"  09:00   600 taken: 400 left (tk 400, tc 600, window 09:00–14:00)",
		"  10:00   400 taken: 0 left (tk 0, tc 1000, window 09:00–14:00)",
		"  11:00   100 asked: 429, retry after 3h0m0s: at 14:00, the window's end",
		"  11:05  top-up of 250 (purchase-43): 250 granted into the window (tk 250, tc 1000, tu 250, window 09:00–14:00)",
		"  11:10   250 taken: 0 left (tk 0, tc 1250, tu 250, window 09:00–14:00)",
		"  11:15  reset: the window ends now, the next use opens a new one in full (tk 1000, tc 1250, window ended at 11:15)",
		"  11:20   100 taken: 900 left (tk 900, tc 1350, window 11:20–16:20)",
		"  17:00    50 taken: 950 left (tk 950, tc 1400, window 17:00–22:00)",
	} {
		if !strings.Contains(step, "\n"+want+"\n") {
			t.Errorf("step 9 lacks the line %q\n%s", want, step)
		}
	}
}

// TestRunShowsTheProvisioner: the last step applies a manifest through the
// provisioner's -event path as CloudFormation would, and acquires show it.
func TestRunShowsTheProvisioner(t *testing.T) {
	var out bytes.Buffer
	err := showcase.Run(context.Background(), &out, showcase.Options{
		Endpoint: ddbtest.Endpoint(t),
		Table:    ddbtest.TableName(t.Name()),
		Now:      func() time.Time { return time.Date(2028, 2, 29, 0, 10, 0, 0, time.UTC) },
		ZL:       zlBin,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	step := text[strings.Index(text, "== 10. Declarative limits"):]
	for _, want := range []string{
		"provisioner -event cfn-create.json (Create",
		"/{ns}/limits/tenant-alpha-limits/TenantLimits/",
		"Data: Status applied, Created 5, Updated 0, Deleted 0, ErrorCount 0",
		"    api-key-1  on gpt-3.5  admitted\n",
		"    api-key-3  on gpt-3.5  403 disabled\n",
		"    api-key-2  on gpt-3.5  admitted (bypassed)\n",
		"    api-key-3  on gpt-4    429\n",
		"Data: Status applied, Created 0, Updated 1, Deleted 2, ErrorCount 0",
		"    api-key-3  on gpt-3.5  admitted\n",
		"Data: Status unchanged, Created 0, Updated 0, Deleted 0, ErrorCount 0",
		"Data: Status applied, Created 0, Updated 0, Deleted 3, ErrorCount 0",
		"gpt-4 has 0 limits of its own",
	} {
		if !strings.Contains(step, want) {
			t.Errorf("step 10 lacks %q\n%s", want, step)
		}
	}
	if strings.Count(step, "api-key-3  on gpt-4    admitted") != 3 {
		t.Errorf("gpt-4 should admit 3 a minute\n%s", step)
	}
}
