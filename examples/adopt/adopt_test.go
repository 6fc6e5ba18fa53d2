package adopt

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
)

// TestAdoption runs the adoption guide end to end on a schema with a
// database-assigned key and a UNIQUE e-mail column, on SQLite and
// PostgreSQL: every address ends encrypted and indexed, search and
// uniqueness work through the index, plaintext is refused after mixed
// mode, and a rotation keeps every address readable.
func TestAdoption(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		ctx := context.Background()
		dialect, _ := field.ParseDialect(d.Driver)
		d.DB.Exec(`DROP TABLE IF EXISTS users`)
		t.Cleanup(func() { d.DB.Exec(`DROP TABLE IF EXISTS users`) })
		if err := Seed(ctx, d.DB, dialect, 300); err != nil {
			t.Fatal(err)
		}
		// Before adoption: the plaintext application finds its users.
		pre := &App{DB: d.DB, Dialect: dialect}
		if _, stored, err := pre.FindByEmail(ctx, "user1@example.com"); err != nil || stored != "User1@Example.com" {
			t.Fatalf("before adoption: %q %v", stored, err)
		}
		kr, _ := keyring.New(keyring.AES256GCM)
		var out strings.Builder
		if err := Run(ctx, d.DB, dialect, kr, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		for i := 1; i <= 10; i++ {
			if !strings.Contains(out.String(), fmt.Sprintf("step %d:", i)) {
				t.Fatalf("step %d missing:\n%s", i, out.String())
			}
		}
		// No plaintext address left; every row has its index, re-keyed
		// into the second column, and the first is empty.
		rows, err := d.DB.Query(`SELECT email, email_index2 FROM users WHERE email_index IS NULL`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var email string
			var idx []byte
			rows.Scan(&email, &idx)
			if !strings.HasPrefix(email, "w4:") || len(idx) == 0 {
				t.Fatalf("row holds %q / %x", email, idx)
			}
			n++
		}
		if n != 302 {
			t.Fatalf("%d rows", n)
		}
	})
}
