package report

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/wardlab/ward/internal/browsertest"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/scenarios"
)

// fixture copies a results folder from testdata (a real quick run: v2
// is the current schema, kept gzipped; v1 the first) into a temporary
// folder.
func fixture(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{lab.ResultsJSON, lab.ManifestJSON} {
		b, err := os.ReadFile(filepath.Join("testdata", version, f))
		if errors.Is(err, fs.ErrNotExist) {
			b, err = gunzip(filepath.Join("testdata", version, f+".gz"))
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func gunzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(z)
}

// chartsIn counts the charts the sections of a results folder draw.
func chartsIn(t *testing.T, dir string) int {
	t.Helper()
	m, rs, err := lab.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := sections(m, rs, scenarios.All())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range secs {
		n += len(s.Charts)
	}
	return n
}

func TestRebuild(t *testing.T) {
	dir := fixture(t, "v2")
	h, m, err := Rebuild(dir, scenarios.All())
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(h)
	md, _ := os.ReadFile(m)
	s := string(html)
	for _, want := range []string{`id="aead"`, `id="password"`, `id="kms"`, `id="handshake"`, `id="tls"`, `id="chat"`,
		"Field report (measured elsewhere)", "Same machine, same run", "p05–p95"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The first screen: the four field reports' questions answered, each
	// linked to its section, before the machine and the sections.
	glance := s[strings.Index(s, `id="glance"`):strings.Index(s, `id="machine"`)]
	for _, id := range glanceScenarios {
		if !strings.Contains(glance, `href="#`+id+`"`) {
			t.Errorf("the first screen does not answer %s", id)
		}
	}
	if n, want := strings.Count(s, `<svg class="chart"`), chartsIn(t, dir); n != want || n < 8 {
		t.Errorf("%d charts, want %d (at least 8)", n, want)
	}
	// Self-contained: no scripts, no external resources.
	if strings.Contains(s, "<script") || regexp.MustCompile(`(src|href)="https?:`).MatchString(s) || strings.Contains(s, "@import") {
		t.Error("report references external resources or scripts")
	}
	for _, want := range []string{"## Field encryption", "## Password hashing", "## Post-quantum key exchange", "| mechanism | ward 0 ms |",
		"*Same machine, same run:*"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, stale := range []string{"seed 00", "Seed (measured"} {
		if strings.Contains(s, stale) || strings.Contains(string(md), stale) {
			t.Errorf("report names a field report by number: %q", stale)
		}
	}
}

// TestRebuildV1: a folder written by the first schema (no samples) still
// renders, with its quoted figures as field-report figures.
func TestRebuildV1(t *testing.T) {
	dir := fixture(t, "v1")
	h, _, err := Rebuild(dir, scenarios.All())
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(h)
	for _, want := range []string{`id="aead"`, `id="password"`, `id="handshake"`, "AMD EPYC", "Field report (measured elsewhere)"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("v1 report lacks %q", want)
		}
	}
}

// TestSectionNotes: results of an unknown scenario get a generic section;
// a ratio whose spread reaches past 1, a busy machine and a peer that
// could not run are each said in the section.
func TestSectionNotes(t *testing.T) {
	rs := []lab.Result{{Scenario: "new", Case: "c", Metric: "time", Unit: "ms", N: 3, Median: 2, P05: 1, P95: 3},
		{Scenario: "new", Case: "q", Metric: "time", Unit: "ms", N: 1, Median: 9, Source: lab.SourceFieldReport},
		lab.PairedRatio("new", "noisy", nil, "ratio", []float64{1.2, 0.9, 1.3}, []float64{1, 1, 1}, ""),
		lab.Unavailable("new", "java-peer", lab.SourcePeer, errors.New("java: not installed (apt-get install default-jdk-headless)"))}
	m := lab.Manifest{Cores: 2, Runs: []lab.ScenarioRun{{Name: "new", Load1Before: 3.5}}}
	secs, err := sections(m, rs, nil)
	if err != nil || len(secs) != 1 || len(secs[0].Tables[0].Rows) != 4 {
		t.Fatalf("%+v %v", secs, err)
	}
	s := secs[0]
	if len(s.Uncertain) != 1 || !strings.Contains(s.Uncertain[0].String(), "noisy") || s.Busy == "" ||
		len(s.Missing) != 1 || !strings.Contains(s.Missing[0], "apt-get install default-jdk-headless") {
		t.Fatalf("notes: %+v", s)
	}
}

// TestCompare: B/A per case, and a significance verdict from the samples.
func TestCompare(t *testing.T) {
	a := []lab.Result{lab.FromSamples("s", "same", nil, "time", "ms", []float64{10, 11, 10, 12, 11, 10, 11, 12, 10, 11}),
		lab.FromSamples("s", "slower", nil, "time", "ms", []float64{10, 11, 10, 12, 11, 10, 11, 12, 10, 11}),
		{Scenario: "s", Case: "v1", Metric: "time", Unit: "ms", N: 3, Median: 2},
		lab.Quote("s", "quoted", nil, "time", "ms", 5, lab.SourceFieldReport, "")}
	b := []lab.Result{lab.FromSamples("s", "same", nil, "time", "ms", []float64{11, 10, 12, 10, 11, 11, 10, 12, 11, 10}),
		lab.FromSamples("s", "slower", nil, "time", "ms", []float64{20, 21, 22, 20, 21, 23, 20, 22, 21, 20}),
		{Scenario: "s", Case: "v1", Metric: "time", Unit: "ms", N: 3, Median: 3},
		lab.Quote("s", "quoted", nil, "time", "ms", 6, lab.SourceFieldReport, "")}
	cs := Compare(a, b)
	if len(cs) != 3 {
		t.Fatalf("%+v", cs)
	}
	if cs[0].Significant || !cs[1].Significant || cs[1].Ratio < 1.8 || cs[2].P != -1 || cs[2].Ratio != 1.5 {
		t.Fatalf("%+v", cs)
	}
	var out strings.Builder
	if err := WriteComparison(&out, lab.Manifest{}, lab.Manifest{}, cs); err != nil || !strings.Contains(out.String(), "1 of 3 differences are significant") {
		t.Fatalf("%s %v", out.String(), err)
	}
}

// TestReportInChromium renders the report in headless Chromium and checks
// there are no console errors and every chart is present and drawn.
func TestReportInChromium(t *testing.T) {
	dir := fixture(t, "v2")
	h, _, err := Rebuild(dir, scenarios.All())
	if err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.Start(t, chromedp.WindowSize(390, 844)) // a phone
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var consoleErrs []string
	listenErr := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				consoleErrs = append(consoleErrs, string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			consoleErrs = append(consoleErrs, e.ExceptionDetails.Text)
		}
	})
	if listenErr != nil {
		t.Fatal(listenErr)
	}
	run := func(a chromedp.Action[chromedp.Void]) {
		if _, err := chromedp.Run(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// The detector itself: a page that logs an error must be caught.
	run(chromedp.Navigate(`data:text/html,<p id="x">x</p><script>console.error("probe")</script>`))
	run(chromedp.WaitVisible("#x"))
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	caught := len(consoleErrs)
	consoleErrs = nil
	mu.Unlock()
	if caught == 0 {
		t.Fatal("console error detector caught nothing on a page that logs an error")
	}
	run(chromedp.Navigate("file://" + h))
	run(chromedp.WaitVisible("#handshake"))
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart").length`))
	if err != nil {
		t.Fatal(err)
	}
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("svg.chart")].filter(s => s.querySelectorAll("path").length > 5 && s.getBoundingClientRect().width > 200).length`))
	if err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(60))
	if err != nil {
		t.Fatal(err)
	}
	if charts != chartsIn(t, dir) || drawn != charts {
		t.Fatalf("%d charts, %d drawn", charts, drawn)
	}
	if overflow {
		t.Error("page is wider than a phone screen")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrs) > 0 {
		t.Fatalf("console errors: %v", consoleErrs)
	}
	if len(shot) < 10000 {
		t.Fatalf("screenshot of %d bytes", len(shot))
	}
	os.WriteFile(filepath.Join(dir, "report.jpg"), shot, 0o644)
}
