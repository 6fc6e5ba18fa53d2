// Package lifecycle runs the key lifecycles that span a keyring's
// databases and the processes that use them, as calls an application can
// make from its own admin job: rotating the primary key across a running
// fleet ([Rotate]), resealing subject keys under the primary ([ResealSubjects]),
// giving subjects new key versions ([RekeySubjects]) and retiring a key
// once nothing references it ([Retire]).
//
// Each call checks every database's ledger before it changes anything,
// takes cancellation through its context, is resumable (run it again and
// it continues), and returns what it did; an [Observer] hears each step
// as it happens. The ward CLI is a thin shell over these calls.
package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Database is one database a keyring serves.
type Database struct {
	// Name names the database in results, events and errors. It must not
	// hold a secret: give a redacted URL or a label, never a DSN.
	Name string
	// DB is the connection pool.
	DB *sql.DB
	// Dialect selects SQL syntax.
	Dialect field.Dialect
	// Ledger is the database's ledger; nil means the default table.
	Ledger *ledger.Ledger
	// Unswept names tables (unqualified, any case) that a retire's sweep
	// ([Sweep]) skips: copies kept on purpose whose values retiring the
	// key is meant to make unreadable, such as an in-database backup of
	// ward's subject keys taken before a forget. Nothing else is skipped.
	Unswept []string
}

func (d Database) ledger() *ledger.Ledger {
	if d.Ledger != nil {
		return d.Ledger
	}
	return &ledger.Ledger{DB: d.DB, Dialect: d.Dialect}
}

// Observer hears the steps of a lifecycle call as they happen; every
// field may be nil. Results are also returned when the call ends.
type Observer struct {
	// Added reports the new key, added decrypt-only, or reused from an
	// earlier run that stopped before promoting it (continued).
	Added func(id keyring.KeyID, continued bool)
	// Waiting reports, after each read of a database's registry, the
	// processes a wait still waits for.
	Waiting func(db, what string, waiting []fleet.Process)
	// Ready reports a finished wait in one database.
	Ready func(db, what string, res fleet.Awaited)
	// Promoted reports the promotion of id over old.
	Promoted func(id, old keyring.KeyID)
	// Column reports a column re-sealed (or, with err, the part done).
	Column func(c ColumnResult, err error)
	// Subjects reports a namespace whose subject keys were re-wrapped or
	// given new versions (or, with err, the part done).
	Subjects func(s SubjectResult, err error)
	// Skipped reports a recorded column no job moves, and why.
	Skipped func(db string, c ledger.Column, why string)
	// MACs reports a recorded column of row MACs a re-MAC pass moved.
	MACs func(m MACResult, err error)
}

// ColumnResult is what a re-sealing job did to one recorded column.
type ColumnResult struct {
	DB     string
	Column ledger.Column
	Stats  reseal.Stats
}

// SubjectResult is what happened to one namespace's subject keys.
type SubjectResult struct {
	DB        string
	Namespace string
	// Reseal is set by a reseal of subject keys, Rekey by a rotation of
	// subject keys.
	Reseal subject.ResealStats
	Rekey  subject.RotateStats
}

// DatabaseError is a failure in one database, naming it.
type DatabaseError struct {
	DB  string
	Err error
}

func (e *DatabaseError) Error() string { return fmt.Sprintf("lifecycle: %s: %v", e.DB, e.Err) }

// Unwrap returns the cause.
func (e *DatabaseError) Unwrap() error { return e.Err }

func inDB(db string, err error) error {
	if err == nil {
		return nil
	}
	return &DatabaseError{DB: db, Err: err}
}

// check verifies kr against every database's ledger: a lifecycle call
// acts only on state it has authenticated.
func check(ctx context.Context, kr *keyring.Keyring, dbs []Database) error {
	if len(dbs) == 0 {
		return errors.New("lifecycle: no database given")
	}
	for _, d := range dbs {
		if err := d.ledger().Check(ctx, kr); err != nil {
			return inDB(d.Name, err)
		}
	}
	return nil
}

// record adds ids and the keyring's generation to every ledger.
func record(ctx context.Context, kr *keyring.Keyring, dbs []Database, ids ...keyring.KeyID) error {
	for _, d := range dbs {
		if err := d.ledger().Record(ctx, kr, ids...); err != nil {
			return inDB(d.Name, err)
		}
	}
	return nil
}

// OpenColumn builds the field.Column of a column a ledger records, with
// its subject keys if it is sealed per subject, for a job: it writes
// ciphertext v4 only once every process of the database's fleet reads it
// (fleet.Registry.WriteGate).
func OpenColumn(ctx context.Context, kr *keyring.Keyring, d Database, c ledger.Column) (*field.Column, error) {
	opts := []field.ColumnOption{}
	if c.Text {
		opts = append(opts, field.WithEncoding(field.Text))
	}
	if c.Bind != nil {
		opts = append(opts, field.Bind(c.Bind...))
	}
	allowed := []fleetgate.Form{fleetgate.Sealed(c.Table, c.Column)}
	if c.Subject != "" {
		store, err := subject.Open(ctx, subject.Config{DB: d.DB, Dialect: d.Dialect, Keyring: kr, Ledger: d.ledger(), Namespace: c.Namespace})
		if err != nil {
			return nil, err
		}
		opts = append(opts, field.PerSubject(store, c.Subject))
		allowed = append(allowed, fleetgate.Subject(c.Table, c.Column))
	}
	// The job writes ciphertext v4 only once every registered process
	// reads it.
	g := (&fleet.Registry{DB: d.DB, Dialect: d.Dialect, Ledger: d.ledger()}).WriteGate(ctx, kr, allowed...)
	opts = append(opts, field.WithForms(g))
	return field.NewColumn(kr, c.Table, c.Column, opts...)
}

// Stores opens the subject-key store of every namespace that holds keys
// or tombstones in the database, or whose forgets its ledger counts (none
// if it has no subject keys).
func Stores(ctx context.Context, kr *keyring.Keyring, d Database) ([]*subject.Store, error) {
	if _, err := d.DB.ExecContext(ctx, `SELECT 1 FROM `+subject.DefaultKeysTable+` WHERE 1 = 0`); err != nil {
		return nil, nil // no subject keys in this database
	}
	names, err := subject.Namespaces(ctx, d.DB, d.Dialect, "")
	if err != nil {
		return nil, err
	}
	// A namespace the ledger counts forgets in, even if a database writer
	// deleted its every key and tombstone: its audit must say so.
	if st, err := d.ledger().Read(ctx); err == nil {
		for _, ns := range subject.CountedNamespaces(st) {
			if !slices.Contains(names, ns) {
				names = append(names, ns)
			}
		}
	}
	var out []*subject.Store
	for _, ns := range names {
		s, err := subject.Open(ctx, subject.Config{DB: d.DB, Dialect: d.Dialect, Keyring: kr, Ledger: d.ledger(), Namespace: ns})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// resealColumns runs a re-sealing job over every recorded column of d
// that keep selects, reporting each to obs.
func resealColumns(ctx context.Context, kr *keyring.Keyring, d Database, obs *Observer, keep func(ledger.Column) bool) ([]ColumnResult, error) {
	st, err := d.ledger().Verified(ctx, kr)
	if err != nil || st == nil {
		return nil, err
	}
	var out []ColumnResult
	for _, c := range st.Columns {
		if !keep(c) {
			continue
		}
		col, err := OpenColumn(ctx, kr, d, c)
		if err != nil {
			return out, err
		}
		stats, err := (&reseal.Job{DB: d.DB, Dialect: d.Dialect, Column: col, Key: c.Key}).Run(ctx)
		r := ColumnResult{DB: d.Name, Column: c, Stats: stats}
		out = append(out, r)
		if obs.Column != nil {
			obs.Column(r, err)
		}
		if err != nil {
			return out, fmt.Errorf("re-sealing %s.%s: %w", c.Table, c.Column, err)
		}
	}
	return out, nil
}
