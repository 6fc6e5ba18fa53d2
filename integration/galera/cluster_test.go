package galera

// A throwaway three-node MariaDB Galera cluster on loopback (Debian's
// mariadb-server and galera-4, rsync for state transfer), for the tests
// that kill a node in the middle of ward's work. Clients reach each node on
// its Unix socket; the nodes replicate over TCP on 127.0.0.1 only.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wardlab/ward/internal/myserver"
)

// provider is galera-4's library.
const provider = "/usr/lib/galera/libgalera_smm.so"

// nodes is the size of a cluster.
const nodes = 3

// errMissing means the packages a cluster needs are not installed.
var errMissing = errors.New("galera cluster: mariadbd, " + provider + " or rsync missing (apt-get install mariadb-server galera-4 rsync)")

// available reports whether a cluster can start here.
func available() bool {
	for _, b := range []string{"mariadbd", "mariadb-install-db", "mariadb", "rsync", "wsrep_sst_rsync"} {
		if _, err := exec.LookPath(b); err != nil {
			return false
		}
	}
	_, err := os.Stat(provider)
	return err == nil
}

// cluster is a running cluster.
type cluster struct {
	dir      string
	base     int
	password string
	cmds     [nodes]*exec.Cmd
}

// launch starts three nodes in a temporary directory: the first bootstraps
// the cluster, the others join it by state transfer. It returns once every
// node reports a cluster of three, synced.
func launch(ctx context.Context) (*cluster, error) {
	if !available() {
		return nil, errMissing
	}
	dir, err := os.MkdirTemp("", "ward-galera-")
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 12)
	rand.Read(pw)
	base, err := freeBase(clusterPorts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &cluster{dir: dir, base: base, password: hex.EncodeToString(pw)}
	if err := myserver.Chown(dir); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.bootstrap(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	for i := 1; i < nodes; i++ {
		if err := c.startNode(ctx, i, false); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.waitSynced(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// clusterPorts are the offsets from a cluster's base of the ports its
// nodes listen on: MariaDB, Galera replication, IST and SST, per node.
var clusterPorts = []int{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}

// freeBase picks a base port, a multiple of 100 from 20000 — below Linux's
// ephemeral range (32768–60999 by default), which other tests' outgoing
// connections take from — whose every offset is free on 127.0.0.1 now,
// trying another base while one is taken (a node that found its port
// taken failed to start in CI). A port taken between the check and the
// server's start still fails the start, which the caller retries.
func freeBase(offsets []int) (int, error) {
	for range 40 {
		n, _ := rand.Int(rand.Reader, big.NewInt(120))
		base := 20000 + 100*int(n.Int64())
		if portsFree(base, offsets) {
			return base, nil
		}
	}
	return 0, errors.New("galera cluster: no base port with every port free on 127.0.0.1 after 40 tries")
}

// portsFree reports whether every base+offset port can be listened on.
func portsFree(base int, offsets []int) bool {
	for _, o := range offsets {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+o)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// bootstrap initialises the first node's data, starts it as a new
// cluster and creates the user "ward" (replicated to the joiners).
func (c *cluster) bootstrap(ctx context.Context) error {
	data := filepath.Join(c.dir, "n0", "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if err := myserver.Chown(filepath.Join(c.dir, "n0")); err != nil {
		return err
	}
	out, err := myserver.AsMySQL(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		return fmt.Errorf("galera cluster: mariadb-install-db: %v: %s", err, out)
	}
	if err := c.startNode(ctx, 0, true); err != nil {
		return err
	}
	sql := fmt.Sprintf("CREATE USER 'ward'@'localhost' IDENTIFIED BY '%s'; GRANT ALL ON *.* TO 'ward'@'localhost' WITH GRANT OPTION; CREATE DATABASE ward;", c.password)
	if out, err := myserver.Root(ctx, "--socket="+c.Socket(0), "-e", sql).CombinedOutput(); err != nil {
		return fmt.Errorf("galera cluster: creating the user: %v: %s", err, out)
	}
	return nil
}

// startNode starts node i and waits for its socket; the first node of a
// new cluster bootstraps it.
func (c *cluster) startNode(ctx context.Context, i int, bootstrap bool) error {
	nd := filepath.Join(c.dir, fmt.Sprintf("n%d", i))
	if err := os.MkdirAll(filepath.Join(nd, "data"), 0o700); err != nil {
		return err
	}
	if err := myserver.Chown(nd); err != nil {
		return err
	}
	peers := make([]string, nodes)
	for j := range peers {
		peers[j] = fmt.Sprintf("127.0.0.1:%d", c.base+10+j)
	}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(nd, "data"), "--socket=" + c.Socket(i),
		"--pid-file=" + filepath.Join(nd, "mysqld.pid"), "--port=" + strconv.Itoa(c.base+i), "--bind-address=127.0.0.1",
		"--log-error=" + filepath.Join(nd, "server.log"), "--innodb-flush-log-at-trx-commit=0",
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M", "--max-connections=300", "--max-allowed-packet=64M",
		"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2", "--default-storage-engine=InnoDB",
		"--wsrep-on=ON", "--wsrep-provider=" + provider, "--wsrep-cluster-name=ward",
		"--wsrep-cluster-address=gcomm://" + strings.Join(peers, ","), fmt.Sprintf("--wsrep-node-name=n%d", i),
		"--wsrep-node-address=" + peers[i],
		fmt.Sprintf("--wsrep-provider-options=base_port=%d;ist.recv_addr=127.0.0.1:%d;gcache.size=32M", c.base+10+i, c.base+20+i),
		"--wsrep-sst-method=rsync", fmt.Sprintf("--wsrep-sst-receive-address=127.0.0.1:%d", c.base+30+i)}
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	cmd := myserver.AsMySQL(context.WithoutCancel(ctx), "mariadbd", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("galera cluster: starting node %d: %w", i, err)
	}
	c.cmds[i] = cmd
	go cmd.Wait()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(c.Socket(i)); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	log, _ := os.ReadFile(filepath.Join(nd, "server.log"))
	return fmt.Errorf("galera cluster: node %d did not start: %s", i, tail(log))
}

// waitSynced waits until every live node reports the cluster's size and
// a synced state.
func (c *cluster) waitSynced(ctx context.Context) error {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ok := true
		for i := range nodes {
			out, err := myserver.Root(ctx, "--socket="+c.Socket(i), "-N", "-e",
				"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_CLUSTER_SIZE', 'WSREP_LOCAL_STATE_COMMENT') ORDER BY VARIABLE_NAME").Output()
			if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[0] != strconv.Itoa(nodes) || f[1] != "Synced" {
				ok = false
			}
		}
		if ok {
			return nil
		}
	}
	return errors.New("galera cluster: the cluster did not sync in a minute")
}

// Socket is node i's Unix socket.
func (c *cluster) Socket(i int) string {
	return filepath.Join(c.dir, fmt.Sprintf("n%d", i), "mysqld.sock")
}

// URL is a mysql:// URL of node i's database "ward" for the user "ward"
// (the password in it), with params (such as "wsrep_sync_wait=1") added to
// its query.
func (c *cluster) URL(i int, params string) string {
	u := fmt.Sprintf("mysql://ward:%s@localhost/%s?socket=%s", c.password, "ward", c.Socket(i))
	if params != "" {
		u += "&" + params
	}
	return u
}

// Kill ends node i with SIGKILL, as a crash or a lost machine would.
func (c *cluster) Kill(i int) error {
	if c.cmds[i] == nil || c.cmds[i].Process == nil {
		return fmt.Errorf("galera cluster: node %d is not running", i)
	}
	return syscall.Kill(-c.cmds[i].Process.Pid, syscall.SIGKILL)
}

// Stop kills every node and removes the cluster's files.
func (c *cluster) Stop() {
	for _, cmd := range c.cmds {
		if cmd != nil && cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	time.Sleep(100 * time.Millisecond)
	os.RemoveAll(c.dir)
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
