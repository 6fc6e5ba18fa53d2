package subject

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Tombstones (FORMAT.md, "Subject keys").
//
// A tombstone v2 is bound to its database (the ledger's database ID) and
// MAC'd under an integrity key of the epoch it names (the primary key when
// it was written; keycore's integrity epochs): a tombstone copied from
// another database under the same keyring, or forged with a keyring file
// from before the epoch (or of an epoch that ended), does not verify. Its
// mac column holds "v2:" and the MAC's hex; its epoch column the epoch's
// key ID. A tombstone v1 (bound to no database, MAC'd under a state key)
// verifies until the ledger records that the namespace's tombstones were
// moved to v2 (RemacTombstones, which a rotation runs): from then on a v1
// tombstone is a forgery made with an old keyring file.

// tombstoneV2 prefixes a v2 tombstone's MAC text.
const tombstoneV2 = "v2:"

// tombstonePurpose names the integrity key of tombstones.
const tombstonePurpose = "subject tombstone"

// TombstonesV2Mark is the ledger mark saying every tombstone of a
// namespace is v2: v1 tombstones are refused from then on.
func TombstonesV2Mark(namespace string) string { return "integrity:tombstones-v2:" + namespace }

// tombstoneMessage is what a v1 tombstone's MAC covers.
func (s *Store) tombstoneMessage(subject string, at int64) []byte {
	b := []byte("ward subject tombstone v1\x00")
	b = binary.AppendUvarint(b, uint64(len(s.cfg.Namespace)))
	b = append(b, s.cfg.Namespace...)
	b = binary.AppendUvarint(b, uint64(len(subject)))
	b = append(b, subject...)
	return binary.BigEndian.AppendUint64(b, uint64(at))
}

// tombstoneMessageV2 is what a v2 tombstone's MAC covers.
func (s *Store) tombstoneMessageV2(database, subject string, at int64) []byte {
	b := []byte("ward subject tombstone v2\x00")
	for _, f := range []string{database, s.cfg.Namespace, subject} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return binary.BigEndian.AppendUint64(b, uint64(at))
}

// tombstoneMAC returns a new tombstone's epoch and MAC text, bound to
// database.
func (s *Store) tombstoneMAC(database, subject string, at int64) (int64, string, error) {
	if database == "" {
		return 0, "", errors.New("subject: a tombstone needs the ledger's database ID")
	}
	epoch, key, err := core(s.cfg.Keyring).IntegrityKey(tombstonePurpose)
	if err != nil {
		return 0, "", fmt.Errorf("subject: the tombstone's key: %w", err)
	}
	defer clear(key)
	m := hmac.New(sha256.New, key)
	m.Write(s.tombstoneMessageV2(database, subject, at))
	return int64(epoch), tombstoneV2 + hex.EncodeToString(m.Sum(nil)), nil
}

// verifyTombstone checks a tombstone row's MAC: v2 under its epoch and
// this database, v1 only while the ledger does not refuse it.
func (s *Store) verifyTombstone(ctx context.Context, subject string, at, epoch int64, macText string) bool {
	v, err := s.tombstoneVersion(ctx, subject, at, epoch, macText)
	return err == nil && v > 0
}

// tombstoneVersion verifies a tombstone and returns its version (0 when
// it does not verify), or an error reading the ledger.
func (s *Store) tombstoneVersion(ctx context.Context, subject string, at, epoch int64, macText string) (int, error) {
	if hexMAC, ok := strings.CutPrefix(macText, tombstoneV2); ok {
		mac, err := hex.DecodeString(hexMAC)
		if err != nil || epoch <= 0 || epoch > 1<<32-1 {
			return 0, nil
		}
		db, err := s.databaseID(ctx)
		if err != nil || db == "" {
			return 0, err
		}
		key, err := core(s.cfg.Keyring).IntegrityKeyAt(keyring.KeyID(epoch), tombstonePurpose)
		if err != nil {
			return 0, nil // another epoch: ended, never this keyring's, or a newer file's
		}
		defer clear(key)
		m := hmac.New(sha256.New, key)
		m.Write(s.tombstoneMessageV2(db, subject, at))
		if !hmac.Equal(m.Sum(nil), mac) {
			return 0, nil
		}
		return 2, nil
	}
	mac, err := hex.DecodeString(macText)
	if err != nil || epoch < 0 || core(s.cfg.Keyring).VerifyStateMAC(uint64(epoch), s.tombstoneMessage(subject, at), mac) != nil {
		return 0, nil
	}
	refused, err := s.v1Refused(ctx)
	if err != nil || refused {
		return 0, err
	}
	return 1, nil
}

// v1Refused reports whether the ledger records that the namespace's
// tombstones are all v2 (TombstonesV2Mark): once seen, for good; until
// then asked again after the cache's TTL.
func (s *Store) v1Refused(ctx context.Context) (bool, error) {
	if v := s.cfg.Verified; v != nil {
		return slices.Contains(v.Marks, TombstonesV2Mark(s.cfg.Namespace)), nil
	}
	if s.cfg.Ledger == nil {
		return false, nil
	}
	s.mu.Lock()
	refused, asked := s.tombV1Refused, s.tombV1Asked
	s.mu.Unlock()
	if refused || (!asked.IsZero() && time.Since(asked) < s.cfg.TTL) {
		return refused, nil
	}
	marked, err := s.cfg.Ledger.Marked(ctx, s.cfg.Keyring, TombstonesV2Mark(s.cfg.Namespace))
	if err != nil {
		return false, fmt.Errorf("subject: reading the ledger: %w", err)
	}
	s.mu.Lock()
	s.tombV1Refused, s.tombV1Asked = marked, time.Now()
	s.mu.Unlock()
	return marked, nil
}

// RemacStats is what [Store.RemacTombstones] did.
type RemacStats struct {
	// Moved tombstones were MAC'd again, as v2 under the current epoch.
	Moved int
	// Current were already there.
	Current int
	// Invalid failed their MAC (planted or altered): left as they are,
	// and reported by Audit.
	Invalid int
	// Marked is true when the ledger records, after this pass, that the
	// namespace holds v2 tombstones only: v1 ones are refused.
	Marked bool
}

// RemacTombstones moves every valid tombstone of the namespace to v2
// under the current integrity epoch (bound to this database), by
// compare-and-swap on its MAC, so that the key whose epoch older ones name
// can be retired; then, with no invalid tombstone left, it records in the
// ledger that v1 tombstones are refused (TombstonesV2Mark). A rotation runs
// it after re-wrapping the subject keys; it is resumable and safe to
// repeat (a killed pass leaves each tombstone old or new, never neither).
func (s *Store) RemacTombstones(ctx context.Context) (RemacStats, error) {
	var st RemacStats
	if s.cfg.Ledger == nil {
		return st, errors.New("subject: RemacTombstones needs Config.Ledger")
	}
	db, err := s.databaseID(ctx)
	if err != nil {
		return st, err
	}
	if db == "" {
		return st, nil // no ledger yet: no forget has been made here
	}
	rows, err := s.tombstoneRows(ctx)
	if err != nil {
		return st, err
	}
	current := int64(s.cfg.Keyring.Primary().ID)
	for _, r := range rows {
		v, err := s.tombstoneVersion(ctx, r.subject, r.at, r.epoch, r.mac)
		switch {
		case err != nil:
			return st, err
		case v == 0:
			st.Invalid++
			continue
		case v == 2 && r.epoch == current:
			st.Current++
			continue
		}
		if err := s.remac(ctx, db, r); err != nil {
			return st, err
		}
		st.Moved++
	}
	if st.Invalid == 0 {
		if err := s.cfg.Ledger.Mark(ctx, s.cfg.Keyring, TombstonesV2Mark(s.cfg.Namespace)); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
			return st, fmt.Errorf("subject: recording the tombstones' move: %w", err)
		}
		st.Marked = true
		s.mu.Lock()
		s.tombV1Refused = true
		s.mu.Unlock()
	}
	return st, nil
}

// refuseV1WhenNone records, after a forget, that the namespace's v1
// tombstones are refused if it has none (a database whose forgets all
// happened under this release): a v1 tombstone there can only be a
// forgery. It asks the database once per store until the mark is set.
func (s *Store) refuseV1WhenNone(ctx context.Context) error {
	if refused, err := s.v1Refused(ctx); err != nil || refused {
		return err
	}
	p := s.cfg.Dialect.Placeholder
	var n int
	err := s.cfg.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE namespace = %s AND mac NOT LIKE 'v2:%%'`, s.tombstones, p(1)), s.cfg.Namespace).Scan(&n)
	if err != nil {
		return fmt.Errorf("reading tombstones: %w", err)
	}
	if n > 0 {
		return nil // a rotation's RemacTombstones moves them, then refuses v1
	}
	if err := s.cfg.Ledger.Mark(ctx, s.cfg.Keyring, TombstonesV2Mark(s.cfg.Namespace)); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return fmt.Errorf("recording that v1 tombstones are refused: %w", err)
	}
	s.mu.Lock()
	s.tombV1Refused = true
	s.mu.Unlock()
	return nil
}

// tombstoneRow is a tombstone as stored.
type tombstoneRow struct {
	subject   string
	at, epoch int64
	mac       string
}

// tombstoneRows reads the namespace's tombstones (bounded, as every read
// of a writer's rows).
func (s *Store) tombstoneRows(ctx context.Context) ([]tombstoneRow, error) {
	p := s.cfg.Dialect.Placeholder
	rows, err := s.cfg.DB.QueryContext(ctx, fmt.Sprintf(`SELECT %s, forgotten_at, epoch, %s FROM %s WHERE namespace = %s`, subjectCol.Value(), macCol.Value(), s.tombstones, p(1)), s.cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("subject: reading tombstones: %w", err)
	}
	defer rows.Close()
	var out []tombstoneRow
	for rows.Next() {
		var r tombstoneRow
		if err := rows.Scan(&r.subject, &r.at, &r.epoch, &r.mac); err != nil {
			return nil, fmt.Errorf("subject: reading tombstones: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// remac rewrites one tombstone's MAC as v2 under the current epoch, if it
// still holds the MAC it was verified with.
func (s *Store) remac(ctx context.Context, database string, r tombstoneRow) error {
	epoch, mac, err := s.tombstoneMAC(database, r.subject, r.at)
	if err != nil {
		return err
	}
	p := s.cfg.Dialect.Placeholder
	_, err = s.cfg.DB.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET epoch = %s, mac = %s WHERE namespace = %s AND subject = %s AND mac = %s`,
		s.tombstones, p(1), p(2), p(3), p(4), p(5)), epoch, mac, s.cfg.Namespace, r.subject, r.mac)
	if err != nil {
		return fmt.Errorf("subject: moving the tombstone of %s/%s: %w", s.cfg.Namespace, r.subject, err)
	}
	return nil
}

// TombstonesAt counts the namespace's valid tombstones MAC'd under the
// integrity epoch of key id, or under v1 while those verify: what holds
// the key's retirement back until a rotation moved them.
func (s *Store) TombstonesAt(ctx context.Context, id keyring.KeyID) (int, error) {
	rows, err := s.tombstoneRows(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		v, err := s.tombstoneVersion(ctx, r.subject, r.at, r.epoch, r.mac)
		if err != nil {
			return 0, err
		}
		if v == 1 || (v == 2 && r.epoch == int64(id)) {
			n++
		}
	}
	return n, nil
}

// replaceForgedTombstone is a forget's answer to a tombstone row already
// standing for subject (the insert added none): a row that verifies is the
// subject's earlier forget and stays (0); a row that does not — planted or
// altered by a database writer — decides nothing and is overwritten by
// this forget's tombstone, which then counts as added (1), so the ledger's
// tally and the journal hold this forget, and the writer who later deletes
// the tombstone is caught by the audit.
func (s *Store) replaceForgedTombstone(ctx context.Context, tx *sql.Tx, subject string, at, epoch int64, mac string) (int64, error) {
	t, err := s.tombstoneIn(ctx, tx, subject)
	if err != nil || (t != nil && t.valid) {
		return 0, err
	}
	if t == nil { // a writer deleted it since the insert met it
		return 0, fmt.Errorf("subject: the tombstone of %s/%s went during its forget: forget again", s.cfg.Namespace, subject)
	}
	p := s.cfg.Dialect.Placeholder
	res, err := tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET forgotten_at = %s, epoch = %s, mac = %s WHERE namespace = %s AND subject = %s`,
		s.tombstones, p(1), p(2), p(3), p(4), p(5)), at, epoch, mac, s.cfg.Namespace, subject)
	if err != nil {
		return 0, fmt.Errorf("subject: replacing the forged tombstone of %s/%s: %w", s.cfg.Namespace, subject, err)
	}
	return res.RowsAffected()
}
