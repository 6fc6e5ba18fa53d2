package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// RecoverOptions configure [Recover].
type RecoverOptions struct {
	// Journals are the forget journals' folders (package forgetlog): every
	// forget they record is applied again.
	Journals []string
	// AcceptLoss lets the recovery finish although forgets the anchor
	// counts are neither in the database nor in a journal (those subjects'
	// data is back): without it, Recover refuses with [ErrUnrecoverable].
	AcceptLoss bool
	// Confirm, if set, is shown the plan before anything is written;
	// returning false stops the recovery with [ErrNotConfirmed].
	Confirm func(RecoveryPlan) bool
}

// Errors of Recover.
var (
	// ErrUnrecoverable means something the anchor proves cannot be
	// restored: forgets no journal records (those subjects' keys and data
	// are back), or values still under a key retired since. Run with
	// AcceptLoss to bring the service back anyway; the plan names each.
	ErrUnrecoverable = errors.New("lifecycle: the recovery cannot restore everything")
	// ErrNotConfirmed means Confirm declined.
	ErrNotConfirmed = errors.New("lifecycle: the recovery was not confirmed")
)

// RecoveryPlan is what a recovery found and will do.
type RecoveryPlan struct {
	// Database is the ledger's database ID.
	Database string `json:"database"`
	// Behind is what the keyring file's anchor proves the database lost.
	Behind ledger.Behind `json:"behind"`
	// Namespaces are the forgets of each namespace of subject keys.
	Namespaces []NamespacePlan `json:"namespaces"`
	// Recheck are the columns ("table.column") whose values may have gone
	// back to an older form: each needs its census (--check) again. With
	// nothing to recover, those an earlier recovery left unchecked.
	Recheck []string `json:"recheck"`
	// Unopenable names what still uses a key the keyring no longer holds
	// (retired in the part the database lost: the database went back to
	// before the values moved off it). Those values cannot open again;
	// Recover refuses unless AcceptLoss.
	Unopenable []Reference `json:"unopenable,omitempty"`
	// JobLocks is how many job locks the database holds: those of jobs
	// that ran against the copy it went back from (no job starts on a
	// database its ledger refuses). The recovery releases them, so the
	// jobs can be run again at once.
	JobLocks int `json:"job_locks"`
	// JournalFiles, JournalInvalid and JournalOther describe the journals
	// read: files, records refused (torn or failing their MAC), and valid
	// records of other databases.
	JournalFiles   int `json:"journal_files"`
	JournalInvalid int `json:"journal_invalid"`
	JournalOther   int `json:"journal_other"`
}

// NamespacePlan is the forgets of one namespace.
type NamespacePlan struct {
	Namespace string `json:"namespace"`
	// Anchored is how many forgets the keyring file's anchor counts;
	// Counted how many the database's ledger counts.
	Anchored uint64 `json:"anchored"`
	Counted  uint64 `json:"counted"`
	// Tombstones is how many valid tombstones the database holds.
	Tombstones int `json:"tombstones"`
	// Journaled is how many distinct subjects the journals record.
	Journaled int `json:"journaled"`
	// Reapply is how many subjects the journals record that still hold a
	// key or a session (their forget was lost): forgotten again.
	Reapply int `json:"reapply"`
	// Recycled is how many subjects the journals record whose keys are
	// all of versions the records do not name: keys created after the
	// forget, for a new subject that received the forgotten one's ID
	// (after a restore, a sequence or rowid starts again). They are not
	// forgotten; their forget is accounted for by its record.
	Recycled int `json:"recycled,omitempty"`
	// Lost is how many forgets the anchor counts that neither a tombstone
	// nor a journal record accounts for: by identity, those on the
	// anchor's tally past the ledger's that no record names (Settlement).
	Lost uint64 `json:"lost"`
	// Settlement says how the journals' records were told apart: which
	// committed, which may have, which did not (and count for nothing).
	Settlement forgetlog.Settlement `json:"settlement"`

	reapply    []string
	tombstoned int // tombstones after the recovery
}

// NeedsRecovery reports whether the plan has anything to do: the ledger
// is behind its anchor, or a journaled subject holds a key again. (A
// counter below the anchor's alone is what an earlier recovery left where
// the journals proved a forget left nothing to tombstone.)
func (p RecoveryPlan) NeedsRecovery() bool {
	b := p.Behind
	return b.Writes > 0 || len(b.Marks) > 0 || len(b.Retired) > 0 ||
		slices.ContainsFunc(p.Namespaces, func(n NamespacePlan) bool { return n.Reapply > 0 })
}

// Lost sums the forgets lost in every namespace.
func (p RecoveryPlan) Lost() uint64 {
	var n uint64
	for _, ns := range p.Namespaces {
		n += ns.Lost
	}
	return n
}

// Recovered is what Recover did.
type Recovered struct {
	Plan RecoveryPlan
	// Reapplied is how many subjects were forgotten again.
	Reapplied int
	// State is the ledger as recovered; nil when there was nothing to do.
	State *ledger.State
}

// Recover brings back a database that went back in time (a failover that
// lost its last commits, a restore from backup, or a database writer's
// rollback: they look alike), without editing the keyring file. It reads
// the ledger authenticated by kr (the keyring's custody: its master key or
// KMS) and what the keyring file's anchor proves was lost; reads the
// journals and forgets again every recorded subject that still holds a
// key; refuses ([ErrUnrecoverable]) when the anchor counts forgets that
// neither the database nor a journal accounts for, unless AcceptLoss;
// asks Confirm; then re-anchors the ledger ([ledger.Ledger.Recover]): no
// retired key re-enabled, no key or mark dropped, every recorded column to
// be checked again, and the recovery recorded. Run it again after a
// failure: each step is idempotent.
func Recover(ctx context.Context, kr *keyring.Keyring, d Database, opts RecoverOptions) (Recovered, error) {
	lg := d.ledger()
	in, err := lg.Inspect(ctx, kr)
	if err != nil {
		return Recovered{}, inDB(d.Name, err)
	}
	plan := RecoveryPlan{Database: in.State.Database, Behind: in.Behind}
	var records *forgetlog.Records
	if len(opts.Journals) > 0 {
		if records, err = forgetlog.Read(kr, in.State.Database, opts.Journals...); err != nil {
			return Recovered{}, err
		}
		plan.JournalFiles, plan.JournalInvalid, plan.JournalOther = records.Files, records.Invalid, records.Other
	}
	stores, err := recoveryStores(ctx, kr, d, in, records)
	if err != nil {
		return Recovered{}, inDB(d.Name, err)
	}
	for _, s := range stores {
		np, err := planNamespace(ctx, s, in, records)
		if err != nil {
			return Recovered{}, inDB(d.Name, err)
		}
		plan.Namespaces = append(plan.Namespaces, np)
	}
	plan.Recheck = recheck(in)
	if plan.JobLocks, err = reseal.HeldLocks(ctx, d.DB); err != nil {
		return Recovered{}, inDB(d.Name, err)
	}
	for _, id := range in.Behind.Retired {
		refs, err := referencesIn(ctx, kr, d, in.State, id, false)
		if err != nil {
			return Recovered{}, inDB(d.Name, err)
		}
		plan.Unopenable = append(plan.Unopenable, refs...)
	}
	out := Recovered{Plan: plan}
	if !plan.NeedsRecovery() {
		out.Plan.Recheck = in.State.Recheck // what an earlier recovery left to check
		return out, nil
	}
	if (plan.Lost() > 0 || len(plan.Unopenable) > 0) && !opts.AcceptLoss {
		return out, fmt.Errorf("%w: %s", ErrUnrecoverable, lostSummary(plan))
	}
	if opts.Confirm != nil && !opts.Confirm(plan) {
		return out, ErrNotConfirmed
	}
	counters := map[string]uint64{}
	for i, np := range plan.Namespaces {
		for _, sub := range np.reapply {
			if _, _, err := stores[i].Reapply(ctx, in.State.Database, sub, at(records, np.Namespace, sub)); err != nil {
				return out, inDB(d.Name, err)
			}
			out.Reapplied++
		}
		counters[subject.ForgetCounter(np.Namespace)] = uint64(np.tombstoned)
	}
	if out.State, err = lg.Recover(ctx, kr, ledger.RecoverOptions{Counters: counters, Summary: summary(plan)}); err != nil {
		return out, inDB(d.Name, err)
	}
	_, err = reseal.ReleaseLocks(ctx, d.DB)
	return out, inDB(d.Name, err)
}

// recoveryStores opens the store of every namespace the database, its
// ledger, the anchor or the journals name.
func recoveryStores(ctx context.Context, kr *keyring.Keyring, d Database, in ledger.Inspection, records *forgetlog.Records) ([]*subject.Store, error) {
	names, err := subject.Namespaces(ctx, d.DB, d.Dialect, "")
	if err != nil {
		return nil, err
	}
	names = append(names, subject.CountedNamespaces(in.State)...)
	names = append(names, subject.CountedNamespaces(&ledger.State{Counters: in.Anchor.Counters})...)
	if records != nil {
		names = append(names, records.Namespaces()...)
	}
	slices.Sort(names)
	// The ledger is behind its anchor: its authenticated state, with the
	// anchor's marks (kept once recorded), stands for it.
	verified := *in.State
	verified.Marks = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(in.State.Marks), in.Anchor.Marks...))))
	var out []*subject.Store
	for _, ns := range slices.Compact(names) {
		s, err := subject.Open(ctx, subject.Config{DB: d.DB, Dialect: d.Dialect, Keyring: kr, Ledger: d.ledger(), Namespace: ns, Verified: &verified})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// planNamespace counts a namespace's forgets and finds the subjects the
// journals record that still hold a key.
func planNamespace(ctx context.Context, s *subject.Store, in ledger.Inspection, records *forgetlog.Records) (NamespacePlan, error) {
	ns := s.Namespace()
	np := NamespacePlan{Namespace: ns, Anchored: in.Anchor.Counters[subject.ForgetCounter(ns)], Counted: in.State.Counters[subject.ForgetCounter(ns)]}
	tombstoned, _, err := s.Tombstoned(ctx)
	if err != nil {
		return np, err
	}
	np.Tombstones = len(tombstoned)
	matched := 0 // journaled subjects with a valid tombstone, after the recovery
	ledgerTally, anchorTally := in.State.Tally(subject.ForgetCounter(ns)), in.Anchor.Tally(subject.ForgetCounter(ns))
	np.Settlement = records.Settle(ns, ledgerTally, anchorTally) // no journal: every forget past the ledger's tally is lost
	if records != nil {
		np.Journaled = records.Count(ns)
		for _, sub := range tombstoned {
			if _, ok := records.Forgotten(ns, sub); ok {
				matched++
			}
		}
		forgotten, recycled, err := s.Journaled(ctx, records)
		if err != nil {
			return np, err
		}
		np.reapply, np.Recycled = forgotten, len(recycled)
		for _, sub := range forgotten {
			if !slices.Contains(tombstoned, sub) {
				matched++
				np.tombstoned++
			}
		}
	}
	np.Reapply = len(np.reapply)
	np.tombstoned += np.Tombstones
	np.Lost = lost(np, matched)
	return np, nil
}

// lost is how many forgets of a namespace the anchor proves and nothing
// accounts for. By identity (the journals settled against the tallies):
// those of the anchor's chain past the ledger's that no record names. By
// count (a namespace counted before tallies): the anchor's count less the
// tombstones after the recovery and the journaled subjects without one (a
// journaled subject with neither a key nor a tombstone left nothing
// behind to forget: its record accounts for it).
func lost(np NamespacePlan, matched int) uint64 {
	if np.Settlement.ByIdentity {
		return np.Settlement.Lost
	}
	accounted := uint64(np.tombstoned + np.Journaled - matched)
	return np.Anchored - min(np.Anchored, accounted)
}

// at is when the journals say a subject was forgotten.
func at(records *forgetlog.Records, ns, sub string) time.Time {
	t, _ := records.Forgotten(ns, sub)
	return t
}

// recheck lists every column the ledger or anchor names, but password
// hashes, which no job moves.
func recheck(in ledger.Inspection) []string {
	var out []string
	for _, c := range in.State.Columns {
		if c.Kind != ledger.KindPasswordHash {
			out = append(out, c.Table+"."+c.Column)
		}
	}
	out = append(out, in.Behind.Columns...)
	slices.Sort(out)
	return slices.Compact(out)
}

// summary describes a plan in one line, for the ledger's record.
func summary(p RecoveryPlan) string {
	parts := []string{fmt.Sprintf("%d ledger writes lost", p.Behind.Writes)}
	for _, np := range p.Namespaces {
		parts = append(parts, fmt.Sprintf("%s: %d forgotten again, %d lost", printable.String(np.Namespace), np.Reapply, np.Lost))
	}
	if len(p.Behind.Retired) > 0 {
		parts = append(parts, fmt.Sprintf("%d keys recorded retired", len(p.Behind.Retired)))
	}
	return strings.Join(parts, "; ")
}

// lostSummary names what cannot be restored.
func lostSummary(p RecoveryPlan) string {
	var parts []string
	for _, r := range p.Unopenable {
		parts = append(parts, r.What+" (a key retired since, which nothing can bring back)")
	}
	for _, np := range p.Namespaces {
		if np.Lost > 0 {
			parts = append(parts, fmt.Sprintf("%d in %s (the anchor counts %d, the database and journals account for %d)", np.Lost, printable.String(np.Namespace), np.Anchored, np.Anchored-np.Lost))
		}
	}
	return strings.Join(parts, ", ") + ": give every journal folder, or accept the loss"
}
