package reseal

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
)

// TestCASStatements: on PostgreSQL a chunk whose keys and values are each
// of one driver type goes as one unnest statement of arrays, up to
// unnestRows rows; anything else (mixed types, other dialects) as a
// VALUES list of at most casRows rows.
func TestCASStatements(t *testing.T) {
	ix := casIndex{col: `"idx"`, typ: "bytea"}
	pg := queries{
		cas:    func(n int) string { return casSQL(field.Postgres, `"t"`, `"c"`, `"id"`, "bigint", "text", ix, n) },
		unnest: unnestSQL(`"t"`, `"c"`, `"id"`, "bigint", "text", ix),
		index:  true,
	}
	ups := make([]update, 5000)
	for i := range ups {
		ups[i] = update{key: int64(i), old: fmt.Sprint("plain ", i), new: fmt.Sprint("w4:", i), idx: []byte{byte(i)}}
	}
	stmt, args, used := pg.casUpdate(ups)
	if used != unnestRows || stmt != pg.unnest || len(args) != 4 {
		t.Fatalf("typed rows: %d rows, %d args, %q", used, len(args), stmt)
	}
	if k, ok := args[0].([]int64); !ok || len(k) != used || k[9] != 9 {
		t.Fatalf("keys: %T", args[0])
	}
	if v, ok := args[2].([]string); !ok || v[9] != "w4:9" {
		t.Fatalf("new values: %T", args[2])
	}
	if !strings.Contains(stmt, `unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[])`) {
		t.Fatalf("statement: %s", stmt)
	}
	ups[3].key = "3" // a chunk of mixed key types
	stmt, args, used = pg.casUpdate(ups)
	if used != casRows || len(args) != 4*casRows || !strings.Contains(stmt, "VALUES ($1::bigint") {
		t.Fatalf("mixed rows: %d rows, %d args", used, len(args))
	}
	sqlite := queries{cas: func(n int) string { return casSQL(field.SQLite, "t", "c", "id", "", "", casIndex{}, n) }}
	ups[3].key = int64(3)
	if stmt, _, used := sqlite.casUpdate(ups); used != casRows || strings.Contains(stmt, "unnest") {
		t.Fatalf("SQLite: %d rows, %s", used, stmt)
	}
}

// TestEncryptExistingKeyTypes runs a job over tables keyed by an integer,
// a string and (PostgreSQL) a UUID, with batches larger than casRows and
// than the default: every row is encrypted, none twice, none lost.
func TestEncryptExistingKeyTypes(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		type keyType struct {
			typ string
			key func(i int) any
		}
		types := []keyType{
			{"INTEGER", func(i int) any { return i }},
			{"VARCHAR(40)", func(i int) any { return fmt.Sprintf("user-%05d", i) }},
		}
		if d.dialect == field.Postgres {
			types = append(types, keyType{"UUID", func(i int) any { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }})
		}
		for _, keys := range types {
			t.Run(keys.typ, func(t *testing.T) {
				table := d.table(t, "keyed")
				const n = 1300
				plainTable(t, d, table, keys.typ, n, keys.key)
				col := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text), field.AcceptPlaintext())
				job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 600, FromPlaintext: true}
				st, err := job.Run(ctx)
				if err != nil || st.Plaintext != n-n/50 || st.Conflicts != 0 {
					t.Fatalf("job: %+v %v", st, err)
				}
				c, err := job.Count(ctx)
				if err != nil || !c.Done() || c.Plaintext != 0 || c.Rows != n {
					t.Fatalf("census: %+v %v", c, err)
				}
			})
		}
	})
}
