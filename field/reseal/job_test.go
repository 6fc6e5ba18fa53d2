package reseal

import (
	"context"
	"crypto/fips140"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

func fillTable(t *testing.T, d testDB, col *field.Column, n int) {
	t.Helper()
	if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, body %s)`, col.Table(), d.blob)); err != nil {
		t.Fatal(err)
	}
	tx, _ := d.db.Begin()
	for i := 1; i <= n; i++ {
		var ct field.Ciphertext
		if i%50 != 0 { // every 50th row is NULL
			ct, _ = col.SealString(field.RowInt(int64(i)), fmt.Sprintf("message %d", i))
		}
		if _, err := tx.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, body) VALUES (?, ?)`, col.Table())), i, ct); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func checkAll(t *testing.T, d testDB, col *field.Column, want func(id int64) string) map[keyring.KeyID]int {
	t.Helper()
	rows, err := d.db.Query(fmt.Sprintf(`SELECT id, body FROM %s ORDER BY id`, col.Table()))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	per := map[keyring.KeyID]int{}
	for rows.Next() {
		var id int64
		var ct field.Ciphertext
		if err := rows.Scan(&id, &ct); err != nil {
			t.Fatal(err)
		}
		if !ct.Valid() {
			if id%50 != 0 {
				t.Fatalf("row %d became NULL", id)
			}
			continue
		}
		s, err := col.OpenString(field.RowInt(id), ct)
		if err != nil {
			t.Fatalf("row %d unreadable: %v", id, err)
		}
		if w := want(id); s != w {
			t.Fatalf("row %d = %q, want %q", id, s, w)
		}
		keyID, _ := ct.KeyID()
		per[keyID]++
	}
	return per
}

func TestReencrypt(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		oldID := kr.Primary().ID
		col := mustColumn(t, kr, d.table(t, "reenc"), "body")
		const n = 1000
		fillTable(t, d, col, n)
		newID, _ := keyring.NewManager(kr).AddPrimary(context.Background(), keyring.AES256GCM)

		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 37}
		census, err := job.Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if census.Rows != n || census.Null != n/50 || census.PerKey[oldID] != n-n/50 || census.PerKey[newID] != 0 {
			t.Fatalf("census %+v", census)
		}

		// A concurrent writer rewrites rows 1..200 with new text.
		var mu sync.Mutex
		edited := map[int64]bool{}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(1); i <= 200; i++ {
				if i%50 == 0 {
					continue
				}
				ct, _ := col.SealString(field.RowInt(i), fmt.Sprintf("edited %d", i))
				if _, err := d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = ?`, col.Table())), ct, i); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				edited[i] = true
				mu.Unlock()
			}
		}()
		var progress []Progress
		job.Progress = func(p Progress) { progress = append(progress, p) }
		st, err := job.Run(context.Background())
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if st.Scanned < n || st.Failed != 0 || len(progress) == 0 || progress[len(progress)-1].Total != n {
			t.Fatalf("stats %+v, progress %d", st, len(progress))
		}
		per := checkAll(t, d, col, func(id int64) string {
			if edited[id] {
				return fmt.Sprintf("edited %d", id)
			}
			return fmt.Sprintf("message %d", id)
		})
		if per[oldID] != 0 || per[newID] != n-n/50 {
			t.Fatalf("after run: %v (stats %+v)", per, st)
		}
		// A second run has nothing to do.
		st2, err := job.Run(context.Background())
		if err != nil || st2.Resealed != 0 || st2.Current != n-n/50 {
			t.Fatalf("second run %+v %v", st2, err)
		}
	})
}

func TestReencryptUnreadableRows(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		col := mustColumn(t, kr, d.table(t, "bad"), "body")
		fillTable(t, d, col, 60)
		d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = 3`, col.Table())), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38})
		keyring.NewManager(kr).AddPrimary(context.Background(), keyring.AES256GCM)
		st, err := (&Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id"}).Run(context.Background())
		if !errors.Is(err, ErrUnreadableRows) || st.Failed != 1 || st.Resealed != 60-1-1 {
			t.Fatalf("%+v %v", st, err)
		}
		var raw []byte
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = 3`, col.Table()))).Scan(&raw)
		if raw[1] != 2 {
			t.Fatal("unreadable row was modified")
		}
	})
}

func TestRebind(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		table := d.table(t, "rebind")
		old := mustColumn(t, kr, table, "body")
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, owner BIGINT NOT NULL, body %s)`, table, d.blob)); err != nil {
			t.Fatal(err)
		}
		const n = 300
		for i := int64(1); i <= n; i++ {
			ct, _ := old.SealString(field.RowInt(i), fmt.Sprintf("m%d", i))
			if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, owner, body) VALUES (?, ?, ?)`, table)), i, i%7, ct); err != nil {
				t.Fatal(err)
			}
		}
		migrating := mustColumn(t, kr, table, "body", field.Bind("owner"), field.AcceptLegacyBinding())
		var ct field.Ciphertext
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = 5`, table))).Scan(&ct)
		if s, err := migrating.OpenString(field.RowInt(5).With(5%7), ct); err != nil || s != "m5" || migrating.LegacyOpens() != 1 {
			t.Fatalf("legacy value during migration: %q %v %d", s, err, migrating.LegacyOpens())
		}
		job := &Job{DB: d.db, Dialect: d.dialect, Column: migrating, Key: "id", BatchSize: 64}
		census, err := job.Count(ctx)
		if err != nil || census.LegacyBinding != n || census.Current != 0 {
			t.Fatalf("census before: %+v %v", census, err)
		}
		st, err := job.Run(ctx)
		if err != nil || st.Resealed != n {
			t.Fatalf("%+v %v", st, err)
		}
		census, _ = job.Count(ctx)
		if census.LegacyBinding != 0 || census.Current != n {
			t.Fatalf("census after: %+v", census)
		}
		final := mustColumn(t, kr, table, "body", field.Bind("owner"))
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = 5`, table))).Scan(&ct)
		if s, err := final.OpenString(field.RowInt(5).With(5), ct); err != nil || s != "m5" {
			t.Fatalf("re-bound value: %q %v", s, err)
		}
		if _, err := final.Open(field.RowInt(5).With(6), ct); !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("re-pointed owner after re-binding: %v", err)
		}
		if _, err := old.Open(field.RowInt(5), ct); !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("old binding after re-binding: %v", err)
		}
	})
}

func TestReencryptLeavesV1Behind(t *testing.T) {
	ctx := context.Background()
	mk, err := local.Load("../../keyring/testdata/v1-cli/mk", nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile("../../keyring/testdata/v1-cli/local.json")
	kr, err := keyring.Unmarshal(ctx, data, mk)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile("../../keyring/testdata/v1-cli/ct-local.txt")
	db, err := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "v1.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE messages (id BIGINT PRIMARY KEY, body TEXT)`)
	db.Exec(`INSERT INTO messages VALUES (42, ?)`, strings.TrimSpace(string(text)))
	col := mustColumn(t, kr, "messages", "body", field.WithEncoding(field.Text))
	job := &Job{DB: db, Dialect: field.SQLite, Column: col, Key: "id"}
	c, _ := job.Count(ctx)
	id, _ := keycore.KeyIDOf(mustDecode(t, string(text)))
	if c.PerVersion[1] != 1 || id != kr.Primary().ID || c.Current != 0 {
		t.Fatalf("census %+v", c)
	}
	st, err := job.Run(ctx)
	if fips140.Enabled() { // the v1 CLI sealed under XChaCha20-Poly1305, which the FIPS 140-3 mode refuses
		if !errors.Is(st.FirstFailure, keyring.ErrNotApproved) || st.Resealed != 0 {
			t.Fatalf("in the FIPS mode: %+v %v", st, err)
		}
		return
	}
	if err != nil || st.Resealed != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	var s string
	if err := db.QueryRow(`SELECT body FROM messages WHERE id = 42`).Scan(col.Scanner(field.RowInt(42), &s)); err != nil || s != "hello from v1" {
		t.Fatalf("%q %v", s, err)
	}
	var raw string
	db.QueryRow(`SELECT body FROM messages WHERE id = 42`).Scan(&raw)
	if !strings.HasPrefix(raw, "w4:") {
		t.Fatalf("stored %q", raw[:5])
	}
}

func TestCensusReportsUnrecoverableV2(t *testing.T) {
	raw, _ := os.ReadFile("../testdata/field-v2.json")
	var g struct {
		MasterKey string          `json:"master_key"`
		Keyring   json.RawMessage `json:"keyring"`
		Values    []struct {
			Table, Ciphertext string
			Row               int64
			Values            []any
		}
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	mk, _ := local.Parse(g.MasterKey)
	kr, err := keyring.Unmarshal(context.Background(), g.Keyring, mk)
	if err != nil {
		t.Fatal(err)
	}
	forEachDB(t, func(t *testing.T, d testDB) {
		// The values were sealed for table "notes": each test has a
		// database or schema of its own (internal/dbtest), so it is free.
		tbl := "notes"
		if _, err := d.db.Exec("CREATE TABLE " + tbl + " (id BIGINT PRIMARY KEY, owner TEXT, body " + d.blob + ")"); err != nil {
			t.Fatal(err)
		}
		for _, v := range g.Values {
			if v.Table != "notes" {
				continue
			}
			ct, _ := hex.DecodeString(v.Ciphertext)
			owner := "id-3" // what v2 encoded for the Stringer
			if s, ok := v.Values[0].(string); ok {
				owner = s // the time, as read back: RFC 3339, no monotonic reading
			}
			if _, err := d.db.Exec(d.q("INSERT INTO "+tbl+" (id, owner, body) VALUES (?, ?, ?)"), v.Row, owner, ct); err != nil {
				t.Fatal(err)
			}
		}
		c, _ := field.NewColumn(kr, tbl, "body", field.Bind("owner"))
		job := &Job{DB: d.db, Dialect: d.dialect, Column: c, Key: "id"}
		census, err := job.Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if census.Rows != 2 || census.Suspect != 1 || census.PerVersion[2] != 2 || census.Done() {
			t.Fatalf("census %+v", census)
		}
	})
}

func newKR(t testing.TB) *keyring.Keyring {
	t.Helper()
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func mustColumn(t testing.TB, kr *keyring.Keyring, table, col string, opts ...field.ColumnOption) *field.Column {
	t.Helper()
	c, err := field.NewColumn(kr, table, col, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustDecode(t *testing.T, s string) []byte {
	b, err := keyring.DecodeText(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testDB is a database under test with its dialect.
type testDB struct {
	name    string
	db      *sql.DB
	dialect field.Dialect
	driver  string
	dsn     string
	blob    string // binary column type
}

// forEachDB runs fn against a fresh field.SQLite file and, when configured, a
// real PostgreSQL database (internal/dbtest).
func forEachDB(t *testing.T, fn func(t *testing.T, d testDB)) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		dialect, err := field.ParseDialect(d.Driver)
		if err != nil {
			t.Fatal(err)
		}
		fn(t, testDB{name: d.Name, db: d.DB, dialect: dialect, driver: d.Driver, dsn: d.DSN, blob: d.Blob})
	})
}

func (d testDB) table(t *testing.T, prefix string) string {
	return dbtest.DB{DB: d.db}.Table(t, prefix)
}

func (d testDB) q(s string) string { return d.dialect.Rebind(s) }
