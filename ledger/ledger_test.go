package ledger

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// fileKeyring creates a keyring file in a temporary folder: the folder,
// its master key and the keyring.
func fileKeyring(t *testing.T) (string, *local.MasterKey, *keyring.Keyring) {
	t.Helper()
	dir := t.TempDir()
	mk := local.Generate()
	kr, err := keyring.Create(context.Background(), filepath.Join(dir, "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	return dir, mk, kr
}

// ledgerRow is a ledger's raw row, to replay or alter as a database writer
// would.
type ledgerRow struct {
	counter   int64
	body, mac string
}

func readRow(t *testing.T, d testDB, l *Ledger) ledgerRow {
	t.Helper()
	var r ledgerRow
	if err := d.db.QueryRow(`SELECT counter, body, mac FROM `+l.Table+` WHERE id = 1`).Scan(&r.counter, &r.body, &r.mac); err != nil {
		t.Fatal(err)
	}
	return r
}

func writeRow(t *testing.T, d testDB, l *Ledger, r ledgerRow) {
	t.Helper()
	if _, err := d.db.Exec(d.q(`UPDATE `+l.Table+` SET counter = ?, body = ?, mac = ? WHERE id = 1`), r.counter, r.body, r.mac); err != nil {
		t.Fatal(err)
	}
}

// TestLedger: a keyring that lacks a recorded key ID, belongs to another
// database, or is older than a generation seen is refused.
func TestLedger(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		dir, mk, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Check(ctx, kr); err != nil {
			t.Fatalf("empty ledger, first start: %v", err)
		}
		if ids, err := l.Keyrings(ctx); err != nil || len(ids) != 0 {
			t.Fatalf("empty ledger lists %v %v", ids, err)
		}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if ids, err := l.Keyrings(ctx); err != nil || len(ids) != 1 || ids[0] != kr.ID() {
			t.Fatalf("ledger lists %v %v, want [%s]", ids, err, kr.ID())
		}
		st, err := l.Read(ctx)
		if err != nil || st == nil || st.Keyring != kr.ID() || len(st.Keys) != 1 || st.Keys[0].ID != kr.Primary().ID || st.Keys[0].State != "primary" || st.Counter != 1 {
			t.Fatalf("ledger state %+v %v", st, err)
		}
		if a, ok := core(kr).Anchor(st.Database); !ok || a.Counter != 1 {
			t.Fatalf("anchor %+v %v after the first write", a, ok)
		}
		// Recording what is recorded writes nothing.
		gen := kr.Generation()
		if err := l.Record(ctx, kr); err != nil || kr.Generation() != gen || readRow(t, d, l).counter != 1 {
			t.Fatalf("no-op Record: %v, generation %d -> %d", err, gen, kr.Generation())
		}
		// Columns: recorded once, replaced when their description changes.
		body, _ := field.NewColumn(kr, "messages", "body", field.Bind("conversation_id"))
		if err := l.RecordColumns(ctx, kr, ColumnOf(body, "id"), Column{Table: "users", Column: "email", Key: "id", Text: true}); err != nil {
			t.Fatal(err)
		}
		n := readRow(t, d, l).counter
		if err := l.RecordColumns(ctx, kr, ColumnOf(body, "id")); err != nil || readRow(t, d, l).counter != n {
			t.Fatalf("recording a recorded column wrote: %v", err)
		}
		if err := l.RecordColumns(ctx, kr, Column{Table: "users", Column: "email", Key: "user_id"}); err != nil {
			t.Fatal(err)
		}
		if st, _ := l.Read(ctx); len(st.Columns) != 2 || st.Columns[0].Table != "messages" || st.Columns[0].Bind[0] != "conversation_id" || st.Columns[1].Key != "user_id" || st.Columns[1].Text {
			t.Fatalf("columns %+v", st.Columns)
		}
		if err := l.RecordColumns(ctx, kr, Column{Table: "t; DROP", Column: "c", Key: "id"}); err == nil {
			t.Fatal("a bad table name was recorded")
		}
		stale, _ := os.ReadFile(kr.Path())
		id, _ := keyring.NewManager(kr).Add(ctx, keyring.AES256GCM)
		if err := l.Record(ctx, kr, id); err != nil {
			t.Fatal(err)
		}
		keyring.NewManager(kr).Promote(ctx, id)
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if err := l.Check(ctx, kr); err != nil {
			t.Fatal(err)
		}
		// An older copy of the file: missing the new key and older.
		os.WriteFile(filepath.Join(dir, "old.json"), stale, 0o600)
		old, _ := keyring.Load(ctx, filepath.Join(dir, "old.json"), mk)
		if err := l.Check(ctx, old); !errors.Is(err, keyring.ErrRollback) {
			t.Fatalf("rolled-back keyring: %v", err)
		}
		// A brand-new keyring (the path had a typo): another keyring.
		other, _ := keyring.Create(ctx, filepath.Join(dir, "new.json"), mk, keyring.AES256GCM)
		if err := l.Check(ctx, other); !errors.Is(err, keyring.ErrWrongKeyring) {
			t.Fatalf("another keyring: %v", err)
		}
		// The same keyring without a recorded key (an in-memory keyring
		// given a made-up ID): missing keys are named.
		mem, _ := keyring.New(keyring.AES256GCM)
		l2 := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger2")}
		if err := l2.Record(ctx, mem, mem.Primary().ID, 0x12345678); err != nil {
			t.Fatal(err)
		}
		var me *MissingKeysError
		if err := l2.Check(ctx, mem); !errors.As(err, &me) || len(me.IDs) != 1 || me.IDs[0] != 0x12345678 || !errors.Is(err, keyring.ErrUnknownKey) {
			t.Fatalf("missing key: %v", err)
		}
	})
}

// TestLedgerWriterAttacks is the seams issue's database writer against the
// ledger: deleting it, putting back an older copy, altering it, or forging
// one with an older keyring file. Each is refused, because the keyring
// file anchors what the database last held.
func TestLedgerWriterAttacks(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		dir, mk, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		before := readRow(t, d, l)
		oldFile, _ := os.ReadFile(kr.Path())
		if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if err := l.Mark(ctx, kr, "migrated"); err != nil {
			t.Fatal(err)
		}
		if ok, err := l.Marked(ctx, kr, "migrated"); !ok || err != nil {
			t.Fatalf("Marked: %v %v", ok, err)
		}
		now := readRow(t, d, l)

		// Replay: the row from before the rotation.
		writeRow(t, d, l, before)
		if err := l.Check(ctx, kr); !errors.Is(err, ErrReplayed) {
			t.Fatalf("replayed ledger: %v, want ErrReplayed", err)
		}
		if _, err := l.Marked(ctx, kr, "migrated"); err == nil {
			t.Fatal("a replayed ledger answered Marked")
		}
		// Altered: the body edited (a key dropped, the counter raised).
		alt := now
		alt.body = alt.body[:len(alt.body)-1] + " }"
		writeRow(t, d, l, alt)
		if err := l.Check(ctx, kr); !errors.Is(err, ErrTampered) {
			t.Fatalf("altered ledger: %v, want ErrTampered", err)
		}
		// Oversized: a body or MAC past its bound is refused by its length
		// (and never loaded).
		for _, big := range []ledgerRow{
			{counter: now.counter, body: now.body + strings.Repeat(" ", maxBody), mac: now.mac},
			{counter: now.counter, body: now.body, mac: now.mac + strings.Repeat("0", 4<<20)},
		} {
			writeRow(t, d, l, big)
			if err := l.Check(ctx, kr); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "overlong") {
				t.Fatalf("oversized ledger (%d, %d bytes): %v, want ErrTampered", len(big.body), len(big.mac), err)
			}
		}
		writeRow(t, d, l, now)
		// Forged with the keyring file from before the rotation (whose
		// holder has the master key): its state key is older than the
		// anchor's.
		old, err := keyring.Unmarshal(ctx, oldFile, mk)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := l.Read(ctx)
		forged := fmt.Sprintf(`{"database":%q,"keyring":%q,"keys":[],"generation":1,"counter":99,"epoch":%d}`, st.Database, kr.ID(), core(old).StateEpoch())
		epoch, mac := core(old).StateMAC(stateMessage(forged))
		if epoch != core(old).StateEpoch() {
			t.Fatal("epoch")
		}
		writeRow(t, d, l, ledgerRow{counter: 99, body: forged, mac: fmt.Sprintf("%x", mac)})
		if err := l.Check(ctx, kr); !errors.Is(err, ErrReplayed) {
			t.Fatalf("ledger forged under an older keyring file: %v, want ErrReplayed", err)
		}
		// Deleted: the keyring anchors the database, so an empty ledger
		// is not a first start.
		if _, err := d.db.Exec(`DELETE FROM ` + l.Table); err != nil {
			t.Fatal(err)
		}
		if err := l.Check(ctx, kr); !errors.Is(err, ErrMissing) {
			t.Fatalf("deleted ledger: %v, want ErrMissing", err)
		}
		if err := l.Record(ctx, kr); !errors.Is(err, ErrMissing) {
			t.Fatalf("Record on a deleted ledger: %v, want ErrMissing", err)
		}
		if _, err := l.Adopt(ctx, kr, AdoptOptions{}); !errors.Is(err, ErrMissing) {
			t.Fatalf("Adopt without AnotherDatabase while the keyring anchors one: %v", err)
		}
		// The genuine row back: accepted again.
		d.db.Exec(d.q(`INSERT INTO `+l.Table+` (id, counter, body, mac) VALUES (1, ?, ?, ?)`), now.counter, now.body, now.mac)
		if err := l.Check(ctx, kr); err != nil {
			t.Fatalf("the genuine ledger: %v", err)
		}
		// The keyring file restored from before the database was anchored
		// more than once: its anchor is missing, and it is older.
		os.WriteFile(filepath.Join(dir, "old.json"), oldFile, 0o600)
		oldKR, _ := keyring.Load(ctx, filepath.Join(dir, "old.json"), mk)
		if err := l.Check(ctx, oldKR); !errors.Is(err, keyring.ErrRollback) {
			t.Fatalf("old keyring file: %v", err)
		}
	})
}

// TestLedgerAdopt: the unauthenticated ledger of an earlier release is
// refused until an operator adopts it, once.
func TestLedgerAdopt(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		kt := sqltable.KeyText(d.dialect.String(), 255)
		d.db.Exec(`CREATE TABLE ` + LegacyTable + ` (keyring_id ` + kt + ` NOT NULL, key_id ` + kt + ` NOT NULL, generation BIGINT NOT NULL, PRIMARY KEY (keyring_id, key_id))`)
		t.Cleanup(func() { d.db.Exec(`DROP TABLE ` + LegacyTable) })
		if _, err := d.db.Exec(d.q(`INSERT INTO `+LegacyTable+` VALUES (?, ?, 1)`), kr.ID(), kr.Primary().ID.String()); err != nil {
			t.Fatal(err)
		}
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Check(ctx, kr); !errors.Is(err, ErrNotAdopted) {
			t.Fatalf("unadopted: %v, want ErrNotAdopted", err)
		}
		if ids, _ := l.Keyrings(ctx); len(ids) != 1 || ids[0] != kr.ID() {
			t.Fatalf("Keyrings before adoption: %v", ids)
		}
		// Another keyring's database is not adopted.
		other, _ := keyring.New(keyring.AES256GCM)
		if _, err := l.Adopt(ctx, other, AdoptOptions{}); !errors.Is(err, keyring.ErrWrongKeyring) {
			t.Fatalf("adopting with another keyring: %v", err)
		}
		got, err := l.Adopt(ctx, kr, AdoptOptions{})
		if err != nil || got.Legacy != 1 || got.Database == "" {
			t.Fatalf("Adopt: %+v %v", got, err)
		}
		if err := l.Check(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Adopt(ctx, kr, AdoptOptions{AnotherDatabase: true}); !errors.Is(err, ErrAlreadyAdopted) {
			t.Fatalf("second Adopt: %v", err)
		}
		// A second database under the same keyring joins by adoption.
		l2 := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger2")}
		d.db.Exec(`DELETE FROM ` + LegacyTable)
		if err := l2.Check(ctx, kr); !errors.Is(err, ErrMissing) {
			t.Fatalf("new database under an anchoring keyring: %v", err)
		}
		if _, err := l2.Adopt(ctx, kr, AdoptOptions{AnotherDatabase: true}); err != nil {
			t.Fatal(err)
		}
		if err := l2.Check(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if len(core(kr).Anchored()) != 2 {
			t.Fatalf("anchored %v", core(kr).Anchored())
		}
	})
}

// TestLedgerLegacyBounds: the unauthenticated ledger's text is read
// within bounds: a database writer's huge key ID is refused, never read.
func TestLedgerLegacyBounds(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		// Without the primary key, whose index would refuse the value on
		// PostgreSQL: a writer can re-create the table so.
		lt := sqltable.LongText(d.dialect.String())
		d.db.Exec(`CREATE TABLE ` + LegacyTable + ` (keyring_id ` + lt + ` NOT NULL, key_id ` + lt + ` NOT NULL, generation BIGINT NOT NULL)`)
		t.Cleanup(func() { d.db.Exec(`DROP TABLE ` + LegacyTable) })
		const huge = 8 << 20
		if _, err := d.db.Exec(d.q(`INSERT INTO `+LegacyTable+` VALUES (?, ?, 1)`), kr.ID(), strings.Repeat("a", huge)); err != nil {
			t.Fatal(err)
		}
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := l.Adopt(ctx, kr, AdoptOptions{})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "unauthenticated ledger") || after.TotalAlloc-before.TotalAlloc > huge/4 {
			t.Fatalf("a huge legacy key ID: %v, %d bytes allocated", err, after.TotalAlloc-before.TotalAlloc)
		}
	})
}

// Concurrent first writes from two processes agree on one database ID.
func TestLedgerConcurrentRecord(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "kr.json")
		mk := local.Generate()
		kr, err := keyring.Create(ctx, path, mk, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		table := d.table(t, "ledger")
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				k, err := keyring.Load(ctx, path, mk)
				if err == nil {
					err = (&Ledger{DB: d.db, Dialect: d.dialect, Table: table}).Record(ctx, k)
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		kr.Reload(ctx)
		if err := (&Ledger{DB: d.db, Dialect: d.dialect, Table: table}).Check(ctx, kr); err != nil || len(core(kr).Anchored()) != 1 {
			t.Fatalf("after concurrent first writes: %v, anchored %v", err, core(kr).Anchored())
		}
	})
}

var updateLedgerGolden = flag.Bool("update-ledger", false, "rewrite testdata/ledger-v1.json (only when the ledger format changes)")

// ledgerGolden is testdata/ledger-v1.json: a keyring file with two state
// keys and an anchor, and ledger rows MAC'd under each.
type ledgerGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Rows      []struct {
		Body  string `json:"body"`
		Epoch uint64 `json:"epoch"`
		MAC   string `json:"mac"`
	} `json:"rows"`
}

func TestGoldenLedger(t *testing.T) {
	const path = "testdata/ledger-v1.json"
	if *updateLedgerGolden {
		writeLedgerGolden(t, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g ledgerGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	kr := goldenKeyring(t, g.MasterKey, g.Keyring)
	if len(g.Rows) != 2 || g.Rows[0].Epoch >= g.Rows[1].Epoch {
		t.Fatalf("golden file holds %d rows", len(g.Rows))
	}
	for _, r := range g.Rows {
		var st State
		if err := json.Unmarshal([]byte(r.Body), &st); err != nil || st.Epoch != r.Epoch || st.Keyring != kr.ID() {
			t.Fatalf("golden body %s: %v", r.Body, err)
		}
		mac, _ := hex.DecodeString(r.MAC)
		if err := core(kr).VerifyStateMAC(r.Epoch, stateMessage(r.Body), mac); err != nil {
			t.Fatalf("golden row at epoch %d: %v", r.Epoch, err)
		}
		if a, ok := core(kr).Anchor(st.Database); !ok || a.Counter < st.Counter || !a.HasMark("golden") {
			t.Fatalf("golden anchor %+v %v", a, ok)
		}
	}
}

func writeLedgerGolden(t *testing.T, path string) {
	ctx := context.Background()
	mk := local.Generate()
	file := filepath.Join(t.TempDir(), "kr.json")
	kr, err := keyring.Create(ctx, file, mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	g := ledgerGolden{Comment: "ward ledger state v1: HMAC-SHA-256 under a keyring state key; regenerate with go test ./field -run GoldenLedger -update-ledger only when the format changes", MasterKey: mk.Encode()}
	row := func(counter uint64) {
		st := State{Database: "db-0123456789abcdef", Keyring: kr.ID(), Generation: kr.Generation(), Counter: counter, Epoch: core(kr).StateEpoch(), Marks: []string{"golden"}}
		for _, k := range kr.Keys() {
			st.Keys = append(st.Keys, Key{ID: k.ID, State: k.State.String()})
		}
		body, _ := json.Marshal(st)
		epoch, mac := core(kr).StateMAC(stateMessage(string(body)))
		g.Rows = append(g.Rows, struct {
			Body  string `json:"body"`
			Epoch uint64 `json:"epoch"`
			MAC   string `json:"mac"`
		}{string(body), epoch, hex.EncodeToString(mac)})
		if err := core(kr).SetAnchor(ctx, st.Database, Anchor{Counter: counter, Epoch: epoch, Marks: st.Marks}); err != nil {
			t.Fatal(err)
		}
	}
	row(1)
	if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	row(2)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g.Keyring = json.RawMessage(raw)
	out, _ := json.MarshalIndent(g, "", "  ")
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzLedger: whatever a database writer puts in the ledger row, Verified
// neither panics nor accepts anything but a state the keyring MAC'd.
func FuzzLedger(f *testing.F) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	db, err := sql.Open("sqlite", filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	l := &Ledger{DB: db, Dialect: field.SQLite}
	if err := l.Record(ctx, kr); err != nil {
		f.Fatal(err)
	}
	var genuine ledgerRow
	db.QueryRow(`SELECT counter, body, mac FROM ward_ledger WHERE id = 1`).Scan(&genuine.counter, &genuine.body, &genuine.mac)
	f.Add(genuine.counter, genuine.body, genuine.mac)
	f.Add(int64(2), `{"database":"db-1","keyring":"`+kr.ID()+`","keys":[],"counter":2,"epoch":0}`, genuine.mac)
	f.Add(int64(-1), `{"counter":-1}`, "zz")
	f.Add(int64(1), `{"keys":[{"id":0,"state":"primary"}]}`, "")
	f.Fuzz(func(t *testing.T, counter int64, body, mac string) {
		if _, err := db.Exec(`UPDATE ward_ledger SET counter = ?, body = ?, mac = ? WHERE id = 1`, counter, body, mac); err != nil {
			t.Skip()
		}
		st, err := l.Verified(ctx, kr)
		if err == nil && (st == nil || body != genuine.body) {
			t.Fatalf("accepted a ledger the keyring did not write: %q", body)
		}
	})
}

// A process that loaded the keyring file before the database's first
// anchor reads a ledger another process wrote and anchored since, at a
// counter above 1 and at the generation it loaded (the writer's own
// anchor raised the file's generation only after its write): the file is
// read again, not the ledger refused as unanchored. A file that still
// anchors nothing refuses it.
func TestLedgerAnchoredSinceLoad(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		dir, mk, kr := fileKeyring(t)
		path := filepath.Join(dir, "kr.json")
		load := func() *keyring.Keyring {
			k, err := keyring.Load(ctx, path, mk)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		reader, second := load(), load() // both before any anchor
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		table := d.table(t, "ledger")
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: table}
		if err := l.Record(ctx, kr); err != nil { // counter 1, anchored
			t.Fatal(err)
		}
		if err := l.Mark(ctx, second, "m"); err != nil { // counter 2 at the first generation
			t.Fatal(err)
		}
		if st, err := l.Verified(ctx, reader); err != nil || st.Counter != 2 {
			t.Fatalf("a keyring loaded before the first anchor: %v", err)
		}
		// A copy of the file from before the first anchor still refuses a
		// ledger above counter 1.
		stale := filepath.Join(dir, "stale.json")
		if err := os.WriteFile(stale, before, 0o600); err != nil {
			t.Fatal(err)
		}
		old, err := keyring.Load(ctx, stale, mk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Verified(ctx, old); !errors.Is(err, ErrAnchorMissing) {
			t.Fatalf("a file from before the first anchor: %v, want ErrAnchorMissing", err)
		}
	})
}

// A ledger written by a newer release carries fields this one does not
// know; this release's next write keeps them (a fleet deployed one
// instance at a time, or rolled back, drops nothing a newer release
// recorded), and they stay authenticated with the rest.
func TestLedgerKeepsNewerFields(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		r := readRow(t, d, l)
		var body map[string]any
		if err := json.Unmarshal([]byte(r.body), &body); err != nil {
			t.Fatal(err)
		}
		body["future_records"] = []any{map[string]any{"kind": "x", "epoch": 7}}
		body["counter"] = float64(r.counter + 1)
		b, _ := json.Marshal(body)
		_, mac := core(kr).StateMAC(stateMessage(string(b)))
		writeRow(t, d, l, ledgerRow{counter: r.counter + 1, body: string(b), mac: hex.EncodeToString(mac)})
		if err := l.Mark(ctx, kr, "a mark"); err != nil {
			t.Fatal(err)
		}
		after := readRow(t, d, l)
		if !strings.Contains(after.body, `"future_records":[{"epoch":7,"kind":"x"}]`) || !strings.Contains(after.body, `"a mark"`) {
			t.Fatalf("the newer release's field was dropped: %s", after.body)
		}
		if st, err := l.Verified(ctx, kr); err != nil || !slices.Contains(st.Marks, "a mark") {
			t.Fatalf("after the write: %v", err)
		}
	})
}

// FuzzStateJSON: a ledger body decodes without panicking, and what it
// encodes to decodes to the same state, the unknown fields included.
func FuzzStateJSON(f *testing.F) {
	f.Add(`{"database":"db-1","keyring":"kr","counter":3,"future":[1,2]}`)
	f.Add(`{"Database":"x","DATABASE":"y","indexes":[{"epoch":5}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		var st State
		if json.Unmarshal([]byte(body), &st) != nil {
			return
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("re-encoding %q: %v", body, err)
		}
		var again State
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("decoding %s: %v", b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("%s re-encodes as %s", b, b2)
		}
	})
}

// TestTallyEachTx: several identities tallied and a mark set in one write
// of the ledger (its counter moves by one), each identity chaining from
// the tally before it, the same chain TallyTx builds one at a time; a
// rolled-back transaction leaves neither.
func TestTallyEachTx(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		ids := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
		tallyIn := func(commit bool) ([]Tally, uint64) {
			t.Helper()
			before, err := l.Verified(ctx, kr)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := d.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			prevs, anchor, err := l.TallyEachTx(ctx, tx, kr, "n", ids, "moved")
			if err != nil {
				t.Fatal(err)
			}
			if commit {
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if err := anchor(ctx); err != nil {
					t.Fatal(err)
				}
			}
			return prevs, before.Counter
		}
		tallyIn(false)
		if st, _ := l.Verified(ctx, kr); st.Tally("n").Count != 0 || slices.Contains(st.Marks, "moved") {
			t.Fatalf("a rolled-back tally left %+v, marks %v", st.Tally("n"), st.Marks)
		}
		prevs, counter := tallyIn(true)
		st, err := l.Verified(ctx, kr)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counter != counter+1 || !slices.Contains(st.Marks, "moved") {
			t.Fatalf("counter %d -> %d (want one write), marks %v", counter, st.Counter, st.Marks)
		}
		want := Tally{}
		for i, id := range ids {
			if !prevs[i].Equal(want) {
				t.Fatalf("ids[%d] chains from %+v, want %+v", i, prevs[i], want)
			}
			want = want.Add(id)
		}
		if got := st.Tally("n"); !got.Equal(want) || st.Counters["n"] != uint64(len(ids)) {
			t.Fatalf("tally %+v (counter %d), want %+v", got, st.Counters["n"], want)
		}
	})
}
