package config

import (
	"context"
	"fmt"

	"github.com/zae-limiter/zae-limiter-go/core/internal/expr"
	"github.com/zae-limiter/zae-limiter-go/core/limit"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
	"github.com/zae-limiter/zae-limiter-go/core/version"
)

// Reader versions that gated features need (docs/design.md §2): a table's
// readers must understand a feature before any writer stores it.
const (
	// CascadePolicyVersion is what a cascade policy on config needs
	// (ADR-146).
	CascadePolicyVersion = "0.16.0"
	// SoftBypassVersion is what soft limits and bypass values need
	// (ADR-151 decision 7).
	SoftBypassVersion = "0.17.0"
	// SessionQuotaVersion is what a session quota needs (ADR-141): readers
	// that keep its window (ws, wa, wtc, rsa on the buckets) and read its
	// config under the hidden w_ prefix.
	SessionQuotaVersion = "0.15.0"
	// QuotaTopUpVersion is what an operator's top-up of a quota needs, the
	// top-up it records on the bucket (b_{q}_tu, ADR-149): an older reader
	// clamps the bucket to its grant and loses what was bought.
	QuotaTopUpVersion = "0.17.0"
)

// ReadersFor is the reader version a limit set needs stored (the writer
// gate): SoftBypassVersion for a soft limit, SessionQuotaVersion for a
// session quota, "" for neither.
func ReadersFor(limits []limit.Limit) string {
	need := ""
	for _, l := range limits {
		switch {
		case l.Soft:
			need = LaterVersion(need, SoftBypassVersion)
		case l.IsSession():
			need = LaterVersion(need, SessionQuotaVersion)
		}
	}
	return need
}

// LaterVersion is the later of two reader versions ("" is none); both
// are this package's constants or a version record's, compared as semver.
func LaterVersion(a, b string) string {
	va, erra := version.Parse(a)
	vb, errb := version.Parse(b)
	switch {
	case erra != nil:
		return b
	case errb != nil:
		return a
	case va.Compare(vb) >= 0:
		return a
	}
	return b
}

// Gate is the writer gate and its ratchet, both before the write they
// protect (docs/design.md §2 "The writer gate"): RequireReaders, then
// Ratchet. Raising client_min_version first means a write that then fails
// leaves the table stricter than it needs, never a stored feature that
// older clients misread; a retried or resent change passes through the
// gate again and finishes a ratchet that failed.
func (s *Store) Gate(ctx context.Context, min string) error {
	if err := s.RequireReaders(ctx, min); err != nil {
		return err
	}
	return s.Ratchet(ctx, min)
}

// RequireReaders is the writer gate: it reads the version record strongly
// consistently and refuses, with a *VersionMismatchError, unless its
// lambda_version is at least min or equals this build's own version; a
// missing record is a *MissingVersionError and an absent or unparseable
// lambda_version fails closed too. Gate runs it with the ratchet, before
// a gated feature is stored.
func (s *Store) RequireReaders(ctx context.Context, min string) error {
	want, err := version.Parse(min)
	if err != nil {
		return err
	}
	rec, found, err := s.ReadVersion(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("version gate: %w", err)
	case !found:
		return &MissingVersionError{Table: s.table}
	case rec.LambdaVersion == BuildVersion:
		return nil
	}
	if lv, err := version.Parse(rec.LambdaVersion); err == nil && lv.Compare(want) >= 0 {
		return nil
	}
	return &VersionMismatchError{
		ClientVersion: BuildVersion, ClientMinVersion: min,
		SchemaVersion: rec.SchemaVersion, LambdaVersion: rec.LambdaVersion,
		Gate: true,
	}
}

// Ratchet raises the record's client_min_version to min when it is lower,
// with a read-compare-conditional update (retried on a concurrent change);
// it never lowers it. Versions compare as semver. A failed raise is a
// *RatchetError; one refused by IAM (a namespace-scoped principal may read
// the version record, never write it: docs/design.md §13) says who can.
func (s *Store) Ratchet(ctx context.Context, min string) error {
	want, err := version.Parse(min)
	if err != nil {
		return err
	}
	k := schema.VersionKey()
	for range maxWriteAttempts {
		cur, err := getItem(ctx, s.db, s.table, k, true)
		if err != nil {
			return fmt.Errorf("ratchet client_min_version: %w", err)
		}
		if cur == nil {
			return &MissingVersionError{Table: s.table}
		}
		stored, has := getS(cur, schema.AttrClientMinVersion)
		if sv, err := version.Parse(stored); has && err == nil && sv.Compare(want) >= 0 {
			return nil
		}
		var b expr.Builder
		b.Set(schema.AttrClientMinVersion, schema.Str(min))
		if has {
			b.Cond(b.Name(schema.AttrClientMinVersion) + " = " + b.Value(schema.Str(stored)))
		} else {
			b.Cond("attribute_exists(" + b.Name(schema.AttrPK) + ") AND attribute_not_exists(" + b.Name(schema.AttrClientMinVersion) + ")")
		}
		in := b.UpdateInput(s.table, k)
		in.ReturnValues = ""
		_, err = s.db.UpdateItem(ctx, in)
		if isConditionFailed(err) {
			continue
		}
		if err != nil {
			return &RatchetError{Need: min, Stored: stored, Err: err}
		}
		return nil
	}
	return &RatchetError{Need: min, Err: ErrConflict}
}

// gated runs write after the gate and the ratchet of min.
func (s *Store) gated(ctx context.Context, min string, write func() error) error {
	if err := s.Gate(ctx, min); err != nil {
		return err
	}
	return write()
}
