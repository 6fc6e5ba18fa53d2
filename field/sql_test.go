package field

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/wardlab/ward/keyring"
)

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
		// (Not a two-byte piece of it: random ciphertext holds "AI" in one
		// run of about 1,600.)
		if bytes.Contains(raw, []byte(msgs[1].String)) || bytes.Contains(raw, []byte("今日の予定")) || raw[0] != keyring.CurrentVersion || rawTitle[:3] != "w4:" {
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
