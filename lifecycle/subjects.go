package lifecycle

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Rewrap re-wraps every subject key of every namespace in d that is not
// under kr's primary key (subject.Store.Rewrap), so that an older keyring
// key can be retired. opts.Shard and opts.Shards split the subjects
// between processes. It is resumable: a key already under the primary is
// left alone.
func Rewrap(ctx context.Context, kr *keyring.Keyring, d Database, opts subject.RewrapOptions, obs Observer) ([]SubjectResult, error) {
	if err := check(ctx, kr, []Database{d}); err != nil {
		return nil, err
	}
	out, err := rewrapDatabase(ctx, kr, d, opts, &obs)
	return out, inDB(d.Name, err)
}

func rewrapDatabase(ctx context.Context, kr *keyring.Keyring, d Database, opts subject.RewrapOptions, obs *Observer) ([]SubjectResult, error) {
	stores, err := Stores(ctx, kr, d)
	if err != nil {
		return nil, err
	}
	var out []SubjectResult
	for _, s := range stores {
		st, err := s.Rewrap(ctx, opts)
		r := SubjectResult{DB: d.Name, Namespace: s.Namespace(), Rewrap: st}
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
	if err := check(ctx, kr, []Database{d}); err != nil {
		return nil, nil, err
	}
	stores, err := Stores(ctx, kr, d)
	if err != nil {
		return nil, nil, inDB(d.Name, err)
	}
	var subs []SubjectResult
	var cols []ColumnResult
	for _, s := range stores {
		st, err := s.RotateAll(ctx)
		r := SubjectResult{DB: d.Name, Namespace: s.Namespace(), Rekey: st}
		subs = append(subs, r)
		if obs.Subjects != nil {
			obs.Subjects(r, err)
		}
		if err != nil {
			return subs, cols, inDB(d.Name, fmt.Errorf("rotating the keys of %s: %w", s.Namespace(), err))
		}
		ns := s.Namespace()
		done, err := resealColumns(ctx, kr, d, &obs, func(c ledger.Column) bool { return c.Subject != "" && c.Namespace == ns })
		cols = append(cols, done...)
		if err != nil {
			return subs, cols, inDB(d.Name, err)
		}
	}
	return subs, cols, nil
}
