package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/observe"
)

// RotateOptions configure [Rotate].
type RotateOptions struct {
	// Algorithm is the new key's (default keyring.DefaultAlgorithm).
	Algorithm keyring.Algorithm
	// Fleet configures each wait for the registered processes (stale
	// heartbeats, processes to skip, polling).
	Fleet fleet.WaitOptions
	// Wait bounds each wait; 0 waits until ctx ends. A wait that times
	// out returns a *fleet.NotReadyError naming who it waited for.
	Wait time.Duration
	// NoReseal stops after the promotion: values stay under older keys
	// until a re-sealing job moves them.
	NoReseal bool
	// Observer hears each step.
	Observer Observer
}

// Rotation is what [Rotate] did.
type Rotation struct {
	// Key is the new primary; Old the primary before.
	Key, Old keyring.KeyID
	// Continued is true when Key was added by an earlier run.
	Continued bool
	// Promoted is true once Key is primary.
	Promoted bool
	// Columns are the re-sealed columns, Subjects the re-wrapped
	// namespaces, in the order of the databases given.
	Columns  []ColumnResult
	Subjects []SubjectResult
	// MACs are the recorded row-MAC columns moved to the new integrity
	// epoch (RemacRows).
	MACs []MACResult
}

// Rotate rotates kr's primary key across every process that uses it, with
// no failed request: it adds a key decrypt-only and records it in every
// database's ledger, waits until every process registered in each
// database's fleet registry holds it, promotes it, records and waits until
// every process has loaded the promotion, then re-seals every column the
// ledgers record and re-wraps every subject key under the new key.
//
// A key added by an earlier run that stopped before promoting it is
// reused, so running Rotate again after an error or a cancellation
// continues where it stopped. The keyring must be loaded from its file
// (keyring.Load), which Rotate saves.
func Rotate(ctx context.Context, kr *keyring.Keyring, dbs []Database, opts RotateOptions) (Rotation, error) {
	var r Rotation
	if err := check(ctx, kr, dbs); err != nil {
		return r, err
	}
	if err := addKey(ctx, kr, opts, &r); err != nil {
		return r, err
	}
	if err := record(ctx, kr, dbs, r.Key); err != nil {
		return r, err
	}
	step("added", time.Now())
	id, began := r.Key, time.Now()
	if err := await(ctx, kr, dbs, opts, "hold key "+id.String(), func(p fleet.Process) bool { return p.Has(id) }); err != nil {
		return r, err
	}
	step("held", began)
	r.Old = kr.Primary().ID
	if err := keyring.NewManager(kr).Promote(ctx, id); err != nil {
		return r, fmt.Errorf("lifecycle: promoting %v: %w", id, err)
	}
	r.Promoted = true
	promoted := kr.Generation()
	if err := record(ctx, kr, dbs, id); err != nil {
		return r, err
	}
	if f := opts.Observer.Promoted; f != nil {
		f(id, r.Old)
	}
	step("promoted", time.Now())
	began = time.Now()
	if err := await(ctx, kr, dbs, opts, fmt.Sprintf("load the promotion (generation %d)", promoted), func(p fleet.Process) bool {
		return p.Generation >= promoted
	}); err != nil {
		return r, err
	}
	step("loaded", began)
	if opts.NoReseal {
		return r, nil
	}
	began = time.Now()
	err := resealAll(ctx, kr, dbs, opts, &r)
	if err == nil {
		step("resealed", began)
	}
	return r, err
}

// resealAll is a rotation's last step: every database's columns and
// subject keys under the new primary, and its row MACs under the new
// integrity epoch.
func resealAll(ctx context.Context, kr *keyring.Keyring, dbs []Database, opts RotateOptions, r *Rotation) error {
	for _, d := range dbs {
		cols, subs, err := moveAll(ctx, kr, d, &opts.Observer)
		r.Columns, r.Subjects = append(r.Columns, cols...), append(r.Subjects, subs...)
		if err != nil {
			return inDB(d.Name, err)
		}
		macs, err := RemacRows(ctx, kr, d)
		r.MACs = append(r.MACs, macs...)
		for _, m := range macs {
			if f := opts.Observer.MACs; f != nil {
				f(m, nil)
			}
		}
		if err != nil {
			return inDB(d.Name, err)
		}
	}
	return nil
}

// step reports a rotation's step, which began at began, to the process's
// observer (package observe).
func step(name string, began time.Time) {
	if o := observe.Get(); o != nil {
		o.Rotation(observe.RotationStep{Step: name, Waited: time.Since(began)})
	}
}

// Reseal moves everything in d under kr's primary key: it re-seals every
// column the ledger records (password hashes excepted: they move as their
// users log in) and re-wraps every subject key. It is what a rotation does
// after its promotion, and what a process that reloaded its keyring runs to
// move what it wrote meanwhile. Resumable: what is current is left alone.
func Reseal(ctx context.Context, kr *keyring.Keyring, d Database, obs Observer) ([]ColumnResult, []SubjectResult, error) {
	if err := check(ctx, kr, []Database{d}); err != nil {
		return nil, nil, err
	}
	cols, subs, err := moveAll(ctx, kr, d, &obs)
	if err != nil {
		return cols, subs, inDB(d.Name, err)
	}
	macs, err := RemacRows(ctx, kr, d)
	for _, m := range macs {
		if obs.MACs != nil {
			obs.MACs(m, nil)
		}
	}
	return cols, subs, inDB(d.Name, err)
}

// addKey adds the rotation's key decrypt-only, or finds the one an earlier
// run added (decrypt-only and newer than the primary).
func addKey(ctx context.Context, kr *keyring.Keyring, opts RotateOptions, r *Rotation) error {
	for _, k := range kr.Keys() {
		if k.State == keyring.DecryptOnly && k.Created.After(kr.Primary().Created) {
			r.Key, r.Continued = k.ID, true
		}
	}
	if r.Key == 0 {
		alg := opts.Algorithm
		if alg == 0 {
			alg = keyring.DefaultAlgorithm
		}
		id, err := keyring.NewManager(kr).Add(ctx, alg)
		if err != nil {
			return fmt.Errorf("lifecycle: adding a key: %w", err)
		}
		r.Key = id
	}
	if f := opts.Observer.Added; f != nil {
		f(r.Key, r.Continued)
	}
	return nil
}

// await waits, in every database, for every registered process to satisfy
// ready.
func await(ctx context.Context, kr *keyring.Keyring, dbs []Database, opts RotateOptions, what string, ready func(fleet.Process) bool) error {
	if opts.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Wait)
		defer cancel()
	}
	obs := opts.Observer
	for _, d := range dbs {
		wo := opts.Fleet
		if obs.Waiting != nil {
			wo.Progress = func(w []fleet.Process) { obs.Waiting(d.Name, what, w) }
		}
		res, err := (&fleet.Registry{DB: d.DB, Dialect: d.Dialect, Ledger: d.ledger()}).Await(ctx, kr, ready, wo)
		if err != nil {
			return inDB(d.Name, err)
		}
		if obs.Ready != nil {
			obs.Ready(d.Name, what, res)
		}
	}
	return nil
}

// moveAll re-seals d's recorded columns and re-wraps its subject keys
// under the primary.
func moveAll(ctx context.Context, kr *keyring.Keyring, d Database, obs *Observer) ([]ColumnResult, []SubjectResult, error) {
	st, err := d.ledger().Verified(ctx, kr)
	if err != nil {
		return nil, nil, err
	}
	if (st == nil || len(st.Columns) == 0) && obs.Skipped != nil {
		obs.Skipped(d.Name, ledger.Column{}, "the ledger records no columns: values in columns it does not record stay under the old key until re-sealed (ward reseal), and retiring it refuses while they do")
	}
	cols, err := resealColumns(ctx, kr, d, obs, func(c ledger.Column) bool {
		if c.Kind == ledger.KindPasswordHash {
			if obs.Skipped != nil {
				obs.Skipped(d.Name, c, "password hashes move to the new pepper as their users log in")
			}
			return false
		}
		return true
	})
	if err != nil {
		return cols, nil, err
	}
	subs, err := resealSubjects(ctx, kr, d, subject.ResealOptions{Workers: 2}, obs)
	return cols, subs, err
}
