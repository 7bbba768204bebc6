package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// knownTokens are tokens the API server accepted, by SHA-256, each until
// its exp: their later reviews go through the renewal budget, and they
// skip the local checks and the per-source failure budget. At most size,
// the least recently used forgotten first (its next review is then a new
// token's).
type knownTokens struct {
	now    func() time.Time
	mu     sync.Mutex
	tokens *simplelru.LRU[[sha256.Size]byte, time.Time]
}

func newKnownTokens(size int, now func() time.Time) *knownTokens {
	tokens, err := simplelru.NewLRU[[sha256.Size]byte, time.Time](max(size, 1), nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &knownTokens{now: now, tokens: tokens}
}

func (k *knownTokens) add(key [sha256.Size]byte, exp time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tokens.Add(key, exp)
}

func (k *knownTokens) forget(key [sha256.Size]byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tokens.Remove(key)
}

// has reports whether key is a token accepted before that has not
// expired.
func (k *knownTokens) has(key [sha256.Size]byte) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	exp, ok := k.tokens.Get(key)
	return ok && k.now().Before(exp)
}
