package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// A form (package fleetgate) opens for a database in two steps, each a
// compare-and-swap on its authenticated ledger, both taken by any member
// that wants the form at a heartbeat:
//
//  1. the wait begins: the ledger records the form with the registered
//     processes that do not read it (Waiting);
//  2. at later heartbeats, a member reads the ledger, then the registry,
//     then updates the record: a process leaves Waiting when it declares
//     the form or left cleanly; every other live registration (a process
//     that joined since, a stale one, a row that fails its MAC) joins it;
//     a process whose registration vanished stays in it. When Waiting is
//     empty (less those the operator skipped), the form opens — only if
//     its record existed before the registry was read, so that a process
//     that registered before the record was written is in that read.
//
// A process whose registration vanished without its leaving (a database
// writer deleted the row) registers again at its next heartbeat
// (Member.reregister) and joins the waits of forms it lacks; a form that
// opened in between, while the registry could not see it, is reported to
// it (fleetgate.MissingError through the heartbeat's onError).
//
// A process that joins while a form waits adds itself to Waiting if it
// lacks the form (racing an opening by compare-and-swap), and refuses to
// join if the form is open.

// formsText is a registry row's caps column.
func formsText(fs []fleetgate.Form) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}

func parseForms(s string) ([]fleetgate.Form, error) {
	if s == "" {
		return nil, nil
	}
	var out []fleetgate.Form
	for _, f := range strings.Split(s, ",") {
		if !fleetgate.Form(f).Valid() {
			return nil, fmt.Errorf("fleet: malformed form %.40q", f)
		}
		out = append(out, fleetgate.Form(f))
	}
	return out, nil
}

// migrate adds the caps column to a registry created by a release from
// before forms (a missing table is left missing).
func (r *Registry) migrate(ctx context.Context, t string) error {
	if r.migrated.Load() {
		return nil
	}
	_, err := r.DB.ExecContext(ctx, fmt.Sprintf(`SELECT caps FROM %s WHERE 1 = 0`, t))
	if err != nil && !sqltable.Missing(err) {
		_, aerr := r.DB.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN caps TEXT NOT NULL DEFAULT ''`, t))
		if _, again := r.DB.ExecContext(ctx, fmt.Sprintf(`SELECT caps FROM %s WHERE 1 = 0`, t)); again != nil {
			return fmt.Errorf("fleet: adding the forms column to the registry: %w", errors.Join(aerr, again))
		}
		err = nil
	}
	if err == nil {
		r.migrated.Store(true)
	}
	return nil
}

// ledger returns the ledger that records forms.
func (r *Registry) ledger() *ledger.Ledger {
	if r.Ledger == nil {
		r.Ledger = &ledger.Ledger{DB: r.DB, Dialect: r.Dialect}
	}
	return r.Ledger
}

// joinForms runs once the member's row is in the registry: it adds the
// process to the waits of forms it lacks, and fails with a
// [*fleetgate.MissingError] naming the opened forms it lacks.
func (m *Member) joinForms(ctx context.Context) error {
	if m.r.Gate == nil {
		return nil // a process without a gate reads no form: it blocks every wait, and is not checked
	}
	can := m.r.Gate.Declared()
	lg := m.r.ledger()
	st, err := lg.Verified(ctx, m.kr)
	if err != nil {
		return fmt.Errorf("fleet: reading the database's forms: %w", err)
	}
	lacks := func(f ledger.Form) bool { return !f.IsOpen() && !slices.Contains(can, f.Name) }
	var opened []fleetgate.Opened
	if st != nil && slices.ContainsFunc(st.Forms, lacks) {
		err = lg.ChangeForms(ctx, m.kr, func(fs []ledger.Form) []ledger.Form {
			for i := range fs {
				if lacks(fs[i]) {
					fs[i].Waiting = append(fs[i].Waiting, m.p.ID)
				}
			}
			return fs
		})
		if err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
			return fmt.Errorf("fleet: joining the waits of forms: %w", err)
		}
		if st, err = lg.Verified(ctx, m.kr); err != nil {
			return fmt.Errorf("fleet: reading the database's forms: %w", err)
		}
	}
	if st != nil {
		for _, f := range st.Forms {
			if f.IsOpen() {
				opened = append(opened, f.OpenedAs())
			}
		}
	}
	if err := m.r.Gate.Missing(opened); err != nil {
		return err
	}
	m.r.Gate.SetOpen(names(opened))
	if st != nil {
		m.r.Gate.SetMarks(st.Marks)
	}
	return nil
}

func names(os []fleetgate.Opened) []fleetgate.Form {
	out := make([]fleetgate.Form, len(os))
	for i, o := range os {
		out[i] = o.Form
	}
	return out
}

// advance takes one step towards opening each form the gate wants (see
// the comment at the top of this file) and tells the gate what is open.
func (m *Member) advance(ctx context.Context) error {
	g := m.r.Gate
	want := g.Wanted()
	if len(want) == 0 {
		return m.refreshMarks(ctx)
	}
	lg := m.r.ledger()
	st, err := lg.Verified(ctx, m.kr)
	if err != nil {
		return fmt.Errorf("fleet: reading the database's forms: %w", err)
	}
	var known []fleetgate.Form // records that exist before the registry is read
	expect := 0
	if st != nil {
		expect = st.Expect
		for _, f := range st.Forms {
			known = append(known, f.Name)
		}
	}
	ps, err := m.r.List(ctx, m.kr)
	if err != nil {
		return err
	}
	var opened []fleetgate.Form
	now := time.Now().UnixMilli()
	err = lg.ChangeForms(ctx, m.kr, func(fs []ledger.Form) []ledger.Form {
		for _, w := range want {
			fs = step(fs, w, ps, m.kr.ID(), slices.Contains(known, w) && enough(ps, w, m.kr.ID(), expect), now)
		}
		opened = opened[:0]
		for _, f := range fs {
			if f.IsOpen() {
				opened = append(opened, f.Name)
			}
		}
		return fs
	})
	if err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) { // written; the anchor catches up later
		return fmt.Errorf("fleet: advancing forms: %w", err)
	}
	g.SetOpen(opened)
	if st != nil {
		g.SetMarks(st.Marks)
	}
	return nil
}

// marksEvery is how often a member whose gate wants no form reads the
// ledger's marks again (a job that moved every row of a table records a
// mark: from then on the table's older forms are refused).
const marksEvery = 30 * time.Second

// refreshMarks tells the gate the ledger's marks, at most every marksEvery.
func (m *Member) refreshMarks(ctx context.Context) error {
	if m.r.Gate == nil || time.Since(m.marked) < marksEvery {
		return nil
	}
	st, err := m.r.ledger().Verified(ctx, m.kr)
	if err != nil {
		return fmt.Errorf("fleet: reading the database's marks: %w", err)
	}
	if st != nil {
		m.r.Gate.SetMarks(st.Marks)
	}
	m.marked = time.Now()
	return nil
}

// enough reports whether at least expect live registered processes read
// w (always, when expect is 0): the operator's count of a fleet whose
// older processes never registered.
func enough(ps []Process, w fleetgate.Form, keyringID string, expect int) bool {
	n := 0
	for _, p := range ps {
		if p.Keyring == keyringID && !p.Exited && !p.Tampered && p.Can(w) && time.Since(p.Seen) < ExpectFresh {
			n++
		}
	}
	return n >= expect
}

// ExpectFresh is how recent a heartbeat must be for its process to count
// towards the fleet size the operator expects (ward fleet --expect).
const ExpectFresh = time.Minute

// step advances form w's record in fs by one read of the registry, ps.
// mayOpen is false when w's record did not exist before ps was read.
func step(fs []ledger.Form, w fleetgate.Form, ps []Process, keyringID string, mayOpen bool, now int64) []ledger.Form {
	i := slices.IndexFunc(fs, func(f ledger.Form) bool { return f.Name == w })
	if i >= 0 && fs[i].IsOpen() {
		return fs
	}
	if i < 0 {
		fs = append(fs, ledger.Form{Name: w, Release: fleetgate.ReleaseOf(w), Since: now})
		i, mayOpen = len(fs)-1, false
	}
	f := &fs[i]
	waiting := map[string]bool{}
	for _, id := range f.Waiting {
		waiting[id] = true
	}
	for _, p := range ps {
		if p.Keyring != keyringID {
			continue
		}
		switch {
		case p.Tampered:
			waiting[p.ID] = true
		case p.Exited || p.Can(w):
			delete(waiting, p.ID)
		default:
			waiting[p.ID] = true
		}
	}
	f.Waiting = f.Waiting[:0]
	for id := range waiting {
		f.Waiting = append(f.Waiting, id)
	}
	slices.Sort(f.Waiting)
	blocking := slices.DeleteFunc(slices.Clone(f.Waiting), func(id string) bool { return slices.Contains(f.Skipped, id) })
	if mayOpen && len(blocking) == 0 {
		f.Opened = now
	}
	return fs
}

// FormsState reads the database's form records from its verified ledger,
// for an operator (ward fleet).
func (r *Registry) FormsState(ctx context.Context, kr *keyring.Keyring) ([]ledger.Form, error) {
	st, err := r.ledger().Verified(ctx, kr)
	if err != nil || st == nil {
		return nil, err
	}
	return st.Forms, nil
}

// SkipForms lets every form still waiting open without the named
// processes (by ID, or "host:pid" of a registered process): the
// operator's statement that they will never read a form again (killed,
// their host gone). It returns the forms it changed. A name that is
// neither a registered process nor one a form waits for is refused with an
// [*UnknownProcessError] before anything changes: a typo never reads as
// done.
func (r *Registry) SkipForms(ctx context.Context, kr *keyring.Keyring, skip []string) ([]fleetgate.Form, error) {
	ps, err := r.List(ctx, kr)
	if err != nil {
		return nil, err
	}
	st, err := r.ledger().Verified(ctx, kr)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the database's forms: %w", err)
	}
	ids := map[string]bool{}
	var unknown []string
	for _, s := range skip {
		found := waitedFor(st, s)
		for _, p := range ps {
			if p.ID == s || p.Host+":"+fmt.Sprint(p.PID) == s {
				ids[p.ID], found = true, true
			}
		}
		if !found {
			unknown = append(unknown, s)
		}
		ids[s] = true
	}
	if len(unknown) > 0 {
		return nil, &UnknownProcessError{Names: unknown}
	}
	var changed []fleetgate.Form
	err = r.ledger().ChangeForms(ctx, kr, func(fs []ledger.Form) []ledger.Form {
		changed = changed[:0]
		for i := range fs {
			if fs[i].IsOpen() {
				continue
			}
			for _, id := range fs[i].Waiting {
				if ids[id] && !slices.Contains(fs[i].Skipped, id) {
					fs[i].Skipped = append(fs[i].Skipped, id)
					changed = append(changed, fs[i].Name)
				}
			}
		}
		return fs
	})
	return slices.Compact(changed), err
}

// waitedFor reports whether a form of st still waits for process id.
func waitedFor(st *ledger.State, id string) bool {
	return st != nil && slices.ContainsFunc(st.Forms, func(f ledger.Form) bool { return !f.IsOpen() && slices.Contains(f.Waiting, id) })
}

// UnknownProcessError names what an operator asked to skip that is neither
// a registered process (by ID or host:pid) nor a process a form waits for.
type UnknownProcessError struct {
	Names []string
}

func (e *UnknownProcessError) Error() string {
	q := make([]string, len(e.Names))
	for i, n := range e.Names {
		q[i] = strconv.Quote(n)
	}
	return fmt.Sprintf("fleet: no registered process, and no process a form waits for, is named %s: nothing was skipped", strings.Join(q, ", "))
}

// FormNotReadyError means an operator's job would write a form that not
// every registered process reads yet.
type FormNotReadyError struct {
	Form fleetgate.Form
	// Waiting are the processes that do not read it (IDs, or as
	// Process.String for live registrations).
	Waiting []string
}

func (e *FormNotReadyError) Error() string {
	return fmt.Sprintf("fleet: not every process reads %s yet (waiting for %s): deploy a release that reads it everywhere, wait until 'ward fleet' says it is open, or name a process that will never read it with 'ward fleet --skip-form'",
		e.Form, strings.Join(e.Waiting, ", "))
}

// Ready reports whether a job may write form f into the database: nil when
// the ledger records f open, or when no form-aware registered process
// (one that declares any form) lacks it and no wait for f is under way; a
// [*FormNotReadyError] otherwise. It also returns the live registered
// processes that declare no form at all (from a release before forms, or
// without a gate), of which ward cannot tell what they read.
func (r *Registry) Ready(ctx context.Context, kr *keyring.Keyring, f fleetgate.Form) (unknown []Process, err error) {
	st, err := r.ledger().Verified(ctx, kr)
	if err != nil {
		return nil, err
	}
	if st != nil {
		for _, rec := range st.Forms {
			if rec.Name == f && rec.IsOpen() {
				return nil, nil
			}
			if rec.Name == f {
				return nil, &FormNotReadyError{Form: f, Waiting: rec.Waiting}
			}
		}
	}
	ps, err := r.List(ctx, kr)
	if err != nil {
		return nil, err
	}
	var lacking []string
	for _, p := range ps {
		switch {
		case p.Keyring != kr.ID() || p.Exited:
		case p.Tampered:
			lacking = append(lacking, p.String()+" (its row fails its MAC)")
		case len(p.Forms) == 0:
			unknown = append(unknown, p)
		case !p.Can(f):
			lacking = append(lacking, p.String())
		}
	}
	if lacking != nil {
		return unknown, &FormNotReadyError{Form: f, Waiting: lacking}
	}
	return unknown, nil
}

// WriteGate returns the forms gate of a writer that is not a registered
// process — a re-sealing job, the command line — for a column: it allows
// the forms in allowed (which the caller checked itself, with [Registry.Ready]),
// and ciphertext v4 only when every registered live process reads it. A
// process registered without forms (a release from before them) reads
// only v3, so it keeps the writer on v3 too; so does a ledger that does
// not verify (a recovery runs on one that went back): v3 is what every
// release reads.
func (r *Registry) WriteGate(ctx context.Context, kr *keyring.Keyring, allowed ...fleetgate.Form) *fleetgate.Gate {
	g := fleetgate.New()
	open := slices.Clone(allowed)
	v4 := fleetgate.Ciphertext(4)
	if unknown, err := r.Ready(ctx, kr, v4); err == nil && len(unknown) == 0 {
		open = append(open, v4)
	}
	g.SetOpen(open)
	return g
}
