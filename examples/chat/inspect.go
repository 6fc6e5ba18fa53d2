package chat

import (
	"context"
	"fmt"
	"io"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/ledger"
)

// Inspect prints what someone with database access sees: stored messages
// as ciphertext with their key IDs, and the keyring the ledger names. It
// needs no keyring and creates nothing.
func Inspect(ctx context.Context, dbURL string, out io.Writer) error {
	db, dialect, err := openDB(dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ids, err := (&ledger.Ledger{DB: db, Dialect: dialect}).Keyrings(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "keyring (from the ledger): %v\n", ids)
	rows, err := db.QueryContext(ctx, `SELECT id, role, body FROM messages ORDER BY created`)
	if err != nil {
		return fmt.Errorf("chat: %w (is this a ward-chat database?)", err)
	}
	defer rows.Close()
	fmt.Fprintln(out, "messages as stored (what an operator sees):")
	for rows.Next() {
		var id int64
		var role string
		var raw []byte
		if err := rows.Scan(&id, &role, &raw); err != nil {
			return err
		}
		ct, err := field.ParseCiphertext(raw)
		key := "not a ward ciphertext"
		if id, kerr := ct.KeyID(); err == nil && kerr == nil {
			key = fmt.Sprintf("v%d, key %v", ct.Version(), id)
			if v, ok := ct.SubjectKeyVersion(); ok {
				key = fmt.Sprintf("v%d, the user's own key, version %d", ct.Version(), v)
			}
		}
		preview := fmt.Sprintf("%x", raw)
		if len(preview) > 48 {
			preview = preview[:48] + "…"
		}
		fmt.Fprintf(out, "  %d %-9s %4d bytes  %s  %s\n", id, role, len(raw), key, preview)
	}
	return rows.Err()
}
