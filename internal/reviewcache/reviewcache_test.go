package reviewcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func answer(v string, ttl time.Duration, calls *int) Review[string] {
	return func(context.Context) (string, time.Duration, error) {
		*calls++
		return v, ttl, nil
	}
}

func TestRemembersUntilItsTTL(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := New[string, string](10, time.Minute, clk.now)
	calls := 0
	v, hit, err := c.Get(context.Background(), "k", answer("a", 30*time.Second, &calls))
	require.NoError(t, err)
	assert.Equal(t, "a", v)
	assert.False(t, hit)
	clk.t = clk.t.Add(29 * time.Second)
	v, hit, _ = c.Get(context.Background(), "k", answer("b", 30*time.Second, &calls))
	assert.Equal(t, "a", v, "within the TTL: remembered")
	assert.True(t, hit)
	clk.t = clk.t.Add(time.Second)
	v, hit, _ = c.Get(context.Background(), "k", answer("b", 30*time.Second, &calls))
	assert.Equal(t, "b", v, "at the TTL: asked again")
	assert.False(t, hit)
	assert.Equal(t, 2, calls)
}

func TestZeroTTLAndErrorsAreNotRemembered(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := New[string, string](10, time.Minute, clk.now)
	calls := 0
	_, _, _ = c.Get(context.Background(), "k", answer("a", 0, &calls))
	_, _, _ = c.Get(context.Background(), "k", answer("a", 0, &calls))
	assert.Equal(t, 2, calls)
	boom := errors.New("boom")
	_, _, err := c.Get(context.Background(), "e", func(context.Context) (string, time.Duration, error) { return "x", time.Hour, boom })
	require.ErrorIs(t, err, boom)
	v, hit, err := c.Get(context.Background(), "e", answer("ok", time.Hour, &calls))
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
	assert.False(t, hit)
	assert.Equal(t, 1, c.Len(), "only the answered key")
}

func TestBoundedLeastRecentlyUsedFirst(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := New[int, string](3, time.Minute, clk.now)
	calls := 0
	for k := range 3 {
		_, _, _ = c.Get(context.Background(), k, answer("v", time.Hour, &calls))
	}
	_, hit, _ := c.Get(context.Background(), 0, answer("v", time.Hour, &calls)) // 0 is now the most recent
	require.True(t, hit)
	_, _, _ = c.Get(context.Background(), 3, answer("v", time.Hour, &calls)) // evicts 1
	assert.Equal(t, 3, c.Len())
	_, hit, _ = c.Get(context.Background(), 1, answer("v", time.Hour, &calls))
	assert.False(t, hit, "1 was the least recently used")
	_, hit, _ = c.Get(context.Background(), 0, answer("v", time.Hour, &calls))
	assert.True(t, hit)
}

// TestConcurrentCallersShareOneReview: 50 callers of one key while its
// review runs make one review; a waiter whose context ends leaves with its
// error, the others get the answer.
func TestConcurrentCallersShareOneReview(t *testing.T) {
	c := New[string, string](10, time.Minute, time.Now)
	release := make(chan struct{})
	var calls atomic.Int32
	review := func(context.Context) (string, time.Duration, error) {
		calls.Add(1)
		<-release
		return "v", time.Minute, nil
	}
	var wg sync.WaitGroup
	results := make([]string, 50)
	started := make(chan struct{})
	wg.Go(func() {
		close(started)
		results[0], _, _ = c.Get(context.Background(), "k", review)
	})
	<-started
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < len(results); i++ {
		wg.Go(func() { results[i], _, _ = c.Get(context.Background(), "k", review) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := c.Get(ctx, "k", review)
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load())
	for i, r := range results {
		assert.Equal(t, "v", r, "caller %d", i)
	}
}

// TestFirstCallerLeavingFailsNoOne: the caller whose request started a
// review goes away (its context cancelled) while the review runs; the
// review goes on, and the callers waiting for it get its answer, not the
// first caller's cancellation.
func TestFirstCallerLeavingFailsNoOne(t *testing.T) {
	c := New[string, string](10, time.Minute, time.Now)
	release := make(chan struct{})
	reviewCtx := make(chan context.Context, 1)
	review := func(ctx context.Context) (string, time.Duration, error) {
		reviewCtx <- ctx
		select {
		case <-release:
			return "v", time.Minute, nil
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
	first, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, _, err := c.Get(first, "k", review)
		firstErr <- err
	}()
	<-reviewCtx
	second := make(chan string, 1)
	go func() {
		v, _, err := c.Get(context.Background(), "k", review)
		assert.NoError(t, err)
		second <- v
	}()
	cancelFirst()
	require.ErrorIs(t, <-firstErr, context.Canceled, "the first caller leaves")
	close(release)
	assert.Equal(t, "v", <-second, "the waiter gets the review's answer")
	v, hit, err := c.Get(context.Background(), "k", review)
	require.NoError(t, err)
	assert.True(t, hit, "remembered")
	assert.Equal(t, "v", v)
}

// TestRefreshRenewsInTheBackground: a refresh answers at once, the old
// answer is still given while it runs, and its answer replaces it.
func TestRefreshRenewsInTheBackground(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := New[string, string](10, time.Minute, clk.now)
	calls := 0
	_, _, err := c.Get(context.Background(), "k", answer("old", time.Minute, &calls))
	require.NoError(t, err)
	release := make(chan struct{})
	done := make(chan struct{})
	c.Refresh(context.Background(), "k", func(context.Context) (string, time.Duration, error) {
		defer close(done)
		<-release
		return "new", time.Minute, nil
	})
	v, hit, _ := c.Get(context.Background(), "k", answer("x", time.Minute, &calls))
	assert.True(t, hit)
	assert.Equal(t, "old", v, "while the refresh runs")
	close(release)
	<-done
	require.Eventually(t, func() bool {
		v, _, _ := c.Get(context.Background(), "k", answer("x", time.Minute, &calls))
		return v == "new"
	}, 5*time.Second, time.Millisecond)
	until, ok := c.Until("k")
	assert.True(t, ok)
	assert.Equal(t, clk.t.Add(time.Minute), until)
}
