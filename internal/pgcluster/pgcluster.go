// Package pgcluster starts a throwaway PostgreSQL cluster for the lab and
// tests: its own data folder, listening on a Unix socket in that folder
// only (no TCP), stopped and removed by Stop. It uses Debian's initdb and
// pg_ctl (package postgresql); as root it runs them as the postgres user,
// since PostgreSQL refuses to run as root.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
)

// ErrNoPostgres means initdb or pg_ctl is not installed.
var ErrNoPostgres = errors.New("pgcluster: PostgreSQL's initdb is not installed (apt-get install postgresql)")

// Cluster is a running throwaway cluster.
type Cluster struct {
	// URL connects as the superuser "ward" to database "postgres" through
	// the Unix socket.
	URL string
	dir string
	bin string
}

// find returns the folder holding initdb and pg_ctl.
func find() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) == 0 {
		return "", ErrNoPostgres
	}
	return filepath.Dir(m[len(m)-1]), nil
}

// Available reports whether a cluster can be started here.
func Available() bool { _, err := find(); return err == nil }

// Start creates a cluster in a new folder under parent (the system's
// temporary folder when empty) and starts it.
func Start(ctx context.Context, parent string) (*Cluster, error) {
	bin, err := find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "ward-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin}
	if err := c.ownedByPostgres(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := 40000 + rand.IntN(20000) // names the socket file; there is no TCP
	steps := [][]string{
		{"initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "ward", "--no-sync"},
		{"pg_ctl", "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60",
			"-o", fmt.Sprintf("-c listen_addresses= -p %d -k %s -c max_connections=100", port, dir), "start"},
	}
	for _, s := range steps {
		if out, err := c.run(ctx, s...); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: %s: %w: %s%s", s[0], err, out, log)
		}
	}
	c.URL = fmt.Sprintf("postgres://ward@/postgres?host=%s&port=%d&sslmode=disable", dir, port)
	return c, nil
}

// Stop stops the cluster and removes its folder.
func (c *Cluster) Stop() error {
	_, err := c.run(context.Background(), "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	os.RemoveAll(c.dir)
	return err
}

// ownedByPostgres hands the folder to the postgres user when running as
// root.
func (c *Cluster) ownedByPostgres() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("pgcluster: running as root needs the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(c.dir, uid, gid)
}

func (c *Cluster) run(ctx context.Context, args ...string) ([]byte, error) {
	prog := filepath.Join(c.bin, args[0])
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", prog}, args[1:]...)...)
	} else {
		cmd = exec.CommandContext(ctx, prog, args[1:]...)
	}
	return cmd.CombinedOutput()
}
