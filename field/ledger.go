package field

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardlab/ward/keyring"
)

// DefaultLedgerTable is the table a [Ledger] uses when none is named.
const DefaultLedgerTable = "ward_keyring_ledger"

// Ledger records, in the database a keyring protects, which keyring its
// values are sealed under, every key ID they may use and the highest
// keyring generation seen. A service checks it when it starts: a keyring
// that lacks a recorded key ID (a typo in the keyring path, a lost file, a
// copy from before a rotation), belongs to another keyring, or is of an
// older generation than one already seen (a rolled-back file) is refused
// before any value is written under it. Recording the key IDs in use when
// they start being used spares scanning every table at each start.
type Ledger struct {
	// DB is the database.
	DB *sql.DB
	// Dialect selects placeholder syntax.
	Dialect Dialect
	// Table is the ledger table (default DefaultLedgerTable), created if
	// missing.
	Table string
}

// MissingKeysError reports key IDs recorded in the ledger that the keyring
// lacks: values under them would not open. It matches
// [keyring.ErrUnknownKey].
type MissingKeysError struct {
	Keyring string
	IDs     []keyring.KeyID
}

func (e *MissingKeysError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = id.String()
	}
	return fmt.Sprintf("field: the database holds values under key IDs %s that keyring %s lacks (wrong or outdated keyring file?)", strings.Join(ids, ", "), e.Keyring)
}

// Is reports whether target is keyring.ErrUnknownKey.
func (e *MissingKeysError) Is(target error) bool { return target == keyring.ErrUnknownKey }

func (l *Ledger) table() (string, error) {
	name := l.Table
	if name == "" {
		name = DefaultLedgerTable
	}
	return QuoteIdent(name)
}

func (l *Ledger) create(ctx context.Context) (string, error) {
	if l.DB == nil || (l.Dialect != SQLite && l.Dialect != Postgres) {
		return "", errors.New("field: Ledger needs DB and Dialect")
	}
	t, err := l.table()
	if err != nil {
		return "", err
	}
	_, err = l.DB.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		keyring_id TEXT NOT NULL, key_id TEXT NOT NULL, generation BIGINT NOT NULL,
		PRIMARY KEY (keyring_id, key_id))`, t))
	if err != nil {
		return "", fmt.Errorf("field: creating the keyring ledger: %w", err)
	}
	return t, nil
}

// Check compares the ledger with kr. It returns an error matching
// [keyring.ErrWrongKeyring] if the database belongs to another keyring, a
// [*keyring.RollbackError] if kr is older than a generation already
// recorded, and a [*MissingKeysError] if kr lacks a recorded key ID. An
// empty ledger passes.
func (l *Ledger) Check(ctx context.Context, kr *keyring.Keyring) error {
	t, err := l.create(ctx)
	if err != nil {
		return err
	}
	rows, err := l.DB.QueryContext(ctx, fmt.Sprintf(`SELECT keyring_id, key_id, generation FROM %s`, t))
	if err != nil {
		return fmt.Errorf("field: reading the keyring ledger: %w", err)
	}
	defer rows.Close()
	var missing []keyring.KeyID
	var seen uint64
	for rows.Next() {
		var krID, keyID string
		var gen int64
		if err := rows.Scan(&krID, &keyID, &gen); err != nil {
			return fmt.Errorf("field: reading the keyring ledger: %w", err)
		}
		if krID != kr.ID() {
			return fmt.Errorf("%w: the database's values are sealed under keyring %s, not %s", keyring.ErrWrongKeyring, krID, kr.ID())
		}
		seen = max(seen, uint64(gen))
		id, err := keyring.ParseKeyID(keyID)
		if err != nil {
			return fmt.Errorf("field: keyring ledger: %w", err)
		}
		if _, ok := kr.Lookup(id); !ok {
			missing = append(missing, id)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("field: reading the keyring ledger: %w", err)
	}
	if kr.Generation() < seen {
		return &keyring.RollbackError{Generation: kr.Generation(), Seen: seen}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return &MissingKeysError{Keyring: kr.ID(), IDs: missing}
	}
	return nil
}

// Record adds key IDs (default: the primary's) to the ledger and raises its
// generation to kr's. Record a key before values are sealed under it: a
// service records the primary when it starts and a new key between adding
// it and promoting it.
func (l *Ledger) Record(ctx context.Context, kr *keyring.Keyring, ids ...keyring.KeyID) error {
	t, err := l.create(ctx)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		ids = []keyring.KeyID{kr.Primary().ID}
	}
	tx, err := l.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("field: keyring ledger: %w", err)
	}
	defer tx.Rollback()
	p := l.Dialect.Placeholder
	gen := int64(kr.Generation())
	for _, id := range ids {
		_, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (keyring_id, key_id, generation) VALUES (%s, %s, %s)
			ON CONFLICT (keyring_id, key_id) DO NOTHING`, t, p(1), p(2), p(3)), kr.ID(), id.String(), gen)
		if err != nil {
			return fmt.Errorf("field: recording key %v: %w", id, err)
		}
	}
	_, err = tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET generation = %s WHERE keyring_id = %s AND generation < %s`, t, p(1), p(2), p(3)), gen, kr.ID(), gen)
	if err != nil {
		return fmt.Errorf("field: recording generation: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("field: keyring ledger: %w", err)
	}
	return nil
}

// Keyrings lists the keyring IDs the ledger records: empty for a database
// no keyring has written to yet.
func (l *Ledger) Keyrings(ctx context.Context) ([]string, error) {
	t, err := l.create(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := l.DB.QueryContext(ctx, fmt.Sprintf(`SELECT DISTINCT keyring_id FROM %s ORDER BY keyring_id`, t))
	if err != nil {
		return nil, fmt.Errorf("field: reading the keyring ledger: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// LedgerEntry is one key the ledger records for a keyring.
type LedgerEntry struct {
	Keyring    string        `json:"keyring"`
	Key        keyring.KeyID `json:"key"`
	Generation uint64        `json:"generation"` // the highest keyring generation seen
}

// Entries lists what the ledger records, by keyring and key ID.
func (l *Ledger) Entries(ctx context.Context) ([]LedgerEntry, error) {
	t, err := l.create(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := l.DB.QueryContext(ctx, fmt.Sprintf(`SELECT keyring_id, key_id, generation FROM %s ORDER BY keyring_id, key_id`, t))
	if err != nil {
		return nil, fmt.Errorf("field: reading the keyring ledger: %w", err)
	}
	defer rows.Close()
	var out []LedgerEntry
	for rows.Next() {
		var e LedgerEntry
		var key string
		var gen int64
		if err := rows.Scan(&e.Keyring, &key, &gen); err != nil {
			return nil, err
		}
		if e.Key, err = keyring.ParseKeyID(key); err != nil {
			return nil, fmt.Errorf("field: keyring ledger: %w", err)
		}
		e.Generation = uint64(gen)
		out = append(out, e)
	}
	return out, rows.Err()
}
