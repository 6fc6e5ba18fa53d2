package reseal

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

// The kill test re-executes the test binary as a child that runs
// Job; these variables carry its arguments.
const (
	childEnv = "WARD_FIELD_REENCRYPT_CHILD"
)

// TestReencryptChild is the child process body; it does nothing unless
// started by TestReencryptKilled.
func TestReencryptChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("helper process for TestReencryptKilled")
	}
	var (
		driver = os.Getenv("CHILD_DRIVER")
		dsn    = os.Getenv("CHILD_DSN")
		table  = os.Getenv("CHILD_TABLE")
		krPath = os.Getenv("CHILD_KEYRING")
	)
	dialect, err := field.ParseDialect(driver)
	if err != nil {
		t.Fatal(err)
	}
	mk, err := local.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Load(context.Background(), krPath, mk)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var opts []field.ColumnOption
	plain := os.Getenv("CHILD_PLAINTEXT") != ""
	if plain {
		opts = append(opts, field.WithEncoding(field.Text))
	}
	col := mustColumn(t, kr, table, "body", opts...)
	pause, _ := time.ParseDuration(os.Getenv("CHILD_PAUSE"))
	workers, _ := strconv.Atoi(os.Getenv("CHILD_WORKERS"))
	job := &Job{DB: db, Dialect: dialect, Column: col, Key: "id", BatchSize: 25, Pause: pause, FromPlaintext: plain, Workers: workers}
	if _, err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestReencryptKilled kills a real re-encryption process with SIGKILL in
// the middle of its run, checks every row still opens, restarts it and
// checks the job finishes with every row under the new key.
func TestReencryptKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		oldID := kr.Primary().ID
		col := mustColumn(t, kr, d.table(t, "killed"), "body")
		const n = 2000
		fillTable(t, d, col, n)
		newID, _ := keyring.NewManager(kr).AddPrimary(context.Background(), keyring.AES256GCM)
		mk := local.Generate()
		krPath := filepath.Join(t.TempDir(), "keyring.json")
		data, err := kr.Marshal(context.Background(), mk)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(krPath, data, 0o600); err != nil {
			t.Fatal(err)
		}
		want := func(id int64) string { return fmt.Sprintf("message %d", id) }

		start := func(pause string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReencryptChild$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"=1", local.EnvVar+"="+mk.Encode(),
				"CHILD_DRIVER="+d.driver, "CHILD_DSN="+d.dsn, "CHILD_TABLE="+col.Table(),
				"CHILD_KEYRING="+krPath, "CHILD_PAUSE="+pause)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return cmd
		}
		counts := func() map[keyring.KeyID]int {
			c, err := (&Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id"}).Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return c.PerKey
		}

		child := start("30ms")
		deadline := time.Now().Add(60 * time.Second)
		for {
			if c := counts(); c[newID] >= 200 {
				break
			}
			if time.Now().After(deadline) {
				child.Process.Kill()
				t.Fatal("child made no progress")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		child.Wait()

		mid := checkAll(t, d, col, want)
		t.Logf("after SIGKILL: %d rows under the new key, %d under the old", mid[newID], mid[oldID])
		if mid[newID] == 0 || mid[oldID] == 0 {
			t.Fatalf("kill did not land mid-run: %v", mid)
		}

		child = start("0s")
		if err := child.Wait(); err != nil {
			t.Fatalf("restarted job: %v", err)
		}
		end := checkAll(t, d, col, want)
		if end[oldID] != 0 || end[newID] != n-n/50 {
			t.Fatalf("after restart: %v", end)
		}
	})
}

// TestEncryptExistingKilled kills a real plaintext migration running four
// workers with SIGKILL mid-run: every row still reads (plaintext or
// ciphertext, through a mixed-mode column), and the restarted job
// finishes with no plaintext left.
func TestEncryptExistingKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEachDB(t, func(t *testing.T, d testDB) {
		kr := newKR(t)
		table := d.table(t, "plainkill")
		const n = 3000
		plainTable(t, d, table, "BIGINT", n, func(i int) any { return i })
		mixed := mustColumn(t, kr, table, "body", field.WithEncoding(field.Text), field.AcceptPlaintext())
		mk := local.Generate()
		krPath := filepath.Join(t.TempDir(), "keyring.json")
		data, err := kr.Marshal(context.Background(), mk)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(krPath, data, 0o600)
		start := func(pause string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReencryptChild$")
			cmd.Env = append(os.Environ(), childEnv+"=1", local.EnvVar+"="+mk.Encode(), "CHILD_DRIVER="+d.driver, "CHILD_DSN="+d.dsn,
				"CHILD_TABLE="+table, "CHILD_KEYRING="+krPath, "CHILD_PAUSE="+pause, "CHILD_PLAINTEXT=1", "CHILD_WORKERS=4")
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return cmd
		}
		census := func() Census {
			c, err := (&Job{DB: d.db, Dialect: d.dialect, Column: mixed, Key: "id"}).Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		child := start("20ms")
		deadline := time.Now().Add(60 * time.Second)
		for census().Current < 300 {
			if time.Now().After(deadline) {
				child.Process.Kill()
				t.Fatal("child made no progress")
			}
			time.Sleep(10 * time.Millisecond)
		}
		child.Process.Kill()
		child.Wait()
		if p := readMixed(t, d, mixed, wantPlain); p == 0 || p == n-n/50 {
			t.Fatalf("kill did not land mid-run: %d plaintext rows", p)
		}
		if err := start("0s").Wait(); err != nil {
			t.Fatalf("restarted job: %v", err)
		}
		if p := readMixed(t, d, mixed, wantPlain); p != 0 {
			t.Fatalf("%d plaintext rows after the restart", p)
		}
		if c := census(); !c.Done() || c.Plaintext != 0 {
			t.Fatalf("census: %+v", c)
		}
	})
}
