package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/client"
)

// gateMaxWait bounds how long a push waits for an earlier stamp that has
// made no progress: a request the queue lost (a storage read error) must
// not stop the pipeline. It is far above the time a dispatched request
// takes to reach the lanes (milliseconds).
const gateMaxWait = 10 * time.Second

// seqGate keeps the order of the queue between pushes that run at once:
// ConsumeLogs stamps each request (issue) in the order it enters the queue,
// and a push adds its records to the lanes only once every request stamped
// before it did (wait, then pass) or will not come (pass by the issuer).
// The stamp rides in the request's client metadata, which both the
// in-memory and the persistent queue keep. Requests without a stamp of
// this run (restored from a persistent queue after a restart) pass at once.
type seqGate struct {
	run   string // this exporter's run: stamps of another run are ignored
	mu    sync.Mutex
	cond  *sync.Cond
	next  uint64              // the next stamp issued (stamps start at 1)
	low   uint64              // every stamp below low has passed
	open  map[uint64]struct{} // issued stamps from low on that have not passed
	off   bool                // shutting down: nothing waits
	moved time.Time           // when a stamp last passed
	// maxWait is gateMaxWait; a test shortens it.
	maxWait time.Duration
}

func newSeqGate() *seqGate {
	g := &seqGate{run: strconv.FormatUint(rand.Uint64(), 36), next: 1, low: 1, open: map[uint64]struct{}{}, moved: time.Now(),
		maxWait: gateMaxWait}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// issue returns the next stamp.
func (g *seqGate) issue() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.next
	g.next++
	g.open[s] = struct{}{}
	return s
}

// wait blocks until every stamp below s has passed (0: no stamp), or
// until gateMaxWait went by without any passing: then the missing stamps
// are given up (skipped true).
func (g *seqGate) wait(s uint64) (skipped bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	since := time.Now()
	for s != 0 && !g.off && g.low < s {
		left := g.maxWait - time.Since(maxTime(since, g.moved))
		if left <= 0 {
			for pending := range g.open {
				if pending < s {
					delete(g.open, pending)
				}
			}
			g.low = s
			g.advance()
			return true
		}
		wake := time.AfterFunc(left, g.cond.Broadcast)
		g.cond.Wait()
		wake.Stop()
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// pass marks s as added to the lanes (or never coming: a failed enqueue).
// Passing a stamp twice (a retried push) is harmless.
func (g *seqGate) pass(s uint64) {
	if s == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.open, s)
	g.advance()
}

// advance moves low past the stamps that passed, and wakes the waiters.
func (g *seqGate) advance() {
	for g.low < g.next {
		if _, waiting := g.open[g.low]; waiting {
			break
		}
		g.low++
	}
	g.moved = time.Now()
	g.cond.Broadcast()
}

// stop lets every waiter through: at shutdown a stamped request may never
// be pushed (exporterhelper drops what is offered after its queue stopped).
func (g *seqGate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.off = true
	g.cond.Broadcast()
}

// stampKey is the client metadata key of a request's stamp.
const stampKey = "k8sevent-exporter-order"

// stamp carries s in the request's client metadata (kept with the rest of
// the caller's), which the queues keep up to the push.
func (g *seqGate) stamp(ctx context.Context, s uint64) context.Context {
	info := client.FromContext(ctx)
	md := map[string][]string{}
	for k := range info.Metadata.Keys() {
		md[k] = info.Metadata.Get(k)
	}
	md[stampKey] = []string{g.run + "/" + strconv.FormatUint(s, 10)}
	info.Metadata = client.NewMetadata(md)
	return client.NewContext(ctx, info)
}

// stampOf is a request's stamp of this run, else 0.
func (g *seqGate) stampOf(ctx context.Context) uint64 {
	vals := client.FromContext(ctx).Metadata.Get(stampKey)
	if len(vals) != 1 {
		return 0
	}
	run, n, ok := strings.Cut(vals[0], "/")
	if !ok || run != g.run {
		return 0
	}
	s, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0
	}
	return s
}
