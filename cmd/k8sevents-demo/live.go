package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// pipelineView is what the live view shows of the collector's own metrics.
type pipelineView = collectorproc.Pipeline

// num prints a count with thousands separators.
func num[T int | int64 | float64](v T) string {
	s := strconv.FormatInt(int64(v), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// liveLine is one line of the live view. storm is nil when the demo writes
// no storm (an existing cluster, read-only).
func liveLine(elapsed time.Duration, storm *stormsend.Stats, v pipelineView) string {
	s := fmt.Sprintf("%4ds ", int(elapsed.Seconds()))
	if storm != nil {
		s += fmt.Sprintf("storm %s occ (%s writes) | ", num(storm.Occurrences), num(storm.Writes))
	}
	s += fmt.Sprintf("seen %s occ | out %s records (%s folded, %s suppressed, %s finished, %s open) | writes %s",
		num(v.Occurrences), num(v.RecordsOut), num(v.Compressed), num(v.Suppressed), num(v.Finished), num(v.Open), num(v.Writes))
	if failed := v.PermanentFailures + v.RetryableFailures; failed > 0 {
		s += fmt.Sprintf(" (%s failed)", num(failed))
	}
	return s
}

// live prints the live view once a second and keeps the latest reading.
type live struct {
	mode    liveMode
	out     io.Writer
	mu      sync.Mutex
	view    pipelineView
	updated chan struct{} // receives after each reading
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

func startLive(ctx context.Context, mode liveMode, out io.Writer, col *collectorproc.Collector, url string, started time.Time, storm func() *stormsend.Stats) *live {
	ctx, cancel := context.WithCancel(ctx)
	l := &live{mode: mode, out: out, updated: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			m, err := col.Metrics(rctx, url)
			rcancel()
			if err != nil {
				continue // not up yet, or stopping: the next tick tries again
			}
			v := m.Pipeline()
			l.mu.Lock()
			l.view = v
			line := liveLine(time.Since(started), storm(), v)
			switch l.mode {
			case liveLines:
				fmt.Fprintln(l.out, line)
			case liveOverwrite:
				fmt.Fprint(l.out, "\r\033[K"+line)
			}
			l.mu.Unlock()
			select {
			case l.updated <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// printf prints a message between live lines.
func (l *live) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode == liveOverwrite {
		fmt.Fprint(l.out, "\r\033[K")
	}
	fmt.Fprintf(l.out, format+"\n", args...)
}

func (l *live) latest() pipelineView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.view
}

// waitFor waits until a reading satisfies ok, at most bound.
func (l *live) waitFor(ctx context.Context, bound time.Duration, ok func(pipelineView) bool) {
	t := time.NewTimer(bound)
	defer t.Stop()
	for !ok(l.latest()) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-l.done:
			return
		case <-l.updated:
		}
	}
}

func (l *live) stop() {
	l.once.Do(func() {
		l.cancel()
		<-l.done
		if l.mode == liveOverwrite {
			fmt.Fprintln(l.out)
		}
	})
}
