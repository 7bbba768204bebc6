package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/client"
	"golang.org/x/time/rate"
)

// failures is a budget of failed authentications per client address, for
// at most max sources: a source that spent its budget has its unknown
// tokens refused without a TokenReview until the budget refills, so one
// pod sending random or forged tokens costs the API server at most its
// budget. A source evicted (the least recently failing) comes back with a
// full budget: the bound is on memory. Tokens accepted before are not
// charged nor held back.
type failures struct {
	perSecond rate.Limit
	burst     int
	now       func() time.Time
	mu        sync.Mutex
	bySource  *simplelru.LRU[string, *rate.Limiter]
}

func newFailures(cfg PerSourceConfig, now func() time.Time) *failures {
	bySource, err := simplelru.NewLRU[string, *rate.Limiter](max(cfg.MaxSources, 1), nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &failures{perSecond: rate.Limit(cfg.FailuresPerSecond), burst: cfg.Burst, now: now, bySource: bySource}
}

// exhausted reports whether source has no failure left to spend.
func (f *failures) exhausted(source string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.bySource.Peek(source)
	return ok && lim.TokensAt(f.now()) < 1
}

// charge spends one of source's failures.
func (f *failures) charge(source string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.bySource.Get(source)
	if !ok {
		lim = rate.NewLimiter(f.perSecond, f.burst)
		f.bySource.Add(source, lim)
	}
	lim.AllowN(f.now(), 1)
}

// sourceOf is the address a request came from, without its port ("" when
// the server did not say).
func sourceOf(ctx context.Context) string {
	addr := client.FromContext(ctx).Addr
	if addr == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}
