package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
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
// A push of requests the batcher merged carries their stamps, consecutive
// ones: it waits for the lowest and passes them all. The stamp rides in the
// request's resources (stampKey). Requests without a stamp of this run
// (restored from a persistent queue after a restart) pass at once.
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

// enter waits until every stamp below a push's stamps has passed: those of
// the requests merged into it are consecutive, so below the lowest. It
// answers wait's skipped; no stamps: never waits.
func (g *seqGate) enter(stamps []uint64) (skipped bool) {
	if len(stamps) == 0 {
		return false
	}
	return g.wait(stamps[0])
}

// leave passes a push's stamps once its records are in the lanes.
func (g *seqGate) leave(stamps []uint64) {
	for _, s := range stamps {
		g.pass(s)
	}
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

// stampKey is the resource attribute that carries a request's stamp. It
// rides in the data, which both queues keep, and survives the batcher's
// merge: each merged request keeps its own resources. The record contract
// has no such key, so decoding ignores it.
const stampKey = "k8sevents.exporter.order"

// stamp writes s on every resource of ld, the request entering the queue
// (the exporter declares that it mutates its input).
func (g *seqGate) stamp(ld plog.Logs, s uint64) {
	v := g.run + "/" + strconv.FormatUint(s, 10)
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rls.At(i).Resource().Attributes().PutStr(stampKey, v)
	}
}

// stampsOf returns the stamps of this run that ld carries, lowest first:
// one per request merged into it; none for requests of another run
// (restored from a persistent queue after a restart).
func (g *seqGate) stampsOf(ld plog.Logs) []uint64 {
	var out []uint64
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		v, ok := rls.At(i).Resource().Attributes().Get(stampKey)
		if !ok {
			continue
		}
		if s, ok := g.parse(v.Str()); ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parse reads a stamp of this run, else false.
func (g *seqGate) parse(v string) (uint64, bool) {
	run, n, ok := strings.Cut(v, "/")
	if !ok || run != g.run {
		return 0, false
	}
	s, err := strconv.ParseUint(n, 10, 64)
	return s, err == nil && s != 0
}
