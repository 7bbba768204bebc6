package k8seventexporter

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configretry"
)

// TestDispatcherHandsBackWhatItCannotWrite: a write that keeps failing
// holds its push until the exporter stops, which hands the record back
// (a persistent queue keeps it); a push whose caller gives up takes back
// the records not yet written; a push after the writer is gone returns at
// once.
func TestDispatcherHandsBackWhatItCannotWrite(t *testing.T) {
	t.Parallel()
	boom := errors.New("503")
	retry := configretry.NewDefaultBackOffConfig()
	retry.InitialInterval, retry.MaxElapsedTime = time.Hour, 0
	var mu sync.Mutex
	var wrote []string
	failedOnce := make(chan struct{}, 1)
	d := newDispatcher(func(_ context.Context, p *pending) error {
		if p.name == "failing" {
			select {
			case failedOnce <- struct{}{}:
			default:
			}
			return boom
		}
		mu.Lock()
		wrote = append(wrote, p.name)
		mu.Unlock()
		return nil
	}, retry, time.Second)
	go d.loop()

	failing := make(chan []error)
	go func() { failing <- d.run(context.Background(), []*pending{pendingIn("shop", "failing")}) }()
	<-failedOnce
	// Behind the failing head in its lane: the caller gives up waiting.
	ctx, cancel := context.WithCancel(context.Background())
	behind := make(chan []error)
	go func() { behind <- d.run(ctx, []*pending{pendingIn("shop", "behind")}) }()
	assert.Equal(t, []error{nil}, d.run(context.Background(), []*pending{pendingIn("other", "fine")}))
	cancel()
	assert.Equal(t, []error{context.Canceled}, <-behind)

	d.stop()
	errs := <-failing
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], errStopping)
	assert.ErrorIs(t, errs[0], boom)
	d.close()
	late := d.run(context.Background(), []*pending{pendingIn("shop", "late")})
	assert.Equal(t, []error{errStopping}, late)
	assert.Equal(t, []string{"fine"}, wrote)
}

// TestDispatcherWithHandBackStopsWithoutWritingTheBacklog: with a
// persistent queue, stop hands back every record not in flight (the next
// start writes them) and the one in flight finishes; a push after stop is
// handed back at once.
func TestDispatcherWithHandBackStopsWithoutWritingTheBacklog(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var wrote []string
	d := newDispatcher(func(_ context.Context, p *pending) error {
		if p.name == "first" {
			close(started)
			<-release
		}
		mu.Lock()
		wrote = append(wrote, p.name)
		mu.Unlock()
		return nil
	}, configretry.NewDefaultBackOffConfig(), time.Second)
	d.handBack = true
	go d.loop()
	defer d.close()

	res := make(chan []error)
	go func() {
		res <- d.run(context.Background(), []*pending{pendingIn("shop", "first"), pendingIn("shop", "second"), pendingIn("other", "third")})
	}()
	<-started
	d.stop()
	close(release)
	errs := <-res
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0], "the write in flight finishes")
	assert.ErrorIs(t, errs[1], errStopping)
	assert.ErrorIs(t, errs[2], errStopping)
	assert.Equal(t, []error{errStopping}, d.run(context.Background(), []*pending{pendingIn("shop", "late")}))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"first"}, wrote)
}
