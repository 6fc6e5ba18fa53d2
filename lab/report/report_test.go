package report

import (
	"context"
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
)

// fixture copies testdata (a real quick run) into a temporary results
// folder.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{lab.ResultsJSON, lab.ManifestJSON} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRebuild(t *testing.T) {
	dir := fixture(t)
	h, m, err := Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(h)
	md, _ := os.ReadFile(m)
	s := string(html)
	for _, want := range []string{`id="aead"`, `id="password"`, `id="handshake"`, "Seed (measured elsewhere)", "AMD EPYC"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(s, `<svg class="chart"`); n != 6 {
		t.Errorf("%d charts, want 6", n)
	}
	// Self-contained: no scripts, no external resources.
	if strings.Contains(s, "<script") || regexp.MustCompile(`(src|href)="https?:`).MatchString(s) || strings.Contains(s, "@import") {
		t.Error("report references external resources or scripts")
	}
	for _, want := range []string{"## Field encryption", "## Password hashing", "## Post-quantum key exchange", "| mechanism | ward 0 ms |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestGenericSectionAndCompare(t *testing.T) {
	a := []lab.Result{{Scenario: "new", Case: "c", Metric: "time", Unit: "ms", N: 3, Median: 2, P05: 1, P95: 3},
		{Scenario: "new", Case: "q", Metric: "time", Unit: "ms", N: 1, Median: 9, Source: "seed"}}
	b := []lab.Result{{Scenario: "new", Case: "c", Metric: "time", Unit: "ms", N: 3, Median: 3}}
	secs, err := sections(a)
	if err != nil || len(secs) != 1 || len(secs[0].Tables[0].Rows) != 2 {
		t.Fatalf("%+v %v", secs, err)
	}
	cs := Compare(a, b)
	if len(cs) != 1 || cs[0].Ratio != 1.5 {
		t.Fatalf("%+v", cs)
	}
}

// TestReportInChromium renders the report in headless Chromium and checks
// there are no console errors and every chart is present and drawn.
func TestReportInChromium(t *testing.T) {
	dir := fixture(t)
	h, _, err := Rebuild(dir)
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
	if charts != 6 || drawn != charts {
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
