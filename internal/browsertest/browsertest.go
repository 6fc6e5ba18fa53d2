// Package browsertest starts headless Chromium for tests (Debian's
// chromium package; .ci/run installs it), through chromedp.
package browsertest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Start launches headless Chromium with the flags this workplace needs
// (no sandbox as root, no background networking) plus extra, and returns a
// chromedp context whose browser is already running. It skips the test
// when no Chromium is installed. The browser stops when the test ends.
func Start(t testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exe := ""
	for _, c := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(c); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()))
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; its context must not time out.
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	return ctx
}
