package adopt

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/examples/internal/fleetbench"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/password"
)

// TestRollingDeploy is the rolling-deploy issue's mixed-version test: two
// processes of the example application serve under load while each is
// replaced, one at a time (the new one started, then the old one stopped
// with SIGTERM, which drains and leaves the fleet), by the next stage:
// plain → reader → mixed (then the migration job) → encrypted → Argon2id
// with pepper → per-user keys. Old and new processes overlap at every
// step. It counts wrong reads (a 200 whose address or note is not what
// was written: a ciphertext served as a value), failed log-ins and failed
// requests, all of which must be 0; and after each form opens, a process
// of the stage before it either refuses to start, naming the form, or
// (where it reads the form) starts. On PostgreSQL when
// WARD_TEST_POSTGRES_URL is set, else on SQLite.
func TestRollingDeploy(t *testing.T) {
	url := pgtest.URL(t)
	if url == "" {
		url = "sqlite:" + filepath.Join(t.TempDir(), "app.db")
	}
	rollingDeploy(t, url)
}

// TestRollingDeployMariaDB is TestRollingDeploy on MariaDB, when
// WARD_TEST_MYSQL_URL is set: the forms' waits and openings go through
// the ledger's and the registry's compare-and-swaps there.
func TestRollingDeployMariaDB(t *testing.T) {
	url := mytest.URL(t)
	if url == "" {
		t.Skipf("%s is not set (.ci/run sets it)", mytest.Env)
	}
	rollingDeploy(t, url)
}

func rollingDeploy(t *testing.T, url string) {
	r := newRolling(t, url)
	r.deploy(StagePlain, StagePlain)
	r.loadStart()
	time.Sleep(time.Second)
	r.roll(StageReader)
	r.notesOn.Store(true)
	r.roll(StageMixed)
	r.awaitOpen(fleetgate.Sealed("users", "email"))
	r.migrate()
	r.roll(StageEncrypted)
	r.rollback(StageMixed, "")
	r.roll(StageArgon2)
	r.awaitOpen(fleetgate.Password("argon2id"), fleetgate.Pepper)
	r.rollback(StageEncrypted, "password:argon2id")
	r.roll(StageSubject)
	r.awaitOpen(fleetgate.Subject("notes", "body"))
	r.rollback(StageArgon2, "subject:notes.body")
	time.Sleep(time.Second)
	r.loadStop()
	r.report()
	r.checkStored()
}

// rolling is the fleet under test: its database, binaries, processes and
// load.
type rolling struct {
	t       *testing.T
	ctx     context.Context
	bin     string
	dir     string
	url     string
	env     []string
	db      *sql.DB
	d       field.Dialect
	kr      *keyring.Keyring
	mu      sync.Mutex
	procs   []*exec.Cmd
	urls    []string
	users   []user
	notes   []note
	seq     atomic.Int64
	notesOn atomic.Bool
	stop    context.CancelFunc
	wg      sync.WaitGroup
	counts  struct{ requests, wrong, failedLogins, failed atomic.Int64 }
	firstMu sync.Mutex
	first   []string
}

type user struct {
	id        int64
	email, pw string
}
type note struct {
	id          int64
	owner, body string
}

// seedPassword is every seeded user's password (one bcrypt hash for all).
const seedPassword = "correct horse battery staple"

func newRolling(t *testing.T, url string) *rolling {
	ctx := context.Background()
	r := &rolling{t: t, ctx: ctx, dir: t.TempDir(), url: url, bin: fleetbench.Build(t, "github.com/wardlab/ward/examples/adopt/cmd/adopt")}
	mk := local.Generate()
	r.env = append(os.Environ(), local.EnvVar+"="+mk.Encode())
	var driver string
	var err error
	if r.db, driver, err = dburl.Open(r.url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	r.d, _ = field.ParseDialect(driver)
	if err := Seed(ctx, r.db, r.d, 100); err != nil {
		t.Fatal(err)
	}
	if err := PrepareStages(ctx, r.db, r.d); err != nil {
		t.Fatal(err)
	}
	h, _ := password.NewHasher(password.Policy{Preferred: legacyBcrypt}, nil)
	hash, _ := h.Hash(ctx, []byte(seedPassword))
	if _, err := r.db.Exec(r.d.Rebind(`UPDATE users SET password = ?`), hash); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		r.users = append(r.users, user{int64(i + 1), fmt.Sprintf("User%d@Example.com", i), seedPassword})
	}
	if r.kr, err = keyring.Create(ctx, filepath.Join(r.dir, "kr.json"), mk, keyring.AES256GCM); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.stopAll)
	return r
}

var servingLine = regexp.MustCompile(`on (http://[0-9.:]+)/`)

// start starts a process of stage st and returns it with its address, or
// its output when it exits without serving.
func (r *rolling) start(st Stage) (*exec.Cmd, string, string) {
	c := fleetbench.Command(r.bin, r.dir, r.env, "adopt", "serve", "--db", r.url, "--keyring", "kr.json", "--stage", st.String())
	stdout, _ := c.StdoutPipe()
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := servingLine.FindStringSubmatch(line)
	if err != nil || m == nil {
		c.Wait()
		return nil, "", line + stderr.String()
	}
	go io.Copy(io.Discard, stdout)
	return c, m[1], ""
}

// deploy starts the first processes.
func (r *rolling) deploy(stages ...Stage) {
	for _, st := range stages {
		c, url, out := r.start(st)
		if c == nil {
			r.t.Fatalf("stage %v did not start: %s", st, out)
		}
		r.mu.Lock()
		r.procs, r.urls = append(r.procs, c), append(r.urls, url)
		r.mu.Unlock()
	}
}

// roll replaces each process, one at a time, by one of stage st: the new
// one starts and takes traffic, then the old one stops taking it, drains
// and leaves.
func (r *rolling) roll(st Stage) {
	for i := range len(r.procs) {
		c, url, out := r.start(st)
		if c == nil {
			r.t.Fatalf("stage %v did not start: %s", st, out)
		}
		r.mu.Lock()
		old := r.procs[i]
		r.procs[i], r.urls[i] = c, url
		r.mu.Unlock()
		time.Sleep(300 * time.Millisecond) // requests already sent to the old one finish
		old.Process.Signal(syscall.SIGTERM)
		if err := old.Wait(); err != nil {
			r.t.Fatalf("a process of the stage before %v did not exit cleanly: %v", st, err)
		}
		time.Sleep(1500 * time.Millisecond) // the two releases overlap under load
	}
	r.t.Logf("deployed %v: %d requests so far", st, r.counts.requests.Load())
}

// awaitOpen waits until a process reports every form open.
func (r *rolling) awaitOpen(fs ...fleetgate.Form) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var got struct{ Open []fleetgate.Form }
		if resp, err := http.Get(r.pick(0) + "/forms"); err == nil {
			json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
		}
		if !slices.ContainsFunc(fs, func(f fleetgate.Form) bool { return !slices.Contains(got.Open, f) }) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Fatalf("forms %v did not open within a minute", fs)
}

// rollback starts a process of stage st beside the fleet: it must refuse to
// start naming form, or (form "") start, since it reads what is open.
func (r *rolling) rollback(st Stage, form string) {
	c, _, out := r.start(st)
	if form == "" {
		if c == nil {
			r.t.Fatalf("a rollback to %v, which reads every open form, was refused: %s", st, out)
		}
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
		return
	}
	if c != nil {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
		r.t.Fatalf("a rollback to %v started, though the database depends on %s", st, form)
	}
	if !strings.Contains(out, "depends on forms this process cannot read") || !strings.Contains(out, form) || !strings.Contains(out, fleetgate.Release) {
		r.t.Fatalf("a rollback to %v was refused without naming %s and its release: %s", st, form, out)
	}
}

// migrate runs the migration job (ward encrypt-column) once every process
// writes ciphertexts.
func (r *rolling) migrate() {
	app := &App{DB: r.db, Dialect: r.d}
	if err := app.Adopt(r.ctx, r.kr, &ledger.Ledger{DB: r.db, Dialect: r.d}, nil); err != nil {
		r.t.Fatal(err)
	}
	job, err := app.Job()
	if err != nil {
		r.t.Fatal(err)
	}
	st, err := job.Run(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	c, err := job.Count(r.ctx)
	if err != nil || !c.Done() {
		r.t.Fatalf("census after the migration: %+v %v", c, err)
	}
	r.t.Logf("migrated: %d encrypted, %d indexed, %d conflicts", st.Plaintext, st.Indexed, st.Conflicts)
}

func (r *rolling) stopAll() {
	if r.stop != nil {
		r.loadStop()
	}
	for _, c := range r.procs {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}
	r.procs = nil
}
