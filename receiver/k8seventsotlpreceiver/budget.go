package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// budgets is a token bucket of records per client identity, for at most
// maxClients identities: a client that floods waits, and everyone else's
// records still find room in the queues they share. An identity evicted
// (the least recently seen) comes back with a full bucket; it needs a
// valid token of its own, so the bound is on memory, not on a flood.
type budgets struct {
	rate  float64 // records per second
	burst float64
	mu    sync.Mutex
	byID  *simplelru.LRU[string, *bucket]
}

// bucket is one client's records in hand at a time.
type bucket struct {
	tokens float64 // below zero: records taken on credit, paid back first
	at     time.Time
}

func newBudgets(cfg PerClientConfig) *budgets {
	byID, err := simplelru.NewLRU[string, *bucket](max(cfg.MaxClients, 1), nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &budgets{rate: cfg.RecordsPerSecond, burst: float64(cfg.Burst), byID: byID}
}

// take charges n records to client at now, or, when its bucket does not
// hold them, charges nothing and answers how long until it will. A
// request larger than the burst goes through with a full bucket and is
// paid in full: the bucket goes below zero, so that no client sends more
// than the rate however it sizes its requests (x/time/rate refuses such a
// request for ever, and charging it only the burst would let a client send
// 1 MiB requests at the burst's pace).
func (b *budgets) take(client string, n int, now time.Time) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, found := b.byID.Get(client)
	if !found {
		bk = &bucket{tokens: b.burst, at: now}
		b.byID.Add(client, bk)
	}
	if now.After(bk.at) {
		bk.tokens = min(b.burst, bk.tokens+now.Sub(bk.at).Seconds()*b.rate)
		bk.at = now
	}
	need := min(float64(n), b.burst)
	if bk.tokens < need {
		return time.Duration(math.Ceil((need - bk.tokens) / b.rate * float64(time.Second))), false
	}
	bk.tokens -= float64(n)
	return 0, true
}

// give pays n records back to client: a request charged, then refused as
// retryable before anything of it went on, is charged when it is retried.
func (b *budgets) give(client string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk, ok := b.byID.Peek(client); ok {
		bk.tokens = min(b.burst, bk.tokens+float64(n))
	}
}
