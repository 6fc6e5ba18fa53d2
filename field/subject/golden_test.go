package subject

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/golden"
)

var updateStore = flag.Bool("update-store", false, "write testdata/store-v1.json (only when the store's formats are added)")

// storeGolden is a keyring, rows of the three tables and values sealed
// under the keys they hold, as an earlier build wrote them.
type storeGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	// Namespace is the store's; Table, Column and Bind the values'
	// column (its context), with Bind naming the subject column too.
	Namespace    string            `json:"namespace"`
	Table        string            `json:"table"`
	Column       string            `json:"column"`
	Bind         []string          `json:"bind"`
	Keys         []subjectKeyRow   `json:"keys"`
	Tombstones   []goldenTombstone `json:"tombstones"`
	Sessions     []sessionRow      `json:"sessions"`
	Secret       string            `json:"bob_secret_hex"`
	RecoveryCode string            `json:"bob_recovery_code"`
	Token        string            `json:"bob_session_token_hex"`
	Values       []valueRow        `json:"values"`
}

// subjectKeyRow is one row of ward_subject_keys as a vector file holds it.
type subjectKeyRow struct {
	Subject  string `json:"subject"`
	Version  int64  `json:"version"`
	Held     int    `json:"held"`
	Wrapped  string `json:"wrapped_hex"`
	Recovery string `json:"recovery_hex,omitempty"`
}

// sessionRow is one row of ward_subject_sessions as a vector file holds it.
type sessionRow struct {
	Session string `json:"session"`
	Subject string `json:"subject"`
	Version int64  `json:"version"`
	Wrapped string `json:"wrapped_hex"`
}

// valueRow is one sealed value of the store's column and what it opens to.
type valueRow struct {
	Row        int64  `json:"row"`
	Subject    string `json:"subject"`
	Plaintext  string `json:"plaintext"`
	Ciphertext string `json:"ciphertext_hex"`
}

func writeStoreGolden(t *testing.T, path string) {
	ctx := context.Background()
	w := newGoldenWriter(t)
	mk, kr, db, s, col := w.mk, w.kr, w.db, w.s, w.col
	var err error
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i)
	}
	token := []byte("a session token of 32 bytes.....")
	g := storeGolden{Comment: "ward subject store formats v1 (FORMAT.md, Subject keys); written once with -update-store", MasterKey: mk.Encode(),
		Namespace: "users", Table: "messages", Column: "body", Bind: []string{"user_id"},
		Secret: hex.EncodeToString(secret), Token: hex.EncodeToString(token)}
	for i, u := range []string{"alice", "bob", "carol"} {
		ct, err := col.SealString(field.RowInt(int64(i+1)).With(u), u+"'s message")
		if err != nil {
			t.Fatal(err)
		}
		g.Values = append(g.Values, valueRow{int64(i + 1), u, u + "'s message", hex.EncodeToString(ct.Bytes())})
	}
	u, code, err := s.MakePrivate(ctx, "bob", secret, PrivateOptions{Recovery: true})
	if err != nil {
		t.Fatal(err)
	}
	g.RecoveryCode = code
	if err := s.StartSession(ctx, u, token, time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	rows, _ := db.Query(`SELECT subject, version, held, wrapped, recovery FROM ward_subject_keys ORDER BY subject`)
	for rows.Next() {
		var k subjectKeyRow
		var w, r []byte
		rows.Scan(&k.Subject, &k.Version, &k.Held, &w, &r)
		k.Wrapped, k.Recovery = hex.EncodeToString(w), hex.EncodeToString(r)
		g.Keys = append(g.Keys, k)
	}
	rows.Close()
	rows, _ = db.Query(`SELECT subject, forgotten_at, epoch, mac FROM ward_subject_tombstones`)
	for rows.Next() {
		var tb goldenTombstone
		rows.Scan(&tb.Subject, &tb.ForgottenAt, &tb.Epoch, &tb.MAC)
		g.Tombstones = append(g.Tombstones, tb)
	}
	rows.Close()
	rows, _ = db.Query(`SELECT session, subject, version, wrapped FROM ward_subject_sessions`)
	for rows.Next() {
		var se sessionRow
		var w []byte
		rows.Scan(&se.Session, &se.Subject, &se.Version, &w)
		se.Wrapped = hex.EncodeToString(w)
		g.Sessions = append(g.Sessions, se)
	}
	rows.Close()
	if g.Keyring, err = kr.Marshal(ctx, mk); err != nil {
		t.Fatal(err)
	}
	golden.Write(t, path, g)
}

// TestGoldenStore puts rows an earlier build wrote into a fresh database
// and opens what they hold: a keyring-wrapped key, a user-held key (by its
// secret, its recovery code and a session's token) and a tombstone.
func TestGoldenStore(t *testing.T) {
	const path = "testdata/store-v1.json"
	if *updateStore {
		writeStoreGolden(t, path)
	}
	ctx := context.Background()
	var g storeGolden
	golden.Read(t, path, &g)
	kr := golden.Keyring(t, g.MasterKey, g.Keyring)
	db, err := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "g.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if g.Namespace == "" || g.Table == "" || g.Column == "" || len(g.Bind) != 1 {
		t.Fatalf("the vectors do not name their namespace, table, column and bound subject column: %q %q %q %q", g.Namespace, g.Table, g.Column, g.Bind)
	}
	s, err := Open(ctx, Config{DB: db, Dialect: field.SQLite, Keyring: kr, Namespace: g.Namespace, TTL: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	dec := func(h string) []byte {
		if h == "" {
			return nil
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, k := range g.Keys {
		if _, err := db.Exec(`INSERT INTO ward_subject_keys (namespace, subject, version, first, wrapped, created_at, held, recovery) VALUES (?, ?, ?, 1, ?, 0, ?, ?)`, g.Namespace,
			k.Subject, k.Version, dec(k.Wrapped), k.Held, dec(k.Recovery)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range g.Tombstones {
		if _, err := db.Exec(`INSERT INTO ward_subject_tombstones VALUES (?, ?, ?, ?, ?)`, g.Namespace, tb.Subject, tb.ForgottenAt, tb.Epoch, tb.MAC); err != nil {
			t.Fatal(err)
		}
	}
	for _, se := range g.Sessions {
		if _, err := db.Exec(`INSERT INTO ward_subject_sessions VALUES (?, ?, ?, ?, ?, ?)`, g.Namespace, se.Session, se.Subject, se.Version, dec(se.Wrapped), time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC).Unix()); err != nil {
			t.Fatal(err)
		}
	}
	col, _ := field.NewColumn(kr, g.Table, g.Column, field.Bind(g.Bind...), field.PerSubject(s, g.Bind[0]))
	unlocked, err := s.Unlock(ctx, "bob", dec(g.Secret))
	if err != nil {
		t.Fatal(err)
	}
	session, err := s.Session(ctx, "bob", dec(g.Token))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Values) != 3 {
		t.Fatalf("%d values", len(g.Values))
	}
	for _, v := range g.Values {
		ct, err := field.ParseCiphertext(dec(v.Ciphertext))
		if err != nil {
			t.Fatal(err)
		}
		rk := field.RowInt(v.Row).With(v.Subject)
		switch v.Subject {
		case "alice":
			if got, err := col.OpenString(rk, ct); err != nil || got != v.Plaintext {
				t.Errorf("alice: %q %v", got, err)
			}
		case "bob":
			if _, err := col.OpenString(rk, ct); !errors.Is(err, field.ErrSubjectLocked) {
				t.Errorf("bob without his key: %v", err)
			}
			for name, keys := range map[string]*Unlocked{"secret": unlocked, "session": session} {
				if got, err := col.WithKeys(keys).OpenString(rk, ct); err != nil || got != v.Plaintext {
					t.Errorf("bob through his %s: %q %v", name, got, err)
				}
			}
		case "carol":
			if _, err := col.OpenString(rk, ct); !errors.Is(err, field.ErrSubjectErased) {
				t.Errorf("carol: %v", err)
			}
		default:
			t.Fatal(fmt.Sprint("unexpected subject ", v.Subject))
		}
	}
	tx, _ := db.Begin()
	if _, err := s.Reset(ctx, tx, "bob", g.RecoveryCode, make([]byte, 32)); err != nil {
		t.Fatalf("the recovery code: %v", err)
	}
	tx.Rollback()
}
