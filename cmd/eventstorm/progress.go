package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// progress writes a line a second: overwritten in place on a terminal,
// one line after the other otherwise (a log file, make's output).
type progress struct {
	w        io.Writer
	total    int
	terminal bool
	mu       sync.Mutex
	last     time.Time
	drawn    bool
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, last: time.Now()}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// report is stormsend's Progress callback. The final call comes right after
// a regular one, and the summary says the same: it is skipped.
func (p *progress) report(st stormsend.Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 900*time.Millisecond {
		return
	}
	p.last = time.Now()
	line := fmt.Sprintf("%d/%d occurrences, %d writes, %d failures, %v",
		st.Occurrences, p.total, st.Writes, st.Failures, st.Elapsed.Round(time.Second))
	if p.terminal {
		fmt.Fprintf(p.w, "\r%-72s", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends the line a terminal shows, so that what follows starts afresh.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
