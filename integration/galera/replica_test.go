package galera

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/internal/myserver"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// server starts one MariaDB server (not a Galera node) in dir on a Unix
// socket and a loopback port, with extra options, stopped when the test
// ends; the user "ward" has the cluster's password.
func (c *cluster) server(t *testing.T, name string, port int, extra ...string) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := myserver.Chown(dir); err != nil {
		t.Fatal(err)
	}
	if out, err := myserver.AsMySQL(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"), "--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sock := filepath.Join(dir, "mysqld.sock")
	args := append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--socket=" + sock, "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--log-error=" + filepath.Join(dir, "server.log"), "--innodb-buffer-pool-size=32M"}, extra...)
	cmd := myserver.AsMySQL(context.WithoutCancel(ctx), "mariadbd", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("%s did not start: %s", name, tail(log))
		}
	}
	c.root(t, sock, fmt.Sprintf("SET SESSION sql_log_bin = 0; CREATE USER 'ward'@'localhost' IDENTIFIED BY '%s'; GRANT ALL ON *.* TO 'ward'@'localhost'; "+
		"CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY '%s'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'", c.password, c.password))
	return sock
}

// root runs statements as the server's root user.
func (c *cluster) root(t *testing.T, sock, sql string) {
	t.Helper()
	if out, err := myserver.Root(context.Background(), "--socket="+sock, "-e", sql).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", sql, err, out)
	}
}

// TestReplicaRefused: on an asynchronous MariaDB replica (read_only, as
// replicas are run), the ledger, the subject-key store and the fleet
// registry refuse to work, naming the primary-only rule, whatever the
// user's privileges; the application may still read and open ciphertexts
// there, and on the primary everything works.
func TestReplicaRefused(t *testing.T) {
	if !available() {
		if os.Getenv("WARD_CI") != "" {
			t.Fatal(errMissing)
		}
		t.Skip(errMissing)
	}
	dir, err := os.MkdirTemp("", "ward-replica-") // the mysql user's: a test's TempDir is root's alone
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	base, err := freeBase([]int{50, 51})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{dir: dir, base: base, password: "r3pl1ca-pw"}
	if err := myserver.Chown(dir); err != nil {
		t.Fatal(err)
	}
	psock := c.server(t, "primary", c.base+50, "--server-id=1", "--log-bin=primary-bin", "--binlog-format=ROW")
	rsock := c.server(t, "replica", c.base+51, "--server-id=2", "--read-only=ON")
	c.root(t, psock, "CREATE DATABASE app")
	c.root(t, rsock, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos; START SLAVE", c.base+50, c.password))
	url := func(sock string) string {
		return fmt.Sprintf("mysql://ward:%s@localhost/app?socket=%s", c.password, sock)
	}
	ctx := context.Background()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	pdb := open(t, url(psock))
	lg := &ledger.Ledger{DB: pdb, Dialect: field.MySQL}
	if err := lg.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	col, _ := field.NewColumn(kr, "notes", "body")
	ct, _ := col.SealString(field.RowInt(1), "on the primary")
	if _, err := pdb.Exec("CREATE TABLE notes (id BIGINT PRIMARY KEY, body LONGBLOB)"); err != nil {
		t.Fatal(err)
	}
	if _, err := pdb.Exec("INSERT INTO notes VALUES (1, ?)", ct); err != nil {
		t.Fatal(err)
	}
	waitFor(t, open(t, url(rsock)), "SELECT COUNT(*) = 1 FROM notes")

	rdb := open(t, url(rsock))
	var stored field.Ciphertext
	if err := rdb.QueryRow("SELECT body FROM notes WHERE id = 1").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if s, err := col.OpenString(field.RowInt(1), stored); err != nil || s != "on the primary" {
		t.Fatalf("a ciphertext read on the replica: %q %v", s, err)
	}
	if err := (&ledger.Ledger{DB: rdb, Dialect: field.MySQL}).Check(ctx, kr); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("the ledger on the replica: %v", err)
	}
	if _, err := subject.Open(ctx, subject.Config{DB: rdb, Dialect: field.MySQL, Keyring: kr, Namespace: "users"}); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("subject keys on the replica: %v", err)
	}
	if _, err := (&fleet.Registry{DB: rdb, Dialect: field.MySQL}).Join(ctx, kr, time.Hour, nil); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("the fleet registry on the replica: %v", err)
	}
}
