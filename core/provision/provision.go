// Package provision plans and applies a declarative limits manifest to one
// namespace of a table (docs/design.md §12), Terraform-style, for one owner
// (a CloudFormation resource, named by its stack and logical id, or a
// manifest owner): what the manifest names is created or replaced, what the
// owner held and the manifest no longer names is released, and nothing
// else is touched. Owners hold disjoint targets. Each owner has an owner
// record, and each target it holds a claim, which keeps the target's config
// as it was before the owner took it, so that a release gives it back. An
// earlier provisioner's single state record is read as the holdings of the
// owner LegacyOwnerKey.
//
// Plan, Apply and Release take the namespace's id (ns), which
// Store().ResolveNamespace looks up by name; the namespace is registered
// beforehand through core/control.
//
// The provisioner is the declarative form of the operator writes of
// core/control, the one door for them (docs/design.md §8): it writes
// config through the same storage writer (config.Writer), records each
// change in the same audit trail (principal Request.Principal) and runs
// the same fan-outs. An apply
// records its intent before its first config write — the owner record as
// applying, then a claim on every target it may touch — so that whatever
// fails after it is undone by a rollback or finished by a retry. It then
// writes config and brings the buckets already created in line through
// the fan-outs of core/control, in the order of docs/design.md §12: access
// stamps of resources before those of entities (an entity carve-out is
// stamped last), cascade stamps, entity parameter sync, the soft fan-outs
// of resource and system changes, and the commit last (released claims
// dropped or given back, owed fan-outs marked, the owner record applied).
package provision

import (
	"log/slog"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/config"
	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/internal/capability"
)

// DB is the part of the DynamoDB API an apply uses. *dynamodb.Client
// satisfies it.
type DB interface {
	control.DB
}

// Options configure a Provisioner. The zero value of every field is its
// default.
type Options struct {
	// Clock is the wall clock (default time.Now): when an owner last
	// applied, stamp deadlines, audit timestamps.
	Clock func() time.Time
	// StampTTL bounds a bypass or soft stamp's deadline after the config
	// read that justified it (default 60 s; docs/design.md §8).
	StampTTL time.Duration
	// Workers bounds the targets whose fan-outs run at once, and the bucket
	// writes of each (default 8).
	Workers int
	// Logger receives a line per apply and warnings (default
	// slog.Default()).
	Logger *slog.Logger
}

// Provisioner applies manifests to one table. Safe for concurrent use.
// Applies of different owners to one namespace are kept apart by the
// conditional claim writes (a target both name goes to one; the other is
// refused); two applies of one owner at once race like two operators
// would, and the last to commit wins.
type Provisioner struct {
	table    string
	db       DB
	controls *control.Controls
	store    *config.Store
	writer   *config.Writer // the controls' writer: the same storage half as every operator write
	now      func() time.Time
	workers  int
	log      *slog.Logger
}

// New returns a Provisioner for table through db.
func New(db DB, table string, o Options) *Provisioner {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := control.New(db, table, control.Options{Clock: o.Clock, StampTTL: o.StampTTL, Workers: o.Workers, Logger: o.Logger})
	return &Provisioner{table: table, db: db, controls: c, store: c.Store(), writer: c.Store().Writer(capability.ConfigWrite{}),
		now: o.Clock, workers: o.Workers, log: o.Logger}
}

// Store is the config store the Provisioner reads through: look a
// namespace's id up by name with it, or read the limits an apply wrote.
func (p *Provisioner) Store() *config.Store { return p.store }
