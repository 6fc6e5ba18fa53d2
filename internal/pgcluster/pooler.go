package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoPgBouncer means Debian's pgbouncer is not installed.
var ErrNoPgBouncer = errors.New("pgcluster: pgbouncer is not installed (apt-get install pgbouncer)")

// Pooler is Debian's PgBouncer in transaction mode in front of one or more
// clusters, listening on a Unix socket in its own folder only.
type Pooler struct {
	// URL connects as "ward" to database "postgres" through the pooler,
	// with the pgx setting poolers need (default_query_exec_mode=exec).
	URL    string
	dir    string
	cmd    *exec.Cmd
	exited chan error // the process's end (cmd.Wait)
}

// pgbouncer finds Debian's binary (in /usr/sbin, which a user's PATH may
// lack).
func pgbouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrNoPgBouncer
}

// StartPooler starts PgBouncer over hosts, which share a port number (a
// primary and its standbys: Cluster.Standby keeps the primary's): new
// server connections go to the hosts in turn and clients are handed them
// round-robin (server_round_robin), as a read-scaling pool over a primary
// and a lagging standby does. A port taken meanwhile is retried.
func StartPooler(ctx context.Context, hosts ...*Cluster) (*Pooler, error) {
	bin, err := pgbouncer()
	if err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, errors.New("pgcluster: a pooler needs a host")
	}
	var dirs []string
	for _, h := range hosts {
		if h.port != hosts[0].port {
			return nil, errors.New("pgcluster: a pooler's hosts share one port number")
		}
		dirs = append(dirs, h.dir)
	}
	for range 3 {
		p, err := startPooler(ctx, bin, strings.Join(dirs, ","), hosts[0].port)
		if err == nil || ctx.Err() != nil {
			return p, err
		}
	}
	return nil, fmt.Errorf("pgcluster: pgbouncer did not start on three ports: %w", err)
}

// startPooler starts one PgBouncer on a random socket port.
func startPooler(ctx context.Context, bin, hosts string, pgport int) (*Pooler, error) {
	dir, err := os.MkdirTemp("", "ward-pgbouncer-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	port := 40000 + rand.IntN(20000)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr =
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s/users.txt
pool_mode = transaction
server_round_robin = 1
default_pool_size = 10
server_reset_query =
logfile = %s/pgbouncer.log
`, hosts, pgport, port, dir, dir, dir)
	if err := errors.Join(os.WriteFile(filepath.Join(dir, "users.txt"), []byte(`"ward" ""`+"\n"), 0o644),
		os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644), (&Cluster{dir: dir}).ownedByPostgres()); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	args := []string{bin, "-q", filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgcluster: pgbouncer: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p := &Pooler{dir: dir, cmd: cmd, exited: exited, URL: fmt.Sprintf("postgres://ward@/postgres?host=%s&port=%d&sslmode=disable&default_query_exec_mode=exec", dir, port)}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", port))); err == nil {
			return p, nil
		}
		select {
		case err := <-exited:
			exited <- err // for Stop
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: pgbouncer exited (%v): %s", err, log)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		default:
		}
	}
	p.Stop()
	return nil, errors.New("pgcluster: pgbouncer's socket did not appear in 30 s")
}

// Stop stops the pooler and removes its folder.
func (p *Pooler) Stop() {
	p.cmd.Process.Signal(syscall.SIGTERM) // PgBouncer's immediate shutdown; runuser forwards it
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	os.RemoveAll(p.dir)
}
