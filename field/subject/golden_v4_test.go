package subject

import (
	"bytes"
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

var updateV4 = flag.Bool("update-v4", false, "write testdata/subject-v4.json (only when a ciphertext or store version is added)")

// ledgerRow is a ward_ledger row as stored.
type ledgerRow struct {
	Counter int64  `json:"counter"`
	Body    string `json:"body"`
	MAC     string `json:"mac"`
}

// subjectV4Golden is what a reader in another language needs to open
// class-2 ciphertext v4 and to decide whether it may seal: keyring-wrapped
// keys, values under them, the ledger as it stands (anchored in the
// keyring) and an earlier ledger row (a rollback to refuse).
type subjectV4Golden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Namespace string          `json:"namespace"`
	Table     string          `json:"table"`
	Column    string          `json:"column"`
	Bind      []string        `json:"bind"`
	Keys      []storedKey     `json:"keys"`
	Values    []struct {
		Row        int64  `json:"row"`
		Subject    string `json:"subject"`
		Plaintext  string `json:"plaintext"`
		Ciphertext string `json:"ciphertext_hex"`
	} `json:"values"`
	Ledger      ledgerRow `json:"ledger"`
	OlderLedger ledgerRow `json:"older_ledger"`
	// SubjectGrant opens alice's values of the column and nothing else.
	SubjectGrant json.RawMessage `json:"subject_grant_alice"`
}

// aliceGrant is the subject grant of alice's first value's key version.
func aliceGrant(t *testing.T, col *field.Column, ctHex string) []byte {
	raw, _ := hex.DecodeString(ctHex)
	ct, err := field.ParseCiphertext(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := ct.SubjectKeyVersion()
	if !ok {
		t.Fatal("the vector does not name a subject key")
	}
	g, err := col.SubjectGrant("alice", v)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := g.Marshal()
	return b
}

func readLedgerRow(t *testing.T, db *sql.DB) ledgerRow {
	var r ledgerRow
	if err := db.QueryRow(`SELECT counter, body, mac FROM ward_ledger WHERE id = 1`).Scan(&r.Counter, &r.Body, &r.MAC); err != nil {
		t.Fatal(err)
	}
	return r
}

func writeSubjectV4Golden(t *testing.T, path string) {
	ctx := context.Background()
	w := newGoldenWriter(t)
	mk, kr, db, l, s, col := w.mk, w.kr, w.db, w.l, w.s, w.col
	var err error
	g := subjectV4Golden{Comment: "ward subject keys with class-2 ciphertext v4 and the ledger that gates writing (FORMAT.md, Subject keys, Keyring ledger); written once with -update-v4",
		MasterKey: mk.Encode(), Namespace: "users", Table: "messages", Column: "body", Bind: []string{"user_id"}}
	for i, u := range []string{"alice", "bob", "carol"} {
		ct, err := col.SealString(field.RowInt(int64(i+1)).With(u), u+"'s message, v4")
		if err != nil {
			t.Fatal(err)
		}
		g.Values = append(g.Values, struct {
			Row        int64  `json:"row"`
			Subject    string `json:"subject"`
			Plaintext  string `json:"plaintext"`
			Ciphertext string `json:"ciphertext_hex"`
		}{int64(i + 1), u, u + "'s message, v4", hex.EncodeToString(ct.Bytes())})
	}
	g.OlderLedger = readLedgerRow(t, db)
	g.SubjectGrant = aliceGrant(t, col, g.Values[0].Ciphertext)
	if err := s.Forget(ctx, "carol"); err != nil { // moves the ledger (and its anchor) on
		t.Fatal(err)
	}
	// What a fleet records once every process reads v4: the gate a
	// writer in another language consults before writing v4.
	err = l.ChangeForms(ctx, kr, func(fs []ledger.Form) []ledger.Form {
		return append(fs, ledger.Form{Name: "ciphertext:v4", Release: "0.4", Since: 1796000000000, Opened: 1796000001000})
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Ledger = readLedgerRow(t, db)
	g.Keys = keyRows(t, db, "")
	if g.Keyring, err = kr.Marshal(ctx, mk); err != nil {
		t.Fatal(err)
	}
	golden.Write(t, path, g)
}

// goldenWriter is what the writers of this package's vector files start
// from: a keyring file, a SQLite database with its ledger, the users'
// store and messages.body sealed per user.
type goldenWriter struct {
	mk  *local.MasterKey
	kr  *keyring.Keyring
	db  *sql.DB
	l   *ledger.Ledger
	s   *Store
	col *field.Column
}

func newGoldenWriter(t *testing.T) *goldenWriter {
	ctx := context.Background()
	w := &goldenWriter{mk: local.Generate()}
	dir := t.TempDir()
	var err error
	if w.kr, err = keyring.Create(ctx, filepath.Join(dir, "kr.json"), w.mk, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	w.db, _ = sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(dir, "g.db")))
	t.Cleanup(func() { w.db.Close() })
	w.l = &ledger.Ledger{DB: w.db, Dialect: field.SQLite}
	if err := w.l.Record(ctx, w.kr); err != nil {
		t.Fatal(err)
	}
	if w.s, err = Open(ctx, Config{DB: w.db, Dialect: field.SQLite, Keyring: w.kr, Ledger: w.l, Namespace: "users"}); err != nil {
		t.Fatal(err)
	}
	w.col, _ = field.NewColumn(w.kr, "messages", "body", field.Bind("user_id"), field.PerSubject(w.s, "user_id"))
	return w
}

// TestGoldenSubjectV4 puts the checked-in keys and ledger into a fresh
// database and opens the v4 values of the subjects that were not
// forgotten; the older ledger row is refused as a rollback.
func TestGoldenSubjectV4(t *testing.T) {
	const path = "testdata/subject-v4.json"
	if *updateV4 {
		writeSubjectV4Golden(t, path)
	}
	ctx := context.Background()
	var g subjectV4Golden
	golden.Read(t, path, &g)
	kr := golden.Keyring(t, g.MasterKey, g.Keyring)
	db, _ := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "g.db")))
	defer db.Close()
	s, err := Open(ctx, Config{DB: db, Dialect: field.SQLite, Keyring: kr, Namespace: g.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	insertKeys(t, db, g.Namespace, g.Keys)
	col, _ := field.NewColumn(kr, g.Table, g.Column, field.Bind(g.Bind...), field.PerSubject(s, g.Bind[0]))
	opened := 0
	for _, v := range g.Values {
		raw, _ := hex.DecodeString(v.Ciphertext)
		ct, err := field.ParseCiphertext(raw)
		if err != nil {
			t.Fatal(err)
		}
		pt, err := col.OpenString(field.RowInt(v.Row).With(v.Subject), ct)
		if err == nil && pt != v.Plaintext {
			t.Errorf("%s: %q", v.Subject, pt)
		}
		if err == nil {
			opened++
		}
	}
	if opened != 2 || len(g.Keys) != 2 {
		t.Fatalf("opened %d values with %d keys, want 2 of 3 (carol was forgotten)", opened, len(g.Keys))
	}
	var want bytes.Buffer
	json.Compact(&want, g.SubjectGrant)
	if got := aliceGrant(t, col, g.Values[0].Ciphertext); string(got) != want.String() {
		t.Errorf("alice's subject grant is\n%s\nnot\n%s", got, want.String())
	}
	l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	for _, c := range []struct {
		row   ledgerRow
		fails bool
	}{{g.Ledger, false}, {g.OlderLedger, true}} {
		plantLedgerRow(t, db, c.row)
		if err := l.Check(ctx, kr); (err != nil) != c.fails {
			t.Errorf("ledger at counter %d: %v", c.row.Counter, err)
		}
	}
}
