package adopt

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/examples/internal/fleetbench"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/pgtest"
)

// BenchmarkFleetRotation is the adopters issue's rotation across a running
// fleet of the example application: four `adopt serve` processes (no abuse
// limits) on one database, clients sending 80 % look-ups by e-mail and 20 %
// sign-ups through all four, while 'ward keyring rotate --db' adds a key,
// waits for every process, promotes, waits and re-encrypts the e-mail
// column. A failed request is a 5xx, a transport error, or a look-up that
// returns another address. Then one process is frozen (SIGSTOP) and the
// next rotation waits and names it. On SQLite, and on PostgreSQL when
// WARD_TEST_POSTGRES_URL is set.
//
//	go test ./examples/adopt -run '^$' -bench FleetRotation -benchtime 1x
func BenchmarkFleetRotation(b *testing.B) {
	bin := fleetbench.Build(b, "github.com/wardlab/ward/examples/adopt/cmd/adopt", "github.com/wardlab/ward/cmd/ward")
	fleetbench.ForEachDB(b, pgtest.URL, func(b *testing.B, dbURL, dir string, env []string) { fleetRotation(b, bin, dbURL, dir, env) })
}

func fleetRotation(b *testing.B, bin, dbURL, dir string, env []string) {
	ctx := context.Background()
	krPath := filepath.Join(dir, "kr.json")
	command := func(name string, args ...string) *exec.Cmd { return fleetbench.Command(bin, dir, env, name, args...) }
	db, driver, err := dburl.Open(dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	d, _ := field.ParseDialect(driver)
	if err := prepareSchema(ctx, db, d); err != nil {
		b.Fatal(err)
	}
	if out, err := command("ward", "keyring", "new").CombinedOutput(); err != nil {
		b.Fatalf("keyring: %v\n%s", err, out)
	}
	procs, urls := fleetbench.Start(b, 4, func() *exec.Cmd { return command("adopt", "serve", "--db", dbURL, "--keyring", krPath) },
		regexp.MustCompile(`on (http://[0-9.:]+)/`))
	hc := &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var known []string
	var seq atomic.Int64
	var rec fleetbench.Recorder
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for n := 0; load.Err() == nil; n++ {
				url := urls[(w+n)%len(urls)]
				start, failure := time.Now(), ""
				mu.Lock()
				pick := ""
				if len(known) > 0 && n%5 != 0 {
					pick = known[(w*7919+n*31)%len(known)]
				}
				mu.Unlock()
				if pick == "" {
					email := fmt.Sprintf("User%d@Example.com", seq.Add(1))
					body, _ := json.Marshal(map[string]string{"email": email, "name": "load"})
					resp, err := hc.Post(url+"/users", "application/json", bytes.NewReader(body))
					if err != nil || resp.StatusCode != http.StatusCreated {
						failure = fmt.Sprintf("sign-up: %v %v", err, resp)
					} else {
						mu.Lock()
						known = append(known, email)
						mu.Unlock()
					}
					if resp != nil {
						resp.Body.Close()
					}
				} else {
					resp, err := hc.Get(url + "/users?email=" + strings.ToLower(pick))
					var u struct{ Email string }
					if err == nil {
						json.NewDecoder(resp.Body).Decode(&u)
						resp.Body.Close()
					}
					if err != nil || resp.StatusCode != 200 || u.Email != pick {
						failure = fmt.Sprintf("look-up of %s: %v %v %q", pick, err, resp, u.Email)
					}
				}
				rec.Observe(start, failure)
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	time.Sleep(2 * time.Second)
	rotStart := time.Now()
	out, err := command("ward", "keyring", "rotate", "--db", dbURL, "--wait", "2m").CombinedOutput()
	rotation := time.Since(rotStart)
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()
	if err != nil || !strings.Contains(string(out), "4 processes ready to hold key") || !strings.Contains(string(out), "users.email:") {
		b.Fatalf("rotation: %v\n%s", err, out)
	}
	frozen := procs[3]
	frozen.Process.Signal(syscall.SIGSTOP)
	out2, err := command("ward", "keyring", "rotate", "--db", dbURL, "--wait", "5s", "--no-reseal").CombinedOutput()
	frozen.Process.Signal(syscall.SIGCONT)
	if err == nil || !strings.Contains(string(out2), fmt.Sprintf("pid %d", frozen.Process.Pid)) {
		b.Fatalf("rotation with a frozen process: %v\n%s", err, out2)
	}
	rec.Report(b, rotation, rotation+4*time.Second)
}

// prepareSchema creates the adopted schema: users with a database-assigned
// key, the sealed e-mail and its blind index, UNIQUE on the index.
func prepareSchema(ctx context.Context, db *sql.DB, d field.Dialect) error {
	db.ExecContext(ctx, `DROP TABLE IF EXISTS users`)
	if err := Seed(ctx, db, d, 0); err != nil {
		return err
	}
	if err := AddIndexColumn(ctx, db, d); err != nil {
		return err
	}
	return DropPlaintextUnique(ctx, db, d)
}
