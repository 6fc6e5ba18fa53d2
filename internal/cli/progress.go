package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Progress shows one redrawn line with a bar, the count and the time left on
// a terminal, and plain lines (at most one every few seconds, plus the last)
// otherwise; nothing when quiet.
//
// It is drawn here rather than by a progress-bar library: the one used
// before weighed 0.21 MiB of the CLI's 30 MiB wall (internal/walls) for a
// line of text.
type Progress struct {
	w     io.Writer
	desc  string
	quiet bool
	tty   bool // redraw one line in place
	drawn bool // the terminal line is on screen and needs a newline at Finish
	start time.Time
	last  time.Time
	now   func() time.Time
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewProgress starts a progress display of desc on w (stderr, usually).
func NewProgress(w io.Writer, desc string, total int, quiet bool) *Progress {
	p := &Progress{w: w, desc: desc, quiet: quiet, tty: !quiet && isTerminal(w), now: time.Now}
	p.start = p.now()
	return p
}

// Set reports done of total.
func (p *Progress) Set(done, total int) {
	if p.quiet {
		return
	}
	now := p.now()
	every := 3 * time.Second
	if p.tty {
		every = 100 * time.Millisecond
	}
	if done < total && !p.last.IsZero() && now.Sub(p.last) < every {
		return
	}
	p.last = now
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %d/%d\n", p.desc, done, total)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.line(done, total, now.Sub(p.start)))
	p.drawn = true
}

// barWidth is the bar's width in cells: short enough for an 80-column
// terminal beside a description, the count and the time left.
const barWidth = 24

// line is the terminal line for done of total after elapsed: the
// description, a bar, the percentage, the count and, once something is
// done, the time left at the rate so far.
func (p *Progress) line(done, total int, elapsed time.Duration) string {
	frac := 1.0
	if total > 0 {
		frac = min(max(float64(done)/float64(total), 0), 1)
	}
	filled := int(frac * barWidth)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled)
	s := fmt.Sprintf("%s [%s] %3.0f%% %d/%d", p.desc, bar, frac*100, done, total)
	if done > 0 && done < total {
		left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
		s += fmt.Sprintf(" %s left", left.Round(time.Second))
	}
	return s
}

// Finish ends the display.
func (p *Progress) Finish() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
