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
	URL  string
	dir  string
	bin  string
	port int
}

// find returns the folder holding initdb, pg_ctl and pg_basebackup:
// Debian's (the newest version installed), else the one initdb is in.
func find() (string, error) {
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		return filepath.Dir(m[len(m)-1]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNoPostgres
}

// Available reports whether a cluster can be started here.
func Available() bool { _, err := find(); return err == nil }

// newCluster makes the folder of a cluster under parent.
func newCluster(parent string) (*Cluster, error) {
	bin, err := find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "ward-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin, port: 40000 + rand.IntN(20000)} // the port names the socket file; there is no TCP
	if err := c.ownedByPostgres(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.URL = fmt.Sprintf("postgres://ward@/postgres?host=%s&port=%d&sslmode=disable", dir, c.port)
	return c, nil
}

// Start creates a cluster in a new folder under parent (the system's
// temporary folder when empty) and starts it.
func Start(ctx context.Context, parent string) (*Cluster, error) {
	c, err := newCluster(parent)
	if err != nil {
		return nil, err
	}
	if err := c.steps(ctx, []string{"initdb", "-D", c.data(), "-A", "trust", "-U", "ward", "--no-sync"}, c.start()); err != nil {
		return nil, err
	}
	return c, nil
}

// Standby makes a streaming standby of c, named name (its
// application_name, which synchronous_standby_names can list), in a new
// folder beside c's, and starts it. It replicates asynchronously until the
// primary lists it ([Cluster.SetSynchronous]).
func (c *Cluster) Standby(ctx context.Context, name string) (*Cluster, error) {
	sb, err := newCluster(filepath.Dir(c.dir))
	if err != nil {
		return nil, err
	}
	// The primary's port number, in the standby's own socket folder: a
	// pooler's host list (StartPooler) takes one port for all its hosts.
	sb.port = c.port
	sb.URL = fmt.Sprintf("postgres://ward@/postgres?host=%s&port=%d&sslmode=disable", sb.dir, sb.port)
	conn := fmt.Sprintf("host=%s port=%d user=ward application_name=%s", c.dir, c.port, name)
	if err := sb.steps(ctx, []string{"pg_basebackup", "-D", sb.data(), "-d", conn, "-X", "stream", "-R", "--no-sync"}, sb.start()); err != nil {
		return nil, err
	}
	return sb, nil
}

// start is the pg_ctl command that starts c.
func (c *Cluster) start() []string {
	return []string{"pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-c listen_addresses= -p %d -k %s -c max_connections=100", c.port, c.dir), "start"}
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// steps runs commands in turn; on a failure it removes c's folder and
// returns the command's output with the server's log.
func (c *Cluster) steps(ctx context.Context, steps ...[]string) error {
	for _, s := range steps {
		if out, err := c.run(ctx, s...); err != nil {
			log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
			c.run(context.Background(), "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
			os.RemoveAll(c.dir)
			return fmt.Errorf("pgcluster: %s: %w: %s%s", s[0], err, out, log)
		}
	}
	return nil
}

// Crash stops c at once, as a power cut would (pg_ctl -m immediate): what
// it had not sent its standbys is lost to them. Stop still removes it.
func (c *Cluster) Crash() error {
	if out, err := c.run(context.Background(), "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pgcluster: crash: %w: %s", err, out)
	}
	return nil
}

// Promote makes a standby the primary and waits until it accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.data(), "-w", "-t", "60", "promote"); err != nil {
		return fmt.Errorf("pgcluster: promote: %w: %s", err, out)
	}
	return nil
}

// Stop stops the cluster and removes its folder.
func (c *Cluster) Stop() error {
	_, err := c.run(context.Background(), "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
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
