package subject

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

var updatePrivate = flag.Bool("update-private", false, "write testdata/private-journal-v1.json (only when the journal's or the store's format changes)")

// storedKey is a ward_subject_keys row as stored.
type storedKey struct {
	Subject string `json:"subject"`
	Version int64  `json:"version"`
	Held    int    `json:"held"`
	Wrapped string `json:"wrapped_hex"`
}

// privateGolden is what a reader in another language needs to refuse, as
// Go's store does, a keyring-wrapped key of a subject the forget journal
// records as private (FORMAT.md, "Private record v2"): the keyring file,
// the ledger (its tally of private subjects and its mark), the key rows as
// a database writer left them, the journal's lines, and each subject's
// answer.
type privateGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Namespace string          `json:"namespace"`
	Database  string          `json:"database"`
	Ledger    ledgerRow       `json:"ledger"`
	Keys      []storedKey     `json:"keys"`
	Journal   []string        `json:"journal"`
	// Subjects says, per subject, whether the journal records it as
	// private and whether a seal under its newest key is refused.
	Subjects []struct {
		Subject string `json:"subject"`
		Private bool   `json:"private"`
		Refused bool   `json:"refused"`
		Why     string `json:"why"`
	} `json:"subjects"`
}

// privateCases are the vector's subjects: who the journal makes private.
var privateCases = []struct {
	subject          string
	private, refused bool
	why              string
}{
	{"alice", true, true, "went private (record on the ledger's chain, of an epoch no longer current); a database writer put back her keyring-wrapped key rows from before"},
	{"bob", true, true, "a record under the current epoch, off the chain (a transaction that rolled back): whoever wrote it holds today's keyring"},
	{"carol", false, false, "a record planted with a keyring file from before the rotation: an epoch no longer current, off the chain"},
	{"dave", false, false, "a v1 record written after the namespace's mark (integrity:private-v2:users): v1 counts for nothing"},
	{"erin", false, false, "no record"},
	{"frank", true, true, "went private under an epoch since retired (its MAC cannot be checked): the chain proves it; his keys are user-held"},
}

// keyRows reads the namespace's key rows.
func keyRows(t *testing.T, db *sql.DB, where string) []storedKey {
	t.Helper()
	rows, err := db.Query(`SELECT subject, version, held, wrapped FROM ward_subject_keys ` + where + ` ORDER BY subject, version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []storedKey
	for rows.Next() {
		var k storedKey
		var w []byte
		if err := rows.Scan(&k.Subject, &k.Version, &k.Held, &w); err != nil {
			t.Fatal(err)
		}
		k.Wrapped = hex.EncodeToString(w)
		out = append(out, k)
	}
	return out
}

// insertKeys inserts key rows of a namespace as stored.
func insertKeys(t *testing.T, db *sql.DB, namespace string, keys []storedKey) {
	t.Helper()
	for _, k := range keys {
		wr, _ := hex.DecodeString(k.Wrapped)
		if _, err := db.Exec(`INSERT INTO ward_subject_keys (namespace, subject, version, first, wrapped, created_at, held) VALUES (?, ?, ?, NULL, ?, 0, ?)`, namespace, k.Subject, k.Version, wr, k.Held); err != nil {
			t.Fatal(err)
		}
	}
}

// plantLedgerRow makes row the database's only ledger row (the table
// created if missing).
func plantLedgerRow(t *testing.T, db *sql.DB, row ledgerRow) {
	t.Helper()
	db.Exec(`CREATE TABLE IF NOT EXISTS ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)`)
	db.Exec(`DELETE FROM ward_ledger`)
	if _, err := db.Exec(`INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)`, row.Counter, row.Body, row.MAC); err != nil {
		t.Fatal(err)
	}
}

// rotate adds a key to w's keyring, records it and promotes it: a new
// integrity epoch. With retire, the store's keys move to it and the old
// key is retired and removed: the old epoch ends.
func (w *goldenWriter) rotate(t *testing.T, retire bool) {
	t.Helper()
	ctx := context.Background()
	old := w.kr.Primary().ID
	m := keyring.NewManager(w.kr)
	id, err := m.Add(ctx, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.l.Record(ctx, w.kr, id); err != nil {
		t.Fatal(err)
	}
	if err := m.Promote(ctx, id); err != nil {
		t.Fatal(err)
	}
	if !retire {
		return
	}
	if _, err := w.s.Reseal(ctx, ResealOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.l.Retire(ctx, w.kr, old); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, old); err != nil {
		t.Fatal(err)
	}
}

// appendPrivate appends a private record of subject with the keyring kr.
func appendPrivate(t *testing.T, dir string, kr *keyring.Keyring, e forgetlog.Entry) {
	t.Helper()
	j, err := forgetlog.Open(dir, kr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func writePrivateGolden(t *testing.T, path string) {
	ctx := context.Background()
	w := newGoldenWriter(t)
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := forgetlog.Open(dir, w.kr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if w.s, err = Open(ctx, Config{DB: w.db, Dialect: field.SQLite, Keyring: w.kr, Ledger: w.l, Namespace: "users", Journal: j}); err != nil {
		t.Fatal(err)
	}
	w.col, _ = field.NewColumn(w.kr, "messages", "body", field.Bind("user_id"), field.PerSubject(w.s, "user_id"))
	for i, c := range privateCases {
		if _, err := w.col.SealString(field.RowInt(int64(i+1)).With(c.subject), c.subject+"'s message"); err != nil {
			t.Fatal(err)
		}
	}
	secret := func() []byte {
		_, s, err := newHasher(t).HashWithKey(ctx, []byte("pw"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, _, err := w.s.MakePrivate(ctx, "frank", secret(), PrivateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.rotate(t, true) // frank's epoch ends
	alice := keyRows(t, w.db, `WHERE subject = 'alice'`)
	if _, _, err := w.s.MakePrivate(ctx, "alice", secret(), PrivateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(w.kr.Path())
	w.rotate(t, false) // alice's epoch is no longer current
	old, err := keyring.Unmarshal(ctx, before, w.mk)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.l.Verified(ctx, w.kr)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Marks, PrivateV2Mark("users")) {
		t.Fatalf("the store opened with a journal did not mark the ledger: %v", st.Marks)
	}
	tally := st.Tally(PrivateCounter("users"))
	chained := func(sub string) forgetlog.Entry {
		return forgetlog.Entry{Database: st.Database, Namespace: "users", Subject: sub, Private: true, Chain: true, Prev: tally}
	}
	appendPrivate(t, dir, w.kr, chained("bob"))
	appendPrivate(t, dir, old, chained("carol"))
	appendPrivate(t, dir, w.kr, forgetlog.Entry{Database: st.Database, Namespace: "users", Subject: "dave", Private: true})
	// A database writer puts alice's key rows back from before she went private.
	if _, err := w.db.Exec(`DELETE FROM ward_subject_keys WHERE subject = 'alice'`); err != nil {
		t.Fatal(err)
	}
	insertKeys(t, w.db, "users", alice)
	g := privateGolden{Comment: "the forget journal's private records as a reader in another language meets them (FORMAT.md, Private record v2); written once with -update-private",
		MasterKey: w.mk.Encode(), Namespace: "users", Database: st.Database, Ledger: readLedgerRow(t, w.db), Keys: keyRows(t, w.db, "")}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+forgetlog.Ext))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if line != "" {
				g.Journal = append(g.Journal, line)
			}
		}
	}
	slices.Sort(g.Journal)
	for _, c := range privateCases {
		g.Subjects = append(g.Subjects, struct {
			Subject string `json:"subject"`
			Private bool   `json:"private"`
			Refused bool   `json:"refused"`
			Why     string `json:"why"`
		}{c.subject, c.private, c.refused, c.why})
	}
	if g.Keyring, err = w.kr.Marshal(ctx, w.mk); err != nil {
		t.Fatal(err)
	}
	golden.Write(t, path, g)
}

// TestGoldenPrivateJournal puts the checked-in keys, ledger and journal
// into a fresh database and folder: Go's store answers each subject as
// the vector says, and refuses a seal under alice's put-back key.
func TestGoldenPrivateJournal(t *testing.T) {
	const path = "testdata/private-journal-v1.json"
	if *updatePrivate {
		writePrivateGolden(t, path)
	}
	ctx := context.Background()
	var g privateGolden
	golden.Read(t, path, &g)
	kr := golden.Keyring(t, g.MasterKey, g.Keyring)
	db, _ := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "g.db")))
	defer db.Close()
	plantLedgerRow(t, db, g.Ledger)
	dir := filepath.Join(t.TempDir(), "journal")
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "forgets-golden"+forgetlog.Ext), []byte(strings.Join(g.Journal, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := forgetlog.Open(dir, kr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	l := &ledger.Ledger{DB: db, Dialect: field.SQLite}
	s, err := Open(ctx, Config{DB: db, Dialect: field.SQLite, Keyring: kr, Ledger: l, Namespace: g.Namespace, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	insertKeys(t, db, g.Namespace, g.Keys)
	if len(g.Subjects) != len(privateCases) {
		t.Fatalf("%d subjects in the vector", len(g.Subjects))
	}
	for _, c := range g.Subjects {
		p, err := s.Private(ctx, c.Subject)
		if err != nil || p != c.Private {
			t.Errorf("%s: private %v, %v; want %v (%s)", c.Subject, p, err, c.Private, c.Why)
		}
		_, err = s.SealingKey(c.Subject)
		if (err != nil) != c.Refused || (c.Refused && !errors.Is(err, field.ErrSubjectLocked)) {
			t.Errorf("%s: sealing: %v; want refused %v (%s)", c.Subject, err, c.Refused, c.Why)
		}
	}
}
