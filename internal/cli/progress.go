package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress shows a bar with an ETA on a terminal, and plain lines (at most
// one every few seconds, plus the last) otherwise or when quiet.
type Progress struct {
	bar   *progressbar.ProgressBar
	w     io.Writer
	desc  string
	last  time.Time
	quiet bool
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewProgress starts a progress display of desc on w (stderr, usually).
func NewProgress(w io.Writer, desc string, total int, quiet bool) *Progress {
	p := &Progress{w: w, desc: desc, quiet: quiet}
	if !quiet && isTerminal(w) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionFullWidth(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return p
}

// set reports done of total.
// Set reports done of total.
func (p *Progress) Set(done, total int) {
	if p.bar != nil {
		p.bar.ChangeMax(total)
		p.bar.Set(done)
		return
	}
	if p.quiet {
		return
	}
	if done < total && time.Since(p.last) < 3*time.Second {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "%s: %d/%d\n", p.desc, done, total)
}

// Finish ends the display.
func (p *Progress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
