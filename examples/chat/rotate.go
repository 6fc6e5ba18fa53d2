package chat

import (
	"context"
	"fmt"
	"io"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/keyring"
)

// Rotate adds a new primary key and re-encrypts every encrypted column
// under it. The key is saved (locked, compare-and-swap, fsync) as
// decrypt-only, recorded in the database's ledger, and only then promoted
// (saved again): no value is ever sealed under a key that is not both on
// disk and in the ledger. It is safe while another process (a running
// service) uses the same files: that one keeps sealing under the old key
// until it reloads (SIGHUP), and its values are then re-encrypted.
func (s *Service) Rotate(ctx context.Context, out io.Writer) error {
	s.rotMu.Lock()
	defer s.rotMu.Unlock()
	if err := s.reload(ctx); err != nil {
		return err
	}
	id, err := s.kr.Add(ctx, keyring.AES256GCM)
	if err != nil {
		return err
	}
	if err := s.ledger.Record(ctx, s.kr, id); err != nil {
		return err
	}
	if err := s.kr.Promote(ctx, id); err != nil {
		return err
	}
	if err := s.ledger.Record(ctx, s.kr); err != nil {
		return err
	}
	fmt.Fprintf(out, "primary key is now %v (keyring %s, generation %d)\n", id, s.kr.ID(), s.kr.Generation())
	return s.reencrypt(ctx, out)
}

// Reload reads the keyring file again (refusing an older generation or
// another keyring) and re-encrypts every column under its primary key.
func (s *Service) Reload(ctx context.Context, out io.Writer) error {
	s.rotMu.Lock()
	defer s.rotMu.Unlock()
	if err := s.reload(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "keyring %s at generation %d, primary key %v\n", s.kr.ID(), s.kr.Generation(), s.kr.Primary().ID)
	return s.reencrypt(ctx, out)
}

func (s *Service) reload(ctx context.Context) error {
	if err := s.kr.Reload(ctx); err != nil {
		return err
	}
	if err := s.ledger.Check(ctx, s.kr); err != nil {
		return err
	}
	return s.ledger.Record(ctx, s.kr)
}

func (s *Service) reencrypt(ctx context.Context, out io.Writer) error {
	if _, ward := s.store.codec.(FieldCodec); !ward {
		return nil // values another codec stored are not ward ciphertexts
	}
	for _, col := range []*field.Column{s.store.cols.body, s.store.cols.title, s.store.cols.email} {
		st, err := (&reseal.Job{DB: s.db, Dialect: s.dialect, Column: col, Key: "id"}).Run(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s.%s: %d re-encrypted under %v, %d already up to date\n", col.Table(), col.Name(), st.Reencrypted, s.kr.Primary().ID, st.Current)
	}
	// The users' own keys are wrapped by keyring keys: re-wrapped too, so
	// that the old keyring key can be retired.
	st, err := s.store.subjects.Rewrap(ctx, subject.RewrapOptions{Workers: 2})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "user keys: %d re-wrapped under %v, %d already up to date, %d held by their users\n", st.Rewrapped, s.kr.Primary().ID, st.Current, st.UserHeld)
	return nil
}
