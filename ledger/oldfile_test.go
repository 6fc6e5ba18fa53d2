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
