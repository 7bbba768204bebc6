package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// budgets is a token bucket of records per client identity, for at most
// maxClients identities: a client that floods waits, and everyone else's
// records still find room in the queues they share. An identity evicted
// (the least recently seen) comes back with a full bucket; it needs a
// valid token of its own, so the bound is on memory, not on a flood.
type budgets struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	byID  *simplelru.LRU[string, *rate.Limiter]
}

func newBudgets(cfg PerClientConfig) *budgets {
	byID, err := simplelru.NewLRU[string, *rate.Limiter](max(cfg.MaxClients, 1), nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &budgets{limit: rate.Limit(cfg.RecordsPerSecond), burst: cfg.Burst, byID: byID}
}

// take charges n records to client at now, or, when its bucket does not
// hold them, charges nothing and answers how long until it will. A
// request larger than the burst is charged a full bucket: it goes through
// when the bucket is full, never never.
func (b *budgets) take(client string, n int, now time.Time) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	lim, found := b.byID.Get(client)
	if !found {
		lim = rate.NewLimiter(b.limit, b.burst)
		b.byID.Add(client, lim)
	}
	r := lim.ReserveN(now, min(n, b.burst))
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}
