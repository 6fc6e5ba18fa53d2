package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// TestForgedUnanchoredLedger: the holder of a keyring file the service
// used in the past (a former operator, a stolen backup) and write access
// to the database forges a ledger under a database ID the keyring does not
// anchor, at counter 1, dropping the real ledger's marks and counters. It
// is refused, and nothing anchors the forged ID; an adoption of a new
// database that was interrupted before its anchor is finished by Adopt,
// and only with AnotherDatabase.
func TestForgedUnanchoredLedger(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		dir, mk, kr := fileKeyring(t)
		oldFile, err := os.ReadFile(filepath.Join(dir, "kr.json"))
		if err != nil {
			t.Fatal(err)
		}
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		if err := l.Mark(ctx, kr, "chat.bound-v2"); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Count(ctx, kr, "subject.forgotten:users", 3); err != nil {
			t.Fatal(err)
		}
		// Three rotations since the old file was copied.
		for range 3 {
			if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
				t.Fatal(err)
			}
			if err := l.Record(ctx, kr); err != nil {
				t.Fatal(err)
			}
		}
		old, err := keyring.Unmarshal(ctx, oldFile, mk)
		if err != nil {
			t.Fatal(err)
		}
		forged := fmt.Sprintf(`{"database":"db-00000000feedbeef","keyring":%q,"keys":[],"generation":1,"counter":1,"epoch":%d}`, kr.ID(), core(old).StateEpoch())
		_, mac := core(old).StateMAC(stateMessage(forged))
		writeRow(t, d, l, ledgerRow{counter: 1, body: forged, mac: fmt.Sprintf("%x", mac)})
		if _, err := l.Verified(ctx, kr); !errors.Is(err, ErrAnchorMissing) {
			t.Fatalf("a ledger forged with an old keyring file under an unanchored database: %v, want ErrAnchorMissing", err)
		}
		if err := l.Record(ctx, kr); !errors.Is(err, ErrAnchorMissing) {
			t.Fatalf("Record on the forged ledger: %v, want ErrAnchorMissing", err)
		}
		if _, anchored := core(kr).Anchor("db-00000000feedbeef"); anchored {
			t.Fatal("the forged database was anchored")
		}
		if _, err := l.Adopt(ctx, kr, AdoptOptions{}); !errors.Is(err, ErrAlreadyAdopted) {
			t.Fatalf("Adopt without AnotherDatabase: %v, want ErrAlreadyAdopted", err)
		}

		// A database new to the keyring whose adoption was cut between
		// the ledger's first write and its anchor.
		other := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger2")}
		cut := keyringCopy(t, ctx, kr, mk)
		if _, err := other.Adopt(ctx, cut, AdoptOptions{AnotherDatabase: true}); err != nil {
			t.Fatal(err) // anchored in the copy only: the file never saw it
		}
		if _, err := other.Verified(ctx, kr); !errors.Is(err, ErrAnchorMissing) {
			t.Fatalf("an unfinished adoption: %v, want ErrAnchorMissing", err)
		}
		if _, err := other.Adopt(ctx, kr, AdoptOptions{}); !errors.Is(err, ErrAlreadyAdopted) {
			t.Fatalf("finishing an adoption without AnotherDatabase: %v", err)
		}
		a, err := other.Adopt(ctx, kr, AdoptOptions{AnotherDatabase: true})
		if err != nil {
			t.Fatalf("finishing an interrupted adoption: %v", err)
		}
		if _, ok := core(kr).Anchor(a.Database); !ok {
			t.Fatal("the finished adoption is not anchored")
		}
		if err := other.Check(ctx, kr); err != nil {
			t.Fatalf("after the adoption: %v", err)
		}
	})
}

// keyringCopy returns an in-memory copy of kr: writes to it (an anchor)
// never reach kr's file, as when a process dies before saving.
func keyringCopy(t *testing.T, ctx context.Context, kr *keyring.Keyring, ks *local.MasterKey) *keyring.Keyring {
	t.Helper()
	data, err := kr.Marshal(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := keyring.Unmarshal(ctx, data, ks)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestKeyringBeforeStateKeys: a keyring file of a release from before
// state keys (testdata/keyring-before-state-keys) serves a database: its
// ledger is MAC'd and anchored under epoch 0 (the root alone), and a
// rotation's added key gives the file its first state key. The ledger
// keeps verifying — in this process and in one that loads the file
// afresh — and the rotation's record of the key moves it to the new epoch;
// from then on a ledger forged under epoch 0 with a copy of the file from
// before (which every copy derives) is refused, also by a process that
// loaded the file before that move was anchored (it reads the file again
// before it accepts epoch 0).
func TestKeyringBeforeStateKeys(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		data, err := os.ReadFile("testdata/keyring-before-state-keys/keyring.json")
		if err != nil {
			t.Fatal(err)
		}
		mk, err := local.Load("testdata/keyring-before-state-keys/mk", nil)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "kr.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		kr, err := keyring.Load(ctx, path, mk)
		if err != nil {
			t.Fatal(err)
		}
		old, err := keyring.Unmarshal(ctx, data, mk)
		if err != nil {
			t.Fatal(err)
		}
		if core(kr).StateEpoch() != 0 {
			t.Fatal("the fixture has state keys")
		}
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		if err := l.Record(ctx, kr); err != nil {
			t.Fatal(err)
		}
		id, err := keyring.NewManager(kr).Add(ctx, keyring.AES256GCM)
		if err != nil {
			t.Fatal(err)
		}
		st, err := l.Verified(ctx, kr)
		if err != nil || st.Epoch != 0 || core(kr).StateEpoch() == 0 {
			t.Fatalf("after the key change: %+v %v, the file's newest state epoch %d", st, err, core(kr).StateEpoch())
		}
		fresh, err := keyring.Load(ctx, path, mk)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(ctx, fresh); err != nil {
			t.Fatalf("a process loading the file since: %v", err)
		}
		if err := l.Record(ctx, kr, id); err != nil {
			t.Fatal(err)
		}
		if st, err = l.Verified(ctx, fresh); err != nil || st.Epoch == 0 {
			t.Fatalf("after the next write: %+v %v", st, err)
		}
		if a, _ := core(kr).Anchor(st.Database); a.Epoch != st.Epoch {
			t.Fatalf("anchored at epoch %d, the ledger is at %d", a.Epoch, st.Epoch)
		}
		// A ledger without the mark, one counter on, under epoch 0 from a
		// copy of the file from before.
		forged := fmt.Sprintf(`{"database":%q,"keyring":%q,"keys":[{"id":%d}],"generation":%d,"counter":%d,"epoch":0}`, st.Database, kr.ID(), kr.Primary().ID, st.Generation, st.Counter+1)
		_, mac := core(old).StateMAC(stateMessage(forged))
		writeRow(t, d, l, ledgerRow{counter: int64(st.Counter + 1), body: forged, mac: fmt.Sprintf("%x", mac)})
		for _, k := range []*keyring.Keyring{kr, fresh} {
			if _, err := l.Verified(ctx, k); !errors.Is(err, ErrTampered) && !errors.Is(err, ErrReplayed) {
				t.Fatalf("a ledger forged under epoch 0 after the move: %v", err)
			}
		}
	})
}
