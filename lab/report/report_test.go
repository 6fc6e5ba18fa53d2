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
	"github.com/wardlab/ward/lab/peers"
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
	// Each answered in the report's own terms, beside the report's figure:
	// a message's µs, the reports' 450 and 170 ms and the JVM's time here,
	// seconds per 1,000 against 8 s, and the handshake's bytes.
	for _, want := range []string{" µs (", "450 ms (Spring)", "170 ms (Rust over JNI)", "(JVM, BouncyCastle, warm)", "0.0066 s (AES-256-CBC)", "8.04 s (AWS KMS)",
		"72 B → 161 B", "7,549 B → 7,646 B", "81.3 ms / 42.9 ms (", "hardware AES factor", "open from Python"} {
		if !strings.Contains(glance, want) {
			t.Errorf("the first screen lacks %q", want)
		}
	}
	if strings.Contains(glance, "<svg") {
		t.Error("the first screen holds charts too small to read")
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

// chartLinesJS defines chartLines(svg, i), which lists a data line (a path
// stroked in a colour, not the grey of the grid or the black of the axes)
// that crosses a text, and a legend entry whose colour marks nothing else
// in the chart (a series without data) unless it says "not run here".
const chartLinesJS = `
const colourOf = (p, what) => {
  const c = getComputedStyle(p)[what];
  if (!c || c === "none") return "";
  const m = c.match(/\d+(\.\d+)?/g);
  if (!m) return "";
  const [r, g, b] = m.map(Number);
  if (Math.max(r, g, b) - Math.min(r, g, b) < 16) return ""; // grey or black: grid, axes, ticks
  return r + "," + g + "," + b;
};
const chartLines = (s, i) => {
  const out = [];
  const paths = [...s.querySelectorAll("path")];
  const texts = [...s.querySelectorAll("text")].filter(t => t.textContent.trim() !== "");
  for (const t of texts) {
    const b = t.getBoundingClientRect();
    if (b.width === 0) continue;
    for (const p of paths) {
      const stroked = colourOf(p, "stroke") && getComputedStyle(p).strokeWidth !== "0px", filled = colourOf(p, "fill");
      if (!stroked && !filled) continue;
      const inv = p.getScreenCTM().inverse();
      let hit = "";
      for (let fx = 0.1; fx < 1 && !hit; fx += 0.2) for (let fy = 0.3; fy < 0.8 && !hit; fy += 0.2) {
        const q = new DOMPoint(b.left + fx * b.width, b.top + fy * b.height).matrixTransform(inv);
        hit = stroked && p.isPointInStroke(q) ? "line crosses" : filled && p.isPointInFill(q) ? "shape covers" : "";
      }
      if (hit) { out.push("chart " + i + " " + hit + " text " + JSON.stringify(t.textContent)); break; }
    }
    // A legend entry: a small swatch just left of the text.
    const swatch = paths.find(p => {
      const c = p.getBoundingClientRect();
      return c.width < 40 && c.height < 24 && c.right <= b.left + 2 && b.left - c.right < 40 && c.bottom > b.top && c.top < b.bottom &&
        (colourOf(p, "fill") || colourOf(p, "stroke"));
    });
    if (!swatch || t.textContent.includes("not run here")) continue;
    const col = colourOf(swatch, "fill") || colourOf(swatch, "stroke");
    const sb = swatch.getBoundingClientRect();
    const data = paths.filter(p => p !== swatch && (colourOf(p, "fill") === col || colourOf(p, "stroke") === col) &&
      Math.abs(p.getBoundingClientRect().top - sb.top) + Math.abs(p.getBoundingClientRect().left - sb.left) > 30);
    if (data.length === 0) out.push("chart " + i + " legend entry without data: " + JSON.stringify(t.textContent));
  }
  return out;
};`

// layoutProblems lists, for the page loaded in ctx, what does not fit: a
// page wider than the window, a table that scrolls inside its box at a
// desktop width, a chart wider than its section, a heading cut off, and a
// chart's text outside the chart (an SVG clips it).
const layoutProblems = `(() => {` + chartLinesJS + `
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
  // Text a person can read: at least 11 CSS px, in the page and in charts.
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest("svg") || el.getClientRects().length === 0) continue;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < 11) out.push("text of " + px.toFixed(1) + " px: " + JSON.stringify(n.textContent.trim().slice(0, 40)));
  }
  document.querySelectorAll("svg.chart").forEach((s, i) => {
    const r = s.getBoundingClientRect(), p = s.parentElement.getBoundingClientRect();
    // A chart may scroll inside its own box (.cw) on a narrow screen.
    if (r.width > p.width + 1 && !s.parentElement.classList.contains("cw")) out.push("chart " + i + " wider than its box: " + r.width + " > " + p.width);
    s.querySelectorAll("text").forEach(t => {
      if (!t.textContent.trim()) return;
      const m = t.getScreenCTM(), px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      if (px < 11) out.push("chart " + i + " text of " + px.toFixed(1) + " px: " + JSON.stringify(t.textContent));
    });
    out.push(...chartLines(s, i));
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

// ResultsEnv names a results folder of a real run (ward-lab bench --quick)
// whose report TestReportLayout checks too, and next to which it saves
// screenshots of the first screen at 1280×800 and 390×844 (.ci/run sets
// it).
const ResultsEnv = "WARD_LAB_RESULTS"

// TestReportLayout renders the report from the checked-in results — and
// from a real run's folder when WARD_LAB_RESULTS names one — and measures
// its boxes in Chromium at a desktop and a phone width: nothing is wider
// than the window, tables fit without scrolling at 1280 px, charts fit
// their sections or scroll inside their own box, every text is at least
// 11 CSS px, no heading or chart text is cut off, no data line crosses a
// text, and no legend entry lacks data.
func TestReportLayout(t *testing.T) {
	dirs := map[string]string{"fixture": fixture(t, "v2")}
	if d := os.Getenv(ResultsEnv); d != "" {
		dirs["run"] = d
	}
	for name, dir := range dirs {
		h, _, err := Rebuild(dir, scenarios.All())
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int64{1280, 390} {
			t.Run(fmt.Sprint(name, "/", w), func(t *testing.T) {
				problems := layoutOf(t, h, w, name == "run")
				for _, p := range problems {
					t.Error(p)
				}
			})
		}
	}
}

// layoutProbe is a page with every fault the detector must catch.
var layoutProbe = `data:text/html,<main style="width:300px"><div class="tw"><table><tr><td>` + strings.Repeat("x", 400) +
	`</td></tr></table></div><div><svg class="chart" width="200" height="100"><text x="10" y="50">overlapping</text>` +
	`<text x="20" y="52">labels</text><text x="150" y="90">cut off at the edge</text></svg></div>` +
	`<p style="font-size:8px">tiny</p><div><svg class="chart" width="300" height="120" style="font-size:14px">` +
	`<path d="M0,30 L300,30" style="stroke:rgb(0,114,178);stroke-width:3;fill:none"/><text x="20" y="35">crossed by a line</text>` +
	`<path d="M10,80 h12 v10 h-12 z" style="fill:rgb(213,94,0)"/><text x="30" y="90">empty entry</text>` +
	`<text x="200" y="110" style="font-size:6px">small</text><text x="150" y="60">under a bar</text>` +
	`<path d="M140,40 h100 v30 h-100 z" style="fill:rgb(0,158,115)"/></svg></div></main>`

// layoutOf loads the report h at width w in Chromium, first checking that
// the detector catches every fault of layoutProbe, and returns the
// report's problems; with shots, it saves the first screen as
// first-screen-W.png next to the report.
func layoutOf(t *testing.T, h string, w int64, shots bool) []string {
	height := int64(800)
	if w < 500 {
		height = 844
	}
	ctx := browsertest.Start(t, chromedp.WindowSize(int(w), int(height)))
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(w, height)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(layoutProbe)); err != nil {
		t.Fatal(err)
	}
	caught, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutProblems))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"overlap", "cut", "text of 8.0 px", "text of 6.0 px", "line crosses text \"crossed by a line\"", "legend entry without data: \"empty entry\"", "shape covers text \"under a bar\""} {
		if !strings.Contains(strings.Join(caught, "\n"), want) {
			t.Fatalf("the layout detector missed %q on a broken page: %q", want, caught)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+h)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible("#glance")); err != nil {
		t.Fatal(err)
	}
	if shots {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(filepath.Dir(h), fmt.Sprintf("first-screen-%d.png", w)), png, 0o644)
	}
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutProblems))
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// TestFirstScreenOfARun: a real run's first screen (WARD_LAB_RESULTS)
// answers the four field reports with their figures beside this
// machine's: a message's µs, the reports' Argon2id times, seconds per
// 1,000 and the handshake's bytes; a busy machine is said where it was.
func TestFirstScreenOfARun(t *testing.T) {
	dir := os.Getenv(ResultsEnv)
	if dir == "" {
		t.Skip(ResultsEnv + " is not set (.ci/run sets it after a quick run)")
	}
	h, _, err := Rebuild(dir, scenarios.All())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(h)
	s := string(b)
	glance := s[strings.Index(s, `id="glance"`):strings.Index(s, `id="machine"`)]
	wantPython := "open from Python"
	if os.Getenv("WARD_CI") != "" { // .ci/run's quick run has the Python package (WARD_PYTHON)
		wantPython = "Python package, " // the figure and its ratio to Go, not "not run here"
	}
	for _, want := range []string{`href="#aead"`, `href="#password"`, `href="#kms"`, `href="#handshake"`, " µs (", "450 ms (Spring)", "8.04 s (AWS KMS)", "72 B → ", "7,549 B → ", wantPython} {
		if !strings.Contains(glance, want) {
			t.Errorf("the first screen of the run lacks %q", want)
		}
	}
	m, _, err := lab.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Runs {
		if r.Busy(m.Cores) && !strings.Contains(glance, "The machine was busy") {
			t.Errorf("%s ran on a busy machine and the first screen does not say so", r.Name)
		}
	}
}

// TestMissingPutsThePackageFirst: a peer that could not run is listed
// with the command that brings it first, then what it is for.
func TestMissingPutsThePackageFirst(t *testing.T) {
	err := &peers.MissingError{Peer: "java/Argon2Bench", Need: "BouncyCastle", Install: "apt-get install libbcprov-java"}
	got := missing(lab.Results{lab.Unavailable("password", "jvm-bouncycastle", lab.SourcePeer, err)})
	if len(got) != 1 || !strings.HasPrefix(got[0], "apt-get install libbcprov-java brings what java/Argon2Bench needs") || !strings.HasSuffix(got[0], "for jvm-bouncycastle") {
		t.Fatalf("missing: %q", got)
	}
}
