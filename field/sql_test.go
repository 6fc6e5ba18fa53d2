package field

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/wardlab/ward/keyring"
)

// TestDatabaseRoundTrip writes and reads encrypted values through
// database/sql on SQLite and PostgreSQL, searches by blind index, and
// checks what the database really holds.
func TestDatabaseRoundTrip(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		tbl := d.table(t, "messages")
		body := mustColumn(t, kr, tbl, "body")
		title := mustColumn(t, kr, tbl, "title", WithEncoding(Text))
		idx, _ := NewBlindIndex(kr, tbl, "title", WithNormalizer(NormalizeFold))
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, body %s, title TEXT, title_idx %s)`, tbl, d.blob, d.blob)); err != nil {
			t.Fatal(err)
		}
		msgs := map[int64]sql.NullString{
			1: {String: "こんにちは、AIさん。今日の予定は？", Valid: true},
			2: {String: "", Valid: true},
			3: {},
		}
		for id, m := range msgs {
			b, err := body.SealNullString(RowInt(id), m)
			if err != nil {
				t.Fatal(err)
			}
			ti, _ := title.SealString(RowInt(id), fmt.Sprintf("Topic %d", id))
			if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, body, title, title_idx) VALUES (?, ?, ?, ?)`, tbl)),
				id, b, ti, idx.Compute(fmt.Sprintf("topic %d", id))); err != nil {
				t.Fatal(err)
			}
		}
		// Read back with Ciphertext + Open.
		rows, err := d.db.Query(fmt.Sprintf(`SELECT id, body, title FROM %s ORDER BY id`, tbl))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var b, ti Ciphertext
			if err := rows.Scan(&id, &b, &ti); err != nil {
				t.Fatal(err)
			}
			got, err := body.OpenNullString(RowInt(id), b)
			if err != nil || got != msgs[id] {
				t.Fatalf("row %d: %+v %v", id, got, err)
			}
			if s, err := title.OpenString(RowInt(id), ti); err != nil || s != fmt.Sprintf("Topic %d", id) {
				t.Fatalf("title %d: %q %v", id, s, err)
			}
		}
		rows.Close()
		// Read back with a Scanner when the row key is known.
		var s string
		if err := d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = ?`, tbl)), 1).Scan(body.Scanner(RowInt(1), &s)); err != nil || s != msgs[1].String {
			t.Fatalf("scanner: %q %v", s, err)
		}
		// Blind index search, case-insensitive through the normaliser.
		var found int64
		if err := d.db.QueryRow(d.q(fmt.Sprintf(`SELECT id FROM %s WHERE title_idx = ?`, tbl)), idx.Compute("TOPIC 2")).Scan(&found); err != nil || found != 2 {
			t.Fatalf("blind index: %d %v", found, err)
		}
		// The database holds no plaintext.
		var raw []byte
		var rawTitle string
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body, title FROM %s WHERE id = ?`, tbl)), 1).Scan(&raw, &rawTitle)
		if bytes.Contains(raw, []byte("AI")) || raw[0] != keyring.Version3 || rawTitle[:3] != "w3:" {
			t.Fatalf("stored form: %x %q", raw[:8], rawTitle)
		}
		// NULL stays NULL in the database.
		var isNull bool
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body IS NULL FROM %s WHERE id = ?`, tbl)), 3).Scan(&isNull)
		if !isNull {
			t.Fatal("NULL was encrypted")
		}
		// An operator copying row 1's ciphertext into row 2 gets an error.
		if _, err := d.db.Exec(fmt.Sprintf(`UPDATE %s SET body = (SELECT body FROM %s WHERE id = 1) WHERE id = 2`, tbl, tbl)); err != nil {
			t.Fatal(err)
		}
		err = d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = ?`, tbl)), 2).Scan(body.Scanner(RowInt(2), &s))
		if !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("copied ciphertext: %v", err)
		}
	})
}

func fillTable(t *testing.T, d testDB, col *Column, n int) {
	t.Helper()
	if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, body %s)`, col.Table(), d.blob)); err != nil {
		t.Fatal(err)
	}
	tx, _ := d.db.Begin()
	for i := 1; i <= n; i++ {
		var ct Ciphertext
		if i%50 != 0 { // every 50th row is NULL
			ct, _ = col.SealString(RowInt(int64(i)), fmt.Sprintf("message %d", i))
		}
		if _, err := tx.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, body) VALUES (?, ?)`, col.Table())), i, ct); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkAll opens every row and returns how many are under each key.
func checkAll(t *testing.T, d testDB, col *Column, want func(id int64) string) map[keyring.KeyID]int {
	t.Helper()
	rows, err := d.db.Query(fmt.Sprintf(`SELECT id, body FROM %s ORDER BY id`, col.Table()))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	per := map[keyring.KeyID]int{}
	for rows.Next() {
		var id int64
		var ct Ciphertext
		if err := rows.Scan(&id, &ct); err != nil {
			t.Fatal(err)
		}
		if !ct.Valid() {
			if id%50 != 0 {
				t.Fatalf("row %d became NULL", id)
			}
			continue
		}
		s, err := col.OpenString(RowInt(id), ct)
		if err != nil {
			t.Fatalf("row %d unreadable: %v", id, err)
		}
		if w := want(id); s != w {
			t.Fatalf("row %d = %q, want %q", id, s, w)
		}
		h, _ := ct.Header()
		per[h.KeyID]++
	}
	return per
}

// TestReencrypt rotates, counts (dry run), re-encrypts while another writer
// updates rows, and checks every row ends readable, correct and under the
// new primary.
func TestReencrypt(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		oldID := kr.Primary().ID
		col := mustColumn(t, kr, d.table(t, "reenc"), "body")
		const n = 1000
		fillTable(t, d, col, n)
		newID, _ := kr.Rotate(context.Background(), keyring.AES256GCM)

		job := &Reencrypt{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 37}
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
				ct, _ := col.SealString(RowInt(i), fmt.Sprintf("edited %d", i))
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
		if err != nil || st2.Reencrypted != 0 || st2.Current != n-n/50 {
			t.Fatalf("second run %+v %v", st2, err)
		}
	})
}

// TestReencryptUnreadableRows leaves rows it cannot open untouched and
// reports them.
func TestReencryptUnreadableRows(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		col := mustColumn(t, kr, d.table(t, "bad"), "body")
		fillTable(t, d, col, 60)
		d.db.Exec(d.q(fmt.Sprintf(`UPDATE %s SET body = ? WHERE id = 3`, col.Table())), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38})
		kr.Rotate(context.Background(), keyring.AES256GCM)
		st, err := (&Reencrypt{DB: d.db, Dialect: d.dialect, Column: col, Key: "id"}).Run(context.Background())
		if !errors.Is(err, ErrUnreadableRows) || st.Failed != 1 || st.Reencrypted != 60-1-1 {
			t.Fatalf("%+v %v", st, err)
		}
		var raw []byte
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = 3`, col.Table()))).Scan(&raw)
		if raw[1] != 2 {
			t.Fatal("unreadable row was modified")
		}
	})
}
