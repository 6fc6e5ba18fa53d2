package chat

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// rotateWait bounds each of a rotation's waits for the fleet.
const rotateWait = 2 * time.Minute

// Rotate rotates the keyring across every running instance of the service
// (lifecycle.Rotate): the new key is added decrypt-only and recorded in
// the ledger, promoted once every instance registered in the database
// holds it, and every column the ledger records is re-sealed under it
// (users' own keys re-wrapped). Instances pick the key up on their own
// (they watch the keyring file); one that does not within two minutes
// holds the promotion back, named in the error, and running Rotate again
// continues.
func (s *Service) Rotate(ctx context.Context, out io.Writer) error {
	s.rotMu.Lock()
	defer s.rotMu.Unlock()
	if err := s.reload(ctx); err != nil {
		return err
	}
	r, err := lifecycle.Rotate(ctx, s.kr, []lifecycle.Database{s.database()}, lifecycle.RotateOptions{
		Algorithm: keyring.AES256GCM, Wait: rotateWait, Observer: s.printer(out),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "primary key is now %v (keyring %s, generation %d)\n", r.Key, s.kr.ID(), s.kr.Generation())
	return s.rekeyEmails(ctx, out)
}

// rekeyEmails moves the users' blind index to the current integrity epoch
// (lifecycle.Reindex: every instance writes both columns, the new one
// is filled from the sealed addresses, every instance writes it alone,
// the old one is cleared), so that the old key can be retired and a copy
// of the keyring file from before tests no guess against the index. Log-in
// and sign-up keep working throughout; run again, it continues.
func (s *Service) rekeyEmails(ctx context.Context, out io.Writer) error {
	obs := s.printer(out)
	obs.Waiting = func(string, string, []fleet.Process) {
		// This instance follows at once: no wait for its own poll.
		if err := s.store.emails.Refresh(ctx); err == nil && s.member != nil {
			s.member.Beat(ctx)
		}
	}
	obs.Column = func(c lifecycle.ColumnResult, _ error) {
		fmt.Fprintf(out, "%s.%s: %d blind indexes computed under the new epoch\n", c.Column.Table, c.Column.Column, c.Stats.Indexed)
	}
	res, err := lifecycle.Reindex(ctx, s.kr, s.database(), emailIndex.Table, emailIndex.Column, "", lifecycle.ReindexOptions{Wait: rotateWait, Observer: obs})
	if err != nil {
		return fmt.Errorf("chat: the key rotation finished, but re-keying the blind index of users.email did not (run the rotation again: it continues the re-key): %w", err)
	}
	if err := s.store.emails.Refresh(ctx); err != nil { // the switch, at once
		return err
	}
	if !res.Current {
		cur, _ := res.Index.Columns()
		fmt.Fprintf(out, "blind index of users.email moved to epoch %v, in %s\n", res.To, cur)
	}
	return nil
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
	_, _, err := lifecycle.Reseal(ctx, s.kr, s.database(), s.printer(out))
	return err
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

// database is the service's database as the lifecycle calls take it.
func (s *Service) database() lifecycle.Database {
	return lifecycle.Database{Name: "chat", DB: s.db, Dialect: s.dialect, Ledger: s.ledger}
}

// printer prints what a rotation or a re-seal did.
func (s *Service) printer(out io.Writer) lifecycle.Observer {
	beat := func() { // this process holds the change at once: no wait for its own heartbeat
		if s.member != nil {
			s.member.Beat(context.Background())
		}
	}
	return lifecycle.Observer{
		Added:    func(keyring.KeyID, bool) { beat() },
		Promoted: func(id, old keyring.KeyID) { beat(); fmt.Fprintf(out, "promoted %v; %v is decrypt-only\n", id, old) },
		Column: func(c lifecycle.ColumnResult, _ error) {
			fmt.Fprintf(out, "%s.%s: %d resealed under %v, %d already up to date\n", c.Column.Table, c.Column.Column, c.Stats.Resealed, s.kr.Primary().ID, c.Stats.Current)
		},
		Subjects: func(r lifecycle.SubjectResult, _ error) {
			fmt.Fprintf(out, "user keys (%s): %d resealed under %v, %d already up to date, %d held by their users\n", r.Namespace, r.Reseal.Resealed, s.kr.Primary().ID, r.Reseal.Current, r.Reseal.UserHeld)
		},
		MACs: func(m lifecycle.MACResult, _ error) {
			if m.Refused { // this process refuses them at once; others within their refresh
				s.gate.SetMarks([]string{field.RowMACMovedMark(m.Column.Table)})
			}
			fmt.Fprintln(out, m)
		},
		Skipped: func(_ string, c ledger.Column, why string) {
			if c.Table != "" {
				fmt.Fprintf(out, "%s.%s: %s\n", c.Table, c.Column, why)
			}
		},
	}
}
