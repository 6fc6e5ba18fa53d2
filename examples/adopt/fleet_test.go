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

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dburl"
	"github.com/wardlab/ward/internal/pgtest"
	"github.com/wardlab/ward/kms/local"
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
	bin := b.TempDir()
	for _, pkg := range []string{"github.com/wardlab/ward/examples/adopt/cmd/adopt", "github.com/wardlab/ward/cmd/ward"} {
		if out, err := exec.Command("go", "build", "-o", bin+"/", pkg).CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	b.Run("sqlite", func(b *testing.B) { fleetRotation(b, bin, "sqlite:"+filepath.Join(b.TempDir(), "app.db")) })
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.URL(b)
		if url == "" {
			b.Skip("WARD_TEST_POSTGRES_URL is not set")
		}
		fleetRotation(b, bin, url)
	})
}

func fleetRotation(b *testing.B, bin, dbURL string) {
	ctx := context.Background()
	dir := b.TempDir()
	krPath := filepath.Join(dir, "kr.json")
	env := append(os.Environ(), local.EnvVar+"="+local.Generate().Encode(), "WARD_KEYRING="+krPath)
	command := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Env, c.Dir = env, dir
		return c
	}
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
	addrRE := regexp.MustCompile(`on (http://[0-9.:]+)/`)
	var procs []*exec.Cmd
	var urls []string
	for range 4 {
		c := command("adopt", "serve", "--db", dbURL, "--keyring", krPath)
		stdout, _ := c.StdoutPipe()
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		procs = append(procs, c)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		m := addrRE.FindStringSubmatch(line)
		if err != nil || m == nil {
			b.Fatalf("adopt serve did not start: %q %v", line, err)
		}
		go io.Copy(io.Discard, stdout)
		urls = append(urls, m[1])
	}
	defer func() {
		for _, c := range procs {
			c.Process.Signal(syscall.SIGCONT)
			c.Process.Signal(syscall.SIGTERM)
			c.Wait()
		}
	}()
	hc := &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var known []string
	var lat []float64
	var failures []string
	var requests, failed atomic.Int64
	var seq atomic.Int64
	fail := func(s string) {
		failed.Add(1)
		mu.Lock()
		failures = append(failures, s)
		mu.Unlock()
	}
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for n := 0; load.Err() == nil; n++ {
				url := urls[(w+n)%len(urls)]
				start := time.Now()
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
						fail(fmt.Sprintf("sign-up: %v %v", err, resp))
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
						fail(fmt.Sprintf("look-up of %s: %v %v %q", pick, err, resp, u.Email))
					}
				}
				requests.Add(1)
				mu.Lock()
				lat = append(lat, float64(time.Since(start).Microseconds())/1000)
				mu.Unlock()
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
	out2, err := command("ward", "keyring", "rotate", "--db", dbURL, "--wait", "5s", "--no-reencrypt").CombinedOutput()
	frozen.Process.Signal(syscall.SIGCONT)
	if err == nil || !strings.Contains(string(out2), fmt.Sprintf("pid %d", frozen.Process.Pid)) {
		b.Fatalf("rotation with a frozen process: %v\n%s", err, out2)
	}
	if failed.Load() > 0 {
		b.Errorf("%d of %d requests failed, e.g. %s", failed.Load(), requests.Load(), failures[0])
	}
	slices.Sort(lat)
	b.ReportMetric(float64(requests.Load()), "requests")
	b.ReportMetric(float64(failed.Load()), "failed")
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
	b.ReportMetric(rotation.Seconds(), "rotation-s")
	b.ReportMetric(float64(requests.Load())/(rotation.Seconds()+4), "req/s")
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
	return UniqueOnIndex(ctx, db, d)
}
