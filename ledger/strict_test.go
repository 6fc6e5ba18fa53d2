package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/mytest"
)

// TestLedgerRefusesNonStrictMySQL: every ward process checks the ledger at
// start, so the check refuses a MySQL/MariaDB session whose sql_mode would
// cut an overlong ciphertext short, naming the setting; the same database
// through a strict session passes.
func TestLedgerRefusesNonStrictMySQL(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		if d.Name != "mysql" {
			t.Skip("sql_mode is MySQL's and MariaDB's")
		}
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		table := d.Table(t, "ledger")
		loose := &Ledger{DB: mytest.NonStrict(t, d.DSN), Dialect: field.MySQL, Table: table}
		err := loose.Check(ctx, kr)
		if !errors.Is(err, ErrNotStrict) || !strings.Contains(err.Error(), "@@SESSION.sql_mode is \"NO_ENGINE_SUBSTITUTION\"") {
			t.Fatalf("non-strict: %v", err)
		}
		if err := loose.Record(ctx, kr); !errors.Is(err, ErrNotStrict) {
			t.Fatalf("a write through it: %v", err)
		}
		strict := &Ledger{DB: d.DB, Dialect: field.MySQL, Table: table}
		if err := strict.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if err := strict.Check(ctx, kr); err != nil {
			t.Fatal(err)
		}
	})
}
