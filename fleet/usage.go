package fleet

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
)

// Key usage: how many values each keyring key has sealed, summed over
// every process that reports to a database (FORMAT.md, "Key usage").
// Each process counts its own seals (an estimate, see keycore) and adds
// them to the table UsageTable at each heartbeat, when it leaves, and at
// the end of a job. The table is outside the anchored ledger on purpose:
// every anchored write moves the keyring file's anchor, and a rotation's
// compare-and-swap on the file would lose to the fleet's heartbeats. So
// the counts are advisory: a database writer can lower them (or raise
// them), and a process killed between reports loses its last count.

// UsageTable is the default table of seals per key.
const UsageTable = "ward_key_usage"

// WarnAt is the count of seals from which a key of a bounded algorithm is
// reported as due for rotation: 2^30, a quarter of AES-GCM's bound.
const WarnAt = 1 << 30

// SealBound returns how many values a key of alg may seal with random
// nonces before a nonce collision becomes likelier than 2^-32: 2^32 for
// AES-GCM (96-bit nonces, NIST SP 800-38D §8.3), and 0 for
// XChaCha20-Poly1305, whose 192-bit nonces bound nothing a database
// reaches (2^80).
func SealBound(alg keyring.Algorithm) uint64 {
	if alg == keyring.XChaCha20Poly1305 {
		return 0
	}
	return 1 << 32
}

// KeyUsage is one key's total in the table.
type KeyUsage struct {
	Key       keyring.KeyID
	Algorithm keyring.Algorithm
	Seals     uint64
	Updated   time.Time
}

// Due reports whether the key has sealed WarnAt values or more and its
// algorithm has a bound: it should be rotated out.
func (k KeyUsage) Due() bool { return SealBound(k.Algorithm) > 0 && k.Seals >= WarnAt }

// Warning is the operator's message for a Due key ("" otherwise).
func (k KeyUsage) Warning() string {
	if !k.Due() {
		return ""
	}
	return fmt.Sprintf("key %v (%v) has sealed about %d values, %.0f %% of the %d its random nonces are safe for: rotate it out with 'ward keyring rotate --db URL' (every database), then 'ward keyring retire %v'",
		k.Key, k.Algorithm, k.Seals, 100*float64(k.Seals)/float64(SealBound(k.Algorithm)), SealBound(k.Algorithm), k.Key)
}

// Usage is the table of seals per key in one database.
type Usage struct {
	DB      *sql.DB
	Dialect field.Dialect
	// Table is the table's name (default UsageTable).
	Table   string
	created atomic.Bool
}

// name is the table's quoted name.
func (u *Usage) name() (string, error) {
	return tableName("Usage", u.DB, u.Dialect, u.Table, UsageTable)
}

// table returns the table, created if missing.
func (u *Usage) table(ctx context.Context) (string, error) {
	t, err := u.name()
	if err != nil || u.created.Load() {
		return t, err
	}
	e := u.Dialect.String()
	if err := sqltable.Create(ctx, u.DB, t, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		keyring %s NOT NULL, key_id BIGINT NOT NULL, seals BIGINT NOT NULL, updated BIGINT NOT NULL,
		PRIMARY KEY (keyring, key_id))`, t, sqltable.KeyText(e, 64))); err != nil {
		return "", fmt.Errorf("fleet: creating the key-usage table: %w", err)
	}
	u.created.Store(true)
	return t, nil
}

// Report adds the seals kr counted since its last report to the table,
// in one transaction, and returns the totals of kr's keys. Counts it could
// not write are kept for the next report.
func (u *Usage) Report(ctx context.Context, kr *keyring.Keyring) ([]KeyUsage, error) {
	if err := u.record(ctx, kr); err != nil {
		return nil, err
	}
	return u.Read(ctx, kr)
}

// record adds the seals kr counted since its last report to the table;
// counts it could not write are kept for the next report.
func (u *Usage) record(ctx context.Context, kr *keyring.Keyring) error {
	t, err := u.table(ctx)
	if err != nil {
		return err
	}
	core := (*keycore.Keyring)(kr)
	counts := core.TakeSeals()
	if len(counts) == 0 {
		return nil
	}
	if err := u.add(ctx, t, kr.ID(), counts); err != nil {
		core.ReturnSeals(counts)
		return err
	}
	return nil
}

// add writes counts in one transaction.
func (u *Usage) add(ctx context.Context, t, keyringID string, counts map[keycore.KeyID]uint64) error {
	stmt := fmt.Sprintf(`INSERT INTO %s (keyring, key_id, seals, updated) VALUES (?, ?, ?, ?)
		ON CONFLICT (keyring, key_id) DO UPDATE SET seals = %s.seals + excluded.seals, updated = excluded.updated`, t, t)
	if u.Dialect == field.MySQL {
		stmt = fmt.Sprintf(`INSERT INTO %s (keyring, key_id, seals, updated) VALUES (?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE seals = seals + VALUES(seals), updated = VALUES(updated)`, t)
	}
	tx, err := u.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fleet: recording key usage: %w", err)
	}
	defer tx.Rollback()
	now := time.Now().UnixMilli()
	for _, id := range slices.Sorted(maps.Keys(counts)) { // one order: no deadlock between two reporters
		if _, err := tx.ExecContext(ctx, u.Dialect.Rebind(stmt), keyringID, int64(id), int64(min(counts[id], 1<<62)), now); err != nil {
			return fmt.Errorf("fleet: recording key usage: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fleet: recording key usage: %w", err)
	}
	return nil
}

// Read returns the totals of kr's keys (0 for a key no process reported),
// in the keyring's order. A table not created yet reads as all zero.
func (u *Usage) Read(ctx context.Context, kr *keyring.Keyring) ([]KeyUsage, error) {
	t, err := u.name()
	if err != nil {
		return nil, err
	}
	byID := map[keyring.KeyID]KeyUsage{}
	rows, err := u.DB.QueryContext(ctx, u.Dialect.Rebind(fmt.Sprintf(`SELECT key_id, seals, updated FROM %s WHERE keyring = ?`, t)), kr.ID())
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var id, seals, updated int64
			if err := rows.Scan(&id, &seals, &updated); err != nil {
				return nil, fmt.Errorf("fleet: reading key usage: %w", err)
			}
			byID[keyring.KeyID(id)] = KeyUsage{Seals: uint64(max(seals, 0)), Updated: time.UnixMilli(updated)}
		}
		err = rows.Err()
	}
	if err != nil && !sqltable.Missing(err) {
		return nil, fmt.Errorf("fleet: reading key usage: %w", err)
	}
	var out []KeyUsage
	for _, k := range kr.Keys() {
		ku := byID[k.ID]
		ku.Key, ku.Algorithm = k.ID, k.Algorithm
		out = append(out, ku)
	}
	return out, nil
}

// reportUsage adds the member's seals to the database's key-usage table
// and hands the totals to the registry's OnUsage. A process nobody asked
// for the totals only writes its counts: no read of the table at every
// heartbeat.
func (m *Member) reportUsage(ctx context.Context) error {
	if m.r.OnUsage == nil {
		return m.usage.record(ctx, m.kr)
	}
	totals, err := m.usage.Report(ctx, m.kr)
	if err != nil {
		return err
	}
	m.r.OnUsage(totals)
	return nil
}
