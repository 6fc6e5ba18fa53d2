package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// TestReplayedLedgerHint: a database put back to an older ledger (what a
// lossy failover or a restore leaves) is refused at start with a hint
// naming both causes and 'ward ledger recover'.
func TestReplayedLedgerHint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mk := local.Generate()
	t.Setenv(local.EnvVar, mk.Encode())
	url, krPath := "sqlite:"+filepath.Join(dir, "chat.db"), filepath.Join(dir, "kr.json")
	if code := run(ctx, []string{"init", "--db", url, "--keyring", krPath}, io.Discard, io.Discard); code != 0 {
		t.Fatal("init failed")
	}
	if code := run(ctx, []string{"outbox", "--db", url, "--keyring", krPath}, io.Discard, io.Discard); code != 0 {
		t.Fatal("a first start failed")
	}
	u, _ := dburl.Parse(url)
	db, err := u.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	kr, err := keyring.Load(ctx, krPath, mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE old_ledger AS SELECT * FROM ward_ledger`); err != nil {
		t.Fatal(err)
	}
	if err := (&ledger.Ledger{DB: db, Dialect: field.SQLite}).Mark(ctx, kr, "a later write"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM ward_ledger; INSERT INTO ward_ledger SELECT * FROM old_ledger`); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code := run(ctx, []string{"outbox", "--db", url, "--keyring", krPath}, io.Discard, &errb)
	if e := errb.String(); code != 2 || !strings.Contains(e, "older than its anchor") || !strings.Contains(e, "failover") || !strings.Contains(e, "ward ledger recover") {
		t.Fatalf("start on a replayed ledger: %d %q", code, e)
	}
}
