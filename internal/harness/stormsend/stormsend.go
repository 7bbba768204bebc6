// Package stormsend replays a storm (internal/harness/storm) at a chosen speed: as
// OTLP logs to a collector, or as Events written to an API server, either
// directly (what an emitter without compression writes) or through
// client-go's recorders (what Kubernetes components write). Every replay is
// bounded in occurrences and wall time and reports what it wrote.
package stormsend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/k8sevents/otel-k8sevents/internal/ctxwait"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

const defaultMaxDuration = 10 * time.Minute

// Options pace and bound one replay.
type Options struct {
	Speed       float64       // 0: as fast as possible; 1: real time; N: gaps between occurrence times divided by N
	MaxEvents   int           // 0: every occurrence
	MaxDuration time.Duration // hard bound on the replay's wall time; 0 means 10 minutes
	Restamp     bool          // occurrence times become "now" (wall time when sent), for processing-time pipelines
	Progress    func(Stats)   // called at most once a second and once at the end; nil: none
	// Hold, when not nil, stops the replay before occurrence HoldAt (0-based)
	// until Hold is closed: a test can keep part of a storm for after a
	// fault it causes. The replay's pacing and deadline move by the time held.
	Hold   <-chan struct{}
	HoldAt int
	// Credentials of OTLP's gRPC connection (TLS); nil: plaintext.
	Credentials credentials.TransportCredentials
}

// Stats is what a replay did.
type Stats struct {
	Occurrences int           // occurrences handed to the sink
	Writes      int64         // API modes: successful event create/patch/update requests; OTLP: records accepted
	Failures    int64         // failed requests (OTLP: records not accepted)
	Elapsed     time.Duration // wall time, including the wait for asynchronous recorders
}

// errMaxDuration ends a replay that reached Options.MaxDuration: an
// expected end, not an error for the caller.
var errMaxDuration = errors.New("max duration reached")

// counters are shared with the goroutines that report progress and, in the
// API modes, with the HTTP transport that counts the writes.
type counters struct {
	occurrences atomic.Int64
	writes      atomic.Int64
	failures    atomic.Int64
	lastRetried atomic.Int64 // Unix ns of the last failure a recorder retries after a sleep (transport error, 409, 429, 5xx)
	inflight    atomic.Int64 // event writes under way
}

// replay is one run over a stream: the occurrences, the wall clock they are
// paced on, and what was done so far.
type replay struct {
	opts     Options
	occs     []storm.Occurrence
	start    time.Time
	deadline time.Time
	held     time.Duration // time waited on Options.Hold; due times are later by as much
	c        counters
	stop     chan struct{} // closes the progress goroutine
	stopped  chan struct{}
}

func newReplay(occs []storm.Occurrence, opts Options) (*replay, error) {
	switch {
	case opts.Speed < 0 || math.IsNaN(opts.Speed) || math.IsInf(opts.Speed, 0):
		return nil, fmt.Errorf("speed %v: want 0 (as fast as possible) or a positive factor", opts.Speed)
	case opts.MaxEvents < 0:
		return nil, fmt.Errorf("max events %d: want 0 (all) or more", opts.MaxEvents)
	case opts.MaxDuration < 0:
		return nil, fmt.Errorf("max duration %v: want 0 (10 minutes) or more", opts.MaxDuration)
	case opts.HoldAt < 0:
		return nil, fmt.Errorf("hold at %d: want an occurrence's index", opts.HoldAt)
	}
	if opts.MaxDuration == 0 {
		opts.MaxDuration = defaultMaxDuration
	}
	if opts.MaxEvents > 0 && opts.MaxEvents < len(occs) {
		occs = occs[:opts.MaxEvents]
	}
	r := &replay{opts: opts, occs: occs, start: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	r.deadline = r.start.Add(opts.MaxDuration)
	go r.report()
	return r, nil
}

// report calls Progress once a second until finish.
func (r *replay) report() {
	defer close(r.stopped)
	if r.opts.Progress == nil {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
			r.opts.Progress(r.stats())
		}
	}
}

func (r *replay) stats() Stats {
	return Stats{
		Occurrences: int(r.c.occurrences.Load()),
		Writes:      r.c.writes.Load(),
		Failures:    r.c.failures.Load(),
		Elapsed:     time.Since(r.start),
	}
}

// due is when occurrence i is to be sent: its distance from the first
// occurrence, divided by the speed, after the start.
func (r *replay) due(i int) time.Time {
	if r.opts.Speed == 0 {
		return r.start.Add(r.held)
	}
	gap := float64(r.occs[i].Time.Sub(r.occs[0].Time)) / r.opts.Speed
	// Anything beyond the deadline is as good as the deadline; capped, the
	// conversion cannot overflow.
	return r.start.Add(r.held + time.Duration(min(gap, float64(r.opts.MaxDuration+time.Second))))
}

// holds says whether the replay waits on Options.Hold before occurrence i.
func (r *replay) holds(i int) bool {
	return r.opts.Hold != nil && i == r.opts.HoldAt
}

// wait sleeps until occurrence i is due. Before an occurrence the replay
// holds at, it first waits for Options.Hold to close, and the stream's gap
// before that occurrence then counts from the release: every later
// occurrence is due later by the time held. It ends early with ctx's error,
// or with errMaxDuration when the occurrence is due after the deadline.
func (r *replay) wait(ctx context.Context, i int) error {
	if r.holds(i) {
		paused := r.due(max(i-1, 0))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.opts.Hold:
		}
		d := time.Since(paused)
		r.held += d
		r.deadline = r.deadline.Add(d)
	}
	return r.waitDue(ctx, i)
}

func (r *replay) waitDue(ctx context.Context, i int) error {
	at := r.due(i)
	if at.After(r.deadline) {
		at = r.deadline
	}
	if err := ctxwait.Until(ctx, at); err != nil {
		return err
	}
	if !time.Now().Before(r.deadline) {
		return errMaxDuration
	}
	return nil
}

// stamp is the time an occurrence is sent with.
func (r *replay) stamp(t time.Time) time.Time {
	if r.opts.Restamp {
		return time.Now()
	}
	return t
}

// finish stops the progress reports, reports the final stats and returns
// them with err, unless err only says that the replay reached its bound.
func (r *replay) finish(ctx context.Context, err error) (Stats, error) {
	close(r.stop)
	<-r.stopped
	st := r.stats()
	if r.opts.Progress != nil {
		r.opts.Progress(st)
	}
	switch {
	case ctx.Err() != nil:
		return st, fmt.Errorf("replay stopped after %d occurrences: %w", st.Occurrences, ctx.Err())
	case errors.Is(err, errMaxDuration):
		return st, nil
	}
	return st, err
}
