package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// ResealSubjects re-wraps every subject key of every namespace in d that
// is not under kr's primary key (subject.Store.Reseal), so that an older keyring
// key can be retired. opts.Shard and opts.Shards split the subjects
// between processes. It is resumable: a key already under the primary is
// left alone.
func ResealSubjects(ctx context.Context, kr *keyring.Keyring, d Database, opts subject.ResealOptions, obs Observer) ([]SubjectResult, error) {
	if err := check(ctx, kr, []Database{d}); err != nil {
		return nil, err
	}
	out, err := resealSubjects(ctx, kr, d, opts, &obs)
	return out, inDB(d.Name, err)
}

func resealSubjects(ctx context.Context, kr *keyring.Keyring, d Database, opts subject.ResealOptions, obs *Observer) ([]SubjectResult, error) {
	stores, err := Stores(ctx, kr, d)
	if err != nil {
		return nil, err
	}
	var out []SubjectResult
	for _, s := range stores {
		st, err := s.Reseal(ctx, opts)
		r := SubjectResult{DB: d.Name, Namespace: s.Namespace(), Reseal: st}
		out = append(out, r)
		if obs.Subjects != nil {
			obs.Subjects(r, err)
		}
		if err != nil {
			return out, fmt.Errorf("re-wrapping the subject keys of %s: %w", s.Namespace(), err)
		}
	}
	return out, nil
}

// RekeySubjects gives every subject of every namespace in d whose key the
// keyring wraps a new key version (subject.Store.RotateAll), then re-seals
// each column the ledger records as sealed per subject in that namespace
// under its subjects' newest versions. Private subjects keep their key.
// Older versions stay, so nothing is lost; run it again after an
// interruption.
func RekeySubjects(ctx context.Context, kr *keyring.Keyring, d Database, obs Observer) ([]SubjectResult, []ColumnResult, error) {
	return RekeyNamespaces(ctx, kr, d, RekeyOptions{Observer: obs})
}

// RekeyOptions tune [RekeyNamespaces].
type RekeyOptions struct {
	// Namespaces limits the re-key to these namespaces (every namespace of
	// the database when empty).
	Namespaces []string
	// Settle is how long to wait between giving the subjects new versions
	// and re-sealing: the longest subject.Config.TTL among the fleet's
	// processes, each of which may seal under a subject's older version
	// until its cache of that subject expires. A value sealed so after the
	// re-seal passed it stays under the older version.
	Settle time.Duration
	// NoReseal gives the new versions and re-seals nothing.
	NoReseal bool
	// Revocation is the ID of the revoked grant the re-key is for: each
	// namespace's key floor is raised once for it
	// (ledger.Ledger.RaiseKeyFloor), before its new versions are made, so
	// that no store seals under a version the grant's holder may have
	// kept, even after a database writer deletes the new ones.
	Revocation string
	Observer   Observer
}

// RekeyNamespaces is RekeySubjects for the namespaces o names, waiting
// o.Settle before the re-seal: what a grant's revocation runs, so that no
// value sealed afterwards is under a subject key whose column keys the
// grant's holder may have kept.
func RekeyNamespaces(ctx context.Context, kr *keyring.Keyring, d Database, o RekeyOptions) ([]SubjectResult, []ColumnResult, error) {
	if err := check(ctx, kr, []Database{d}); err != nil {
		return nil, nil, err
	}
	stores, err := Stores(ctx, kr, d)
	if err != nil {
		return nil, nil, inDB(d.Name, err)
	}
	var subs []SubjectResult
	var rekeyed []string
	for _, s := range stores {
		if len(o.Namespaces) > 0 && !slices.Contains(o.Namespaces, s.Namespace()) {
			continue
		}
		if o.Revocation != "" {
			if _, err := d.ledger().RaiseKeyFloor(ctx, kr, o.Revocation, s.Namespace()); err != nil {
				return subs, nil, inDB(d.Name, fmt.Errorf("raising the key floor of %s: %w", s.Namespace(), err))
			}
		}
		st, err := s.RotateAll(ctx)
		r := SubjectResult{DB: d.Name, Namespace: s.Namespace(), Rekey: st}
		subs = append(subs, r)
		if o.Observer.Subjects != nil {
			o.Observer.Subjects(r, err)
		}
		if err != nil {
			return subs, nil, inDB(d.Name, fmt.Errorf("rotating the keys of %s: %w", s.Namespace(), err))
		}
		rekeyed = append(rekeyed, s.Namespace())
	}
	if o.NoReseal || len(rekeyed) == 0 {
		return subs, nil, nil
	}
	if err := sleep(ctx, o.Settle); err != nil {
		return subs, nil, inDB(d.Name, err)
	}
	cols, err := resealColumns(ctx, kr, d, &o.Observer, func(c ledger.Column) bool { return c.Subject != "" && slices.Contains(rekeyed, c.Namespace) })
	return subs, cols, inDB(d.Name, err)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
