package fleet

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// near reports whether an estimate of n seals is within 15 % of n (see
// keycore's TestSealsCounted: a right count misses it with a probability
// under 10^-6; a lost or doubled report always does).
func near(got uint64, n int) bool {
	return float64(got) > 0.85*float64(n) && float64(got) < 1.15*float64(n)
}

// TestUsage: two processes of a fleet add their seals to the database's
// key-usage table at each heartbeat and when they leave; OnUsage hears
// the totals; a report that fails keeps its counts for the next one; a
// database without the table reads as zero.
func TestUsage(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d field.Dialect) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "kr.json")
		mk := local.Generate()
		if _, err := keyring.Create(ctx, path, mk, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		if got, err := (&Usage{DB: db, Dialect: d}).Read(ctx, mustLoad(t, path, mk)); err != nil || len(got) != 1 || got[0].Seals != 0 {
			t.Fatalf("before any report: %v %v", got, err)
		}
		var heard []KeyUsage
		reg := &Registry{DB: db, Dialect: d, OnUsage: func(u []KeyUsage) { heard = u }}
		var krs []*keyring.Keyring
		var members []*Member
		for range 2 {
			kr := mustLoad(t, path, mk)
			m, err := reg.Join(ctx, kr, time.Hour, nil)
			if err != nil {
				t.Fatal(err)
			}
			krs, members = append(krs, kr), append(members, m)
		}
		seal(krs[0], 40000)
		seal(krs[1], 24000)
		for _, m := range members {
			if err := m.Beat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		primary := krs[0].Primary()
		if len(heard) != 1 || heard[0].Key != primary.ID || !near(heard[0].Seals, 64000) {
			t.Fatalf("after both heartbeats, 64,000 seals: %+v", heard)
		}
		seal(krs[1], 32000)
		closed, _ := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
		closed.Close()
		if _, err := (&Usage{DB: closed, Dialect: field.SQLite}).Report(ctx, krs[1]); err == nil {
			t.Fatal("a report to a closed database succeeded")
		}
		if err := members[1].Leave(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := (&Usage{DB: db, Dialect: d}).Read(ctx, krs[0])
		if err != nil || !near(got[0].Seals, 96000) {
			t.Fatalf("after the leave (the failed report's counts included), 96,000 seals: %+v %v", got, err)
		}
		members[0].Leave(ctx)
	})
}

func mustLoad(t *testing.T, path string, ks *local.MasterKey) *keyring.Keyring {
	t.Helper()
	kr, err := keyring.Load(context.Background(), path, ks)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func seal(kr *keyring.Keyring, n int) {
	for range n {
		kr.Seal([]byte("v"), []byte("ad"))
	}
}

// TestUsageDue: a key of a bounded algorithm is due from WarnAt seals,
// with a warning naming the rotation; XChaCha20-Poly1305's never is.
func TestUsageDue(t *testing.T) {
	k := KeyUsage{Key: 0x1234abcd, Algorithm: keyring.AES256GCM, Seals: WarnAt - 1}
	if k.Due() || k.Warning() != "" {
		t.Fatalf("%d seals: due", k.Seals)
	}
	k.Seals = WarnAt
	if w := k.Warning(); !k.Due() || !strings.Contains(w, "ward keyring rotate --db") || !strings.Contains(w, "25 %") {
		t.Fatalf("at 2^30 seals: %q", w)
	}
	x := KeyUsage{Algorithm: keyring.XChaCha20Poly1305, Seals: 1 << 40}
	if x.Due() {
		t.Fatal("XChaCha20-Poly1305 due at 2^40 seals")
	}
}
