package fleet

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestJoinRefusesNonStrictMySQL: a process joining the fleet through a
// MySQL/MariaDB session whose sql_mode is not strict is refused before it
// registers, since it would write through that session.
func TestJoinRefusesNonStrictMySQL(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		if d.Name != "mysql" {
			t.Skip("sql_mode is MySQL's and MariaDB's")
		}
		ctx := context.Background()
		kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), local.Generate(), keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		table := d.Table(t, "fleet")
		loose := &Registry{DB: mytest.NonStrict(t, d.DSN), Dialect: field.MySQL, Table: table}
		if _, err := loose.Join(ctx, kr, time.Hour, nil); !errors.Is(err, sqltable.ErrNotStrict) {
			t.Fatalf("non-strict: %v", err)
		}
		m, err := (&Registry{DB: d.DB, Dialect: field.MySQL, Table: table}).Join(ctx, kr, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.Leave(ctx)
	})
}
