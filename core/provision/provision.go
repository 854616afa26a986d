// Package provision plans and applies a declarative limits manifest to one
// namespace of a table (docs/design.md §12), Terraform-style: what the
// manifest names is created or replaced, what an earlier apply managed and
// this manifest no longer names is removed, and nothing else is touched.
// The state record (R10) remembers what is managed.
//
// An apply writes config through the same setters as every other writer
// (core/config), then brings the buckets already created in line through the
// fan-outs of core/control, in the order of docs/design.md §12: access
// stamps of resources before those of entities (an entity carve-out is
// stamped last), cascade stamps, entity parameter sync, the soft fan-outs of
// resource and system changes, and the state record last.
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
	// Clock is the wall clock (default time.Now): `last_applied`, stamp
	// deadlines, audit timestamps.
	Clock func() time.Time
	// StampTTL bounds a bypass or soft stamp's deadline after the config
	// read that justified it (default 60 s; docs/design.md §8).
	StampTTL time.Duration
	// Workers bounds the targets whose fan-outs run at once, and the bucket
	// writes of each (default 8).
	Workers int
	// Logger receives progress and warnings (default slog.Default()).
	Logger *slog.Logger
}

// Provisioner applies manifests to one table. Safe for concurrent use, but
// two applies to one namespace at once race like two operators would: the
// last state record written wins.
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

// Store is the config store the Provisioner writes through.
func (p *Provisioner) Store() *config.Store { return p.store }
