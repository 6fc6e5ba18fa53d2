package report

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
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
	if n := strings.Count(glance, `<svg class="mini"`); n != len(glanceScenarios) {
		t.Errorf("the first screen holds %d small charts, want one per question (%d)", n, len(glanceScenarios))
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

// layoutProblems lists, for the page loaded in ctx, what does not fit: a
// page wider than the window, a table that scrolls inside its box at a
// desktop width, a chart wider than its section, a heading cut off, and a
// chart's text outside the chart (an SVG clips it).
const layoutProblems = `(() => {
  const out = [];
  const de = document.documentElement;
  if (de.scrollWidth > window.innerWidth + 1) out.push("page " + de.scrollWidth + " px wide in a " + window.innerWidth + " px window");
  if (window.innerWidth >= 1000) {
    document.querySelectorAll(".tw").forEach((w, i) => {
      if (w.scrollWidth > w.clientWidth + 1) out.push("table " + i + " (" + (w.querySelector("caption") || {}).textContent + ") scrolls: " + w.scrollWidth + " > " + w.clientWidth);
    });
  }
  document.querySelectorAll("h1, h2").forEach(h => {
    if (h.scrollWidth > h.clientWidth + 1) out.push("heading cut: " + h.textContent);
  });
  document.querySelectorAll("svg.chart").forEach((s, i) => {
    const r = s.getBoundingClientRect(), p = s.parentElement.getBoundingClientRect();
    if (r.width > p.width + 1) out.push("chart " + i + " wider than its box: " + r.width + " > " + p.width);
    const texts = [...s.querySelectorAll("text")].filter(t => t.textContent.trim() !== "");
    // Slanted labels: their boxes are not their outlines, so they are not
    // compared with each other.
    const slanted = t => t.closest('[transform*="rotate"]') !== null;
    texts.forEach((t, j) => {
      const b = t.getBoundingClientRect();
      if (b.width === 0) return;
      for (const u of texts.slice(j + 1)) {
        if (slanted(t) && slanted(u)) continue;
        const c = u.getBoundingClientRect();
        const ox = Math.min(b.right, c.right) - Math.max(b.left, c.left), oy = Math.min(b.bottom, c.bottom) - Math.max(b.top, c.top);
        if (ox > 2 && oy > 0.4 * Math.min(b.height, c.height)) out.push("chart " + i + " texts overlap: " + JSON.stringify(t.textContent) + " and " + JSON.stringify(u.textContent));
      }
      if (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1)
        out.push("chart " + i + " text cut: " + JSON.stringify(t.textContent) + " by " + [r.left - b.left, b.right - r.right, r.top - b.top, b.bottom - r.bottom].map(v => Math.round(v)).join("/"));
    });
  });
  return out;
})()`

// TestReportLayout renders the report from the checked-in results and
// measures its boxes in Chromium at a desktop and a phone width: nothing
// is wider than the window, tables fit without scrolling at 1280 px,
// charts fit their sections, and no heading or chart text is cut off.
func TestReportLayout(t *testing.T) {
	dir := fixture(t, "v2")
	h, _, err := Rebuild(dir, scenarios.All())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int64{1280, 390} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			ctx := browsertest.Start(t, chromedp.WindowSize(int(w), 900))
			ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(w, 900)); err != nil {
				t.Fatal(err)
			}
			// The detector itself: a chart whose labels collide and run off
			// its edge, and a table wider than the page, must be caught.
			probe := `data:text/html,<main style="width:300px"><div class="tw"><table><tr><td>` + strings.Repeat("x", 400) +
				`</td></tr></table></div><div><svg class="chart" width="200" height="100"><text x="10" y="50">overlapping</text>` +
				`<text x="20" y="52">labels</text><text x="150" y="90">cut off at the edge</text></svg></div></main>`
			if _, err := chromedp.Run(ctx, chromedp.Navigate(probe)); err != nil {
				t.Fatal(err)
			}
			caught, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutProblems))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(caught); n < 2 || !strings.Contains(strings.Join(caught, "\n"), "overlap") || !strings.Contains(strings.Join(caught, "\n"), "cut") {
				t.Fatalf("the layout detector missed a broken page: %q", caught)
			}
			if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+h)); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.WaitVisible("#handshake")); err != nil {
				t.Fatal(err)
			}
			problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutProblems))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}
