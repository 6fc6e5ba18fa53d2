// Package myserver starts a throwaway MariaDB server (Debian's
// mariadb-server) on a Unix socket only, for the lab's measurements on
// MariaDB: what .ci/mariadb does for the tests, from Go. Its helpers
// (AsMySQL, Chown, Root) also run integration/galera's nodes and replica.
package myserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrMissing means mariadbd is not installed.
var ErrMissing = errors.New("myserver: mariadbd not found (apt-get install mariadb-server)")

// Available reports whether a server can start here.
func Available() bool {
	for _, b := range []string{"mariadbd", "mariadb-install-db", "mariadb"} {
		if _, err := exec.LookPath(b); err != nil {
			return false
		}
	}
	return true
}

// Server is a running server.
type Server struct {
	dir, password string
	cmd           *exec.Cmd
}

// Start initialises a data directory in a temporary folder and starts the
// server with durability off (a throwaway), creating the database "lab"
// and the user "ward" with a random password.
func Start(ctx context.Context) (*Server, error) {
	if !Available() {
		return nil, ErrMissing
	}
	dir, err := os.MkdirTemp("", "ward-mariadb-")
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 12)
	rand.Read(pw)
	s := &Server{dir: dir, password: hex.EncodeToString(pw)}
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if err := Chown(s.dir); err != nil {
		return err
	}
	if out, err := AsMySQL(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		return fmt.Errorf("myserver: mariadb-install-db: %v: %s", err, out)
	}
	s.cmd = AsMySQL(context.WithoutCancel(ctx), "mariadbd", "--no-defaults", "--datadir="+data, "--socket="+s.socket(),
		"--pid-file="+filepath.Join(s.dir, "mysqld.pid"), "--skip-networking", "--log-error="+filepath.Join(s.dir, "server.log"),
		"--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0", "--innodb-doublewrite=0", "--innodb-buffer-pool-size=512M",
		"--innodb-log-file-size=256M", "--max-connections=200", "--character-set-server=utf8mb4")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("myserver: %w", err)
	}
	go s.cmd.Wait()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(s.socket()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("myserver: mariadbd did not start: %s", log)
		}
	}
	sql := fmt.Sprintf("CREATE USER 'ward'@'localhost' IDENTIFIED BY '%s'; GRANT ALL ON *.* TO 'ward'@'localhost'; CREATE DATABASE lab;", s.password)
	if out, err := Root(ctx, "--socket="+s.socket(), "-e", sql).CombinedOutput(); err != nil {
		return fmt.Errorf("myserver: creating the user: %v: %s", err, out)
	}
	return nil
}

func (s *Server) socket() string { return filepath.Join(s.dir, "mysqld.sock") }

// URL is the mysql:// URL of the database "lab", the password in it.
func (s *Server) URL() string {
	return fmt.Sprintf("mysql://ward:%s@localhost/lab?socket=%s", s.password, s.socket())
}

// Stop kills the server and removes its files.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		time.Sleep(100 * time.Millisecond)
	}
	os.RemoveAll(s.dir)
}

// Root runs the mariadb client as a server's root user, without the
// environment's MYSQL_PWD (.ci/run sets it for the test server's "ward").
func Root(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "mariadb", append([]string{"--no-defaults", "-uroot"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MYSQL_PWD=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// AsMySQL runs a command as the mysql user when this process is root
// (mariadbd refuses to run as root).
func AsMySQL(ctx context.Context, name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", "mysql", "--", name}, args...)...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// Chown gives dir and what it holds to the mysql user when this process
// is root.
func Chown(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return fmt.Errorf("myserver: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
