package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

func forEachDB(t *testing.T, fn func(t *testing.T, db *sql.DB, d field.Dialect)) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		dialect, err := field.ParseDialect(d.Driver)
		if err != nil {
			t.Fatal(err)
		}
		fn(t, d.DB, dialect)
	})
}

// TestAwait: a rotation's wait. Two processes load a keyring file; a key is
// added; the wait names the one that has not reloaded, and ends once it
// has; a frozen process stops blocking once stale; one that left cleanly
// never blocks.
func TestAwait(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "kr.json")
		mk := local.Generate()
		op, err := keyring.Create(ctx, path, mk, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		reg := &Registry{DB: db, Dialect: d, Table: dbtest.DB{DB: db}.Table(t, "fleet")}
		load := func() *keyring.Keyring {
			kr, err := keyring.Load(ctx, path, mk)
			if err != nil {
				t.Fatal(err)
			}
			return kr
		}
		a, b, gone := load(), load(), load()
		ma, err := reg.Join(ctx, a, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		mb, _ := reg.Join(ctx, b, time.Hour, nil)
		mg, _ := reg.Join(ctx, gone, time.Hour, nil)
		if err := mg.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		// A heartbeat that reaches the database after Leave (one Leave
		// cancelled in flight) does not bring the registration back.
		if err := mg.write(ctx, false); err != nil {
			t.Fatal(err)
		}
		if ps, err := reg.List(ctx, op); err != nil || len(ps) != 3 || !exitedIn(ps, mg.ID()) {
			t.Fatalf("after a late heartbeat: %+v %v", ps, err)
		}
		id, err := keyring.NewManager(op).Add(ctx, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		holds := func(p Process) bool { return p.Has(id) }
		// a reloads and reports; b does not.
		a.Reload(ctx)
		ma.Beat(ctx)
		// A deadline long enough for a loaded CI machine's first read.
		wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		_, err = reg.Await(wctx, op, holds, WaitOptions{Poll: 50 * time.Millisecond})
		var nr *NotReadyError
		if !errors.As(err, &nr) || len(nr.Waiting) != 1 || nr.Waiting[0].ID != mb.ID() || !strings.Contains(err.Error(), mb.ID()) {
			t.Fatalf("wait with b behind: %v", err)
		}
		b.Reload(ctx)
		mb.Beat(ctx)
		got, err := reg.Await(ctx, op, holds, WaitOptions{Poll: 50 * time.Millisecond})
		if err != nil || len(got.Ready) != 2 {
			t.Fatalf("wait with both reloaded: %+v %v", got, err)
		}
		// b freezes (no heartbeat) before the next key: it blocks until
		// its last heartbeat is older than StaleAfter, then is reported.
		id2, _ := keyring.NewManager(op).Add(ctx, keyring.AES256GCM)
		a.Reload(ctx)
		ma.Beat(ctx)
		time.Sleep(150 * time.Millisecond)
		got, err = reg.Await(ctx, op, func(p Process) bool { return p.Has(id2) }, WaitOptions{Poll: 50 * time.Millisecond, StaleAfter: 100 * time.Millisecond})
		if err != nil || len(got.Stale) != 1 || got.Stale[0].ID != mb.ID() {
			t.Fatalf("wait with b frozen: %+v %v", got, err)
		}
		// Or the operator skips it by host:pid.
		ps, _ := reg.List(ctx, op)
		var bp Process
		for _, p := range ps {
			if p.ID == mb.ID() {
				bp = p
			}
		}
		got, err = reg.Await(ctx, op, func(p Process) bool { return p.Has(id2) }, WaitOptions{Poll: 50 * time.Millisecond, Skip: []string{bp.ID}})
		if err != nil || len(got.Skipped) != 1 {
			t.Fatalf("wait skipping b: %+v %v", got, err)
		}
	})
}

// TestRegistryWriterAttacks: a database writer can neither make a process
// look ready (its MAC fails) nor let a wait go early by deleting a
// registration.
func TestRegistryWriterAttacks(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "kr.json")
		mk := local.Generate()
		op, err := keyring.Create(ctx, path, mk, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		table := dbtest.DB{DB: db}.Table(t, "fleet")
		reg := &Registry{DB: db, Dialect: d, Table: table}
		p, _ := keyring.Load(ctx, path, mk)
		m, err := reg.Join(ctx, p, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := keyring.NewManager(op).Add(ctx, keyring.AES256GCM)
		holds := func(p Process) bool { return p.Has(id) }
		// The writer claims the process holds the new key.
		if _, err := db.Exec(d.Rebind(`UPDATE `+table+` SET `+reg.keysCol()+` = ? WHERE id = ?`), id.String(), m.ID()); err != nil {
			t.Fatal(err)
		}
		// Generous deadlines: a loaded CI machine takes a while per read.
		wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		_, err = reg.Await(wctx, op, holds, WaitOptions{Poll: 50 * time.Millisecond})
		var nr *NotReadyError
		if !errors.As(err, &nr) || len(nr.Waiting) != 1 || !nr.Waiting[0].Tampered || !strings.Contains(err.Error(), "fails its MAC") {
			t.Fatalf("a forged ready row: %v", err)
		}
		m.Beat(ctx) // the process's own heartbeat restores its row
		// The writer deletes the registration during the wait.
		wctx2, cancel2 := context.WithTimeout(ctx, 2*time.Second)
		defer cancel2()
		go func() {
			time.Sleep(300 * time.Millisecond)
			db.Exec(d.Rebind(`DELETE FROM `+table+` WHERE id = ?`), m.ID())
		}()
		_, err = reg.Await(wctx2, op, holds, WaitOptions{Poll: 50 * time.Millisecond})
		if !errors.As(err, &nr) || len(nr.Vanished) != 1 || !strings.Contains(err.Error(), "disappeared") {
			t.Fatalf("a deleted registration: %v", err)
		}
	})
}

// TestRegistryBounds: a database writer who stores huge values in the
// registry gets them read as empty, their row marked Tampered, and a read
// holds a bounded amount of text in all.
func TestRegistryBounds(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "kr.json")
		kr, err := keyring.Create(ctx, path, local.Generate(), keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		table := dbtest.DB{DB: db}.Table(t, "fleet")
		reg := &Registry{DB: db, Dialect: d, Table: table}
		m, err := reg.Join(ctx, kr, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys := strings.Repeat(kr.Primary().ID.String()+",", 200_000) // 1.8 MB
		host := strings.Repeat("h", 5000)
		if _, err := db.Exec(d.Rebind(`UPDATE `+table+` SET `+reg.keysCol()+` = ?, host = ? WHERE id = ?`), keys, host, m.ID()); err != nil {
			t.Fatal(err)
		}
		ps, err := reg.List(ctx, kr)
		if err != nil || len(ps) != 1 {
			t.Fatalf("list: %d rows, %v", len(ps), err)
		}
		if p := ps[0]; !p.Tampered || p.Host != "" || len(p.Keys) != 0 {
			t.Fatalf("tampered %v, host %d bytes, %d keys read", p.Tampered, len(p.Host), len(p.Keys))
		}
		// Rows that are each within bounds but too much together.
		saved := maxListBytes
		maxListBytes = 8 << 10
		defer func() { maxListBytes = saved }()
		for i := range 10 {
			db.Exec(d.Rebind(`INSERT INTO `+table+` (id, host, pid, keyring, generation, `+reg.keysCol()+`, started, seen, exited, mac, caps)
				VALUES (?, ?, 1, ?, 0, '', ?, ?, 0, '', '')`), fmt.Sprintf("forged-%d", i), strings.Repeat("h", 1000), kr.ID(), time.Now().UnixMilli(), time.Now().UnixMilli())
		}
		if _, err := reg.List(ctx, kr); err == nil || !strings.Contains(err.Error(), "more text than one read takes") {
			t.Fatalf("a registry over the read budget: %v", err)
		}
	})
}

// FuzzParseKeys: the keys column, which a database writer controls, never
// makes parseKeys panic, and what it accepts survives keysText and back.
func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{"", "0000002a", "0000002a,deadbeef", "0x2a", ",", "0", "zz", "00000001,", strings.Repeat("1,", 50) + "1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseKeys(s)
		if err != nil {
			return
		}
		again, err := parseKeys(keysText(ids))
		if err != nil || len(again) != len(ids) {
			t.Fatalf("%q: %v round-trips to %v, %v", s, ids, again, err)
		}
		for i := range ids {
			if ids[i] == 0 || again[i] != ids[i] {
				t.Fatalf("%q: %v round-trips to %v", s, ids, again)
			}
		}
	})
}

// TestRegistryTextEscaped: a database writer's registry row whose host
// holds terminal escapes and a newline is printed escaped, in a process's
// name and in a wait's error: it cannot clear the operator's screen or
// print a fake "ready" line.
func TestRegistryTextEscaped(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		ctx := context.Background()
		kr, err := keyring.New(keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		table := dbtest.DB{DB: db}.Table(t, "fleet")
		reg := &Registry{DB: db, Dialect: d, Table: table}
		m, err := reg.Join(ctx, kr, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		evil := "\x1b[2J\x1b[Hall processes ready\nhost"
		if _, err := db.Exec(d.Rebind(`UPDATE `+table+` SET host = ? WHERE id = ?`), evil, m.ID()); err != nil {
			t.Fatal(err)
		}
		ps, err := reg.List(ctx, kr)
		if err != nil || len(ps) != 1 || !ps[0].Tampered || ps[0].Host != evil {
			t.Fatalf("list: %+v %v", ps, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err = reg.Await(wctx, kr, func(Process) bool { return true }, WaitOptions{Poll: 20 * time.Millisecond})
		for _, text := range []string{ps[0].String(), fmt.Sprint(err)} {
			if strings.ContainsAny(text, "\x1b\n") || !strings.Contains(text, `\x1b[2J`) {
				t.Errorf("printed raw: %q", text)
			}
		}
	})
}

// exitedIn reports whether the process id is listed as exited, its row
// intact.
func exitedIn(ps []Process, id string) bool {
	for _, p := range ps {
		if p.ID == id {
			return p.Exited && !p.Tampered
		}
	}
	return false
}

// TestRegistryRowsAgainstOldKeyringFiles: rows are v2, bound to the
// database and MAC'd under the epoch they name. A row forged with a
// keyring file from before a rotation — v2 under its epoch, once the old
// key is retired, or v1 (the root's key, which every copy derives), once
// the ledger refuses v1 — and a row copied from another database are all
// counted as tampered.
func TestRegistryRowsAgainstOldKeyringFiles(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "kr.json")
		mk := local.Generate()
		kr, err := keyring.Create(ctx, path, mk, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		oldFile, _ := kr.Marshal(ctx, mk)
		dbt := dbtest.DB{DB: db}
		lg := &ledger.Ledger{DB: db, Dialect: d, Table: dbt.Table(t, "ledger")}
		if err := lg.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		table := dbt.Table(t, "fleet")
		reg := &Registry{DB: db, Dialect: d, Table: table, Ledger: lg}
		m, err := reg.Join(ctx, kr, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		old := kr.Primary().ID
		if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		m.Beat(ctx) // the heartbeat moves the row to the new epoch
		if err := lg.Retire(ctx, kr, old); err != nil {
			t.Fatal(err)
		}
		if err := keyring.NewManager(kr).Remove(ctx, old); err != nil {
			t.Fatal(err)
		}
		if ok, err := reg.RefuseV1(ctx, kr); err != nil || !ok {
			t.Fatalf("RefuseV1 with every row v2: %v, %v", ok, err)
		}
		oldKR, err := keyring.Unmarshal(ctx, oldFile, mk)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := lg.Verified(ctx, kr)
		ps, err := reg.List(ctx, kr)
		if err != nil || len(ps) != 1 || ps[0].Tampered {
			t.Fatalf("the genuine row: %+v, %v", ps, err)
		}
		forged := ps[0]
		forged.Forms = append(forged.Forms, "ciphertext:v9")
		v1key, _ := oldKR.Derive("fleet registry v1", 32)
		for name, tag := range map[string]string{
			"v2 under the old epoch": (&rowMACs{kr: oldKR, database: st.Database}).tag(&forged, nil),
			"v1":                     fmt.Sprintf("%x", rowMAC(v1key, &forged)),
		} {
			if _, err := db.Exec(d.Rebind(`UPDATE `+table+` SET caps = ?, mac = ? WHERE id = ?`), formsText(forged.Forms), tag, m.ID()); err != nil {
				t.Fatal(err)
			}
			if ps, err := reg.List(ctx, kr); err != nil || !ps[0].Tampered {
				t.Fatalf("a row forged with the old keyring file (%s): %+v, %v", name, ps, err)
			}
		}
		// A genuine row of another database under the same keyring.
		m.Beat(ctx)
		var tag string
		db.QueryRow(d.Rebind(`SELECT mac FROM `+table+` WHERE id = ?`), m.ID()).Scan(&tag)
		other := &Registry{DB: db, Dialect: d, Table: table, Ledger: &ledger.Ledger{DB: db, Dialect: d, Table: dbt.Table(t, "ledger2")}}
		if _, err := other.Ledger.Adopt(ctx, kr, ledger.AdoptOptions{AnotherDatabase: true}); err != nil {
			t.Fatal(err)
		}
		if ps, err := other.List(ctx, kr); err != nil || !ps[0].Tampered {
			t.Fatalf("a row read as another database's: %+v, %v", ps, err)
		}
	})
}
