// Package fleetbench holds what the fleet-rotation benchmarks of the
// examples share: building the binaries, starting a fleet of processes,
// and recording requests while a rotation runs.
package fleetbench

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardlab/ward/kms/local"
)

// Build builds the named packages into a temporary folder and returns it.
func Build(tb testing.TB, pkgs ...string) string {
	tb.Helper()
	bin := tb.TempDir()
	for _, pkg := range pkgs {
		if out, err := exec.Command("go", "build", "-o", bin+"/", pkg).CombinedOutput(); err != nil {
			tb.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	return bin
}

// Command returns a command running the binary name from bin in dir with
// env.
func Command(bin, dir string, env []string, name string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(bin, name), args...)
	c.Env, c.Dir = env, dir
	return c
}

// Start starts n processes made by mk and returns them with the address
// each prints on its first line of output (the first group of addr). They
// are resumed and stopped (SIGTERM) when the benchmark ends.
func Start(tb testing.TB, n int, mk func() *exec.Cmd, addr *regexp.Regexp) ([]*exec.Cmd, []string) {
	tb.Helper()
	var procs []*exec.Cmd
	var urls []string
	tb.Cleanup(func() {
		for _, c := range procs {
			c.Process.Signal(syscall.SIGCONT)
			c.Process.Signal(syscall.SIGTERM)
			c.Wait()
		}
	})
	for range n {
		c := mk()
		stdout, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			tb.Fatal(err)
		}
		procs = append(procs, c)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		m := addr.FindStringSubmatch(line)
		if err != nil || m == nil {
			tb.Fatalf("%s did not start: %q %v", c.Path, line, err)
		}
		go io.Copy(io.Discard, stdout)
		urls = append(urls, m[1])
	}
	return procs, urls
}

// Recorder collects request latencies and failures from many goroutines.
type Recorder struct {
	mu       sync.Mutex
	lat      []float64
	failures []string
}

// Observe records a request that started at start; failure is "" for a
// request that succeeded.
func (r *Recorder) Observe(start time.Time, failure string) {
	d := float64(time.Since(start).Microseconds()) / 1000
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat = append(r.lat, d)
	if failure != "" {
		r.failures = append(r.failures, failure)
	}
}

// Report fails b if any request failed and reports requests, failures,
// p50 and p99 latency, the rotation's duration, and requests per second
// over window.
func (r *Recorder) Report(b *testing.B, rotation, window time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) > 0 {
		b.Errorf("%d of %d requests failed, e.g. %s", len(r.failures), len(r.lat), r.failures[0])
	}
	if len(r.lat) == 0 {
		b.Fatal("no requests")
	}
	slices.Sort(r.lat)
	b.ReportMetric(float64(len(r.lat)), "requests")
	b.ReportMetric(float64(len(r.failures)), "failed")
	b.ReportMetric(r.lat[len(r.lat)/2], "p50-ms")
	b.ReportMetric(r.lat[len(r.lat)*99/100], "p99-ms")
	b.ReportMetric(rotation.Seconds(), "rotation-s")
	b.ReportMetric(float64(len(r.lat))/window.Seconds(), "req/s")
}

// ForEachDB runs fn on a fresh SQLite file and, when pgURL gives one
// (ward's internal/pgtest.URL, when WARD_TEST_POSTGRES_URL is set), on
// PostgreSQL, with the database's URL and a folder for the fleet's files,
// which also hold the master key and the keyring path in env.
func ForEachDB(b *testing.B, pgURL func(testing.TB) string, fn func(b *testing.B, dbURL, dir string, env []string)) {
	run := func(b *testing.B, url string) {
		dir := b.TempDir()
		if url == "" {
			url = "sqlite:" + filepath.Join(dir, "app.db")
		}
		env := append(os.Environ(), local.EnvVar+"="+local.Generate().Encode(), "WARD_KEYRING="+filepath.Join(dir, "kr.json"))
		fn(b, url, dir, env)
	}
	b.Run("sqlite", func(b *testing.B) { run(b, "") })
	b.Run("postgres", func(b *testing.B) {
		url := pgURL(b)
		if url == "" {
			b.Skip("WARD_TEST_POSTGRES_URL is not set")
		}
		run(b, url)
	})
}
