package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"sync"
)

// seqGate keeps the order of the queue between pushes that run at once:
// ConsumeLogs stamps each request (issue) in the order it enters the queue,
// and a push adds its records to the lanes only once every request stamped
// before it did (wait, then pass) or will not come (retire). Requests
// without a stamp (a persistent queue's, which keeps no context) pass at
// once.
type seqGate struct {
	mu   sync.Mutex
	cond *sync.Cond
	next uint64              // the next stamp issued (stamps start at 1)
	low  uint64              // every stamp below low has passed
	open map[uint64]struct{} // issued stamps from low on that have not passed
	off  bool                // shutting down: nothing waits
}

func newSeqGate() *seqGate {
	g := &seqGate{next: 1, low: 1, open: map[uint64]struct{}{}}
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

// wait blocks until every stamp below s has passed (0: no stamp).
func (g *seqGate) wait(s uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for s != 0 && !g.off && g.low < s {
		g.cond.Wait()
	}
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
	moved := false
	for g.low < g.next {
		if _, waiting := g.open[g.low]; waiting {
			break
		}
		g.low++
		moved = true
	}
	if moved {
		g.cond.Broadcast()
	}
}

// stop lets every waiter through: at shutdown a stamped request may never
// be pushed (exporterhelper drops what is offered after its queue stopped).
func (g *seqGate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.off = true
	g.cond.Broadcast()
}

type stampKey struct{}

// withStamp carries a request's stamp through the in-memory queue (it
// keeps the context of ConsumeLogs) to the push.
func withStamp(ctx context.Context, s uint64) context.Context {
	return context.WithValue(ctx, stampKey{}, s)
}

func stampOf(ctx context.Context) uint64 {
	s, _ := ctx.Value(stampKey{}).(uint64)
	return s
}
