package subject

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

var updateGrant = flag.Bool("update-grant", false, "write testdata/grant-subject-v1.json (only when the format changes)")

// grantSubjectGolden is a grant of a per-subject column and the key rows
// it unwraps from: what a reader in another language needs.
type grantSubjectGolden struct {
	Comment         string          `json:"comment"`
	MasterKey       string          `json:"master_key"`
	Keyring         json.RawMessage `json:"keyring"`
	ReaderMasterKey string          `json:"reader_master_key"`
	Grant           json.RawMessage `json:"grant"`
	Namespace       string          `json:"namespace"`
	Table           string          `json:"table"`
	Column          string          `json:"column"`
	Bind            []string        `json:"bind"`
	Keys            []struct {
		Subject string `json:"subject"`
		Version int64  `json:"version"`
		Held    int    `json:"held"`
		Scoped  string `json:"scoped_hex"`
	} `json:"keys"`
	Values []struct {
		Row        int64  `json:"row"`
		Subject    string `json:"subject"`
		Plaintext  string `json:"plaintext"`
		Ciphertext string `json:"ciphertext_hex"`
		Opens      bool   `json:"opens"`
	} `json:"values"`
}

func writeGrantSubjectGolden(t *testing.T, path string) {
	ctx := context.Background()
	w := newGoldenWriter(t)
	mk, kr, db, l, s, col := w.mk, w.kr, w.db, w.l, w.s, w.col
	reader := local.Generate()
	l.RecordColumns(ctx, kr, ledger.ColumnOf(col, "id"))
	g := grantSubjectGolden{Comment: "a grant of a per-subject column (FORMAT.md, Grant file v1, Subject keys: scoped); written once with -update-grant",
		MasterKey: mk.Encode(), ReaderMasterKey: reader.Encode(), Namespace: "users", Table: "messages", Column: "body", Bind: []string{"user_id"}}
	for i, u := range []string{"alice", "bob"} {
		ct, _ := col.SealString(field.RowInt(int64(i+1)).With(u), u+"'s body")
		g.Values = append(g.Values, struct {
			Row        int64  `json:"row"`
			Subject    string `json:"subject"`
			Plaintext  string `json:"plaintext"`
			Ciphertext string `json:"ciphertext_hex"`
			Opens      bool   `json:"opens"`
		}{int64(i + 1), u, u + "'s body", hex.EncodeToString(ct.Bytes()), u == "alice"})
	}
	if _, _, err := s.MakePrivate(ctx, "bob", make([]byte, 32), PrivateOptions{}); err != nil {
		t.Fatal(err)
	}
	gr, _ := kr.Grant([]keyring.GrantScope{{Table: "messages", Column: "body", Namespace: "users"}})
	l.RecordGrant(ctx, kr, ledger.GrantOf(gr))
	if _, err := s.RefreshGrants(ctx, false); err != nil {
		t.Fatal(err)
	}
	rows, _ := db.Query(`SELECT subject, version, held, scoped FROM ward_subject_keys ORDER BY subject, version`)
	for rows.Next() {
		var k struct {
			Subject string `json:"subject"`
			Version int64  `json:"version"`
			Held    int    `json:"held"`
			Scoped  string `json:"scoped_hex"`
		}
		var sc []byte
		rows.Scan(&k.Subject, &k.Version, &k.Held, &sc)
		k.Scoped = hex.EncodeToString(sc)
		g.Keys = append(g.Keys, k)
	}
	rows.Close()
	g.Grant, _ = gr.Marshal(ctx, reader)
	g.Keyring, _ = kr.Marshal(ctx, mk)
	golden.Write(t, path, g)
}

// TestGoldenGrantSubject puts the checked-in key rows into a fresh
// database and opens with the grant what it opens: alice's body, not
// bob's (private since).
func TestGoldenGrantSubject(t *testing.T) {
	const path = "testdata/grant-subject-v1.json"
	if *updateGrant {
		writeGrantSubjectGolden(t, path)
	}
	ctx := context.Background()
	var g grantSubjectGolden
	golden.Read(t, path, &g)
	reader, _ := local.Parse(g.ReaderMasterKey)
	gr, err := keyring.UnmarshalGrant(ctx, g.Grant, reader)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "g.db")))
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE ward_subject_keys (namespace TEXT, subject TEXT, version BIGINT, first SMALLINT, wrapped BLOB, created_at BIGINT, held SMALLINT, recovery BLOB, scoped BLOB, PRIMARY KEY (namespace, subject, version))`); err != nil {
		t.Fatal(err)
	}
	for _, k := range g.Keys {
		sc, _ := hex.DecodeString(k.Scoped)
		db.Exec(`INSERT INTO ward_subject_keys (namespace, subject, version, wrapped, created_at, held, scoped) VALUES (?, ?, ?, x'00', 0, ?, ?)`, g.Namespace, k.Subject, k.Version, k.Held, sc)
	}
	keys, err := NewGrantKeys(Config{DB: db, Dialect: field.SQLite}, gr, g.Table, g.Column)
	if err != nil {
		t.Fatal(err)
	}
	col, err := field.GrantColumn(gr, g.Table, g.Column, field.Bind(g.Bind...), field.PerSubject(keys, g.Bind[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Values {
		b, _ := hex.DecodeString(v.Ciphertext)
		ct, _ := field.ParseCiphertext(b)
		pt, err := col.OpenString(field.RowInt(v.Row).With(v.Subject), ct)
		if v.Opens != (err == nil) || (err == nil && pt != v.Plaintext) {
			t.Errorf("%s: opens %v, got %q, %v", v.Subject, v.Opens, pt, err)
		}
	}
}
