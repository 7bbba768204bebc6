package k8seventexporter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/pdata/plog"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

func pendingIn(ns, name string) *pending {
	ev := record(name, "", 1, t0)
	ev.Regarding.Namespace = ns
	return &pending{ev: ev, name: name}
}

// takeAll writes everything the lanes hand out at now, in order.
func takeAll(l *lanes, now time.Time) []string {
	var out []string
	for {
		p, _ := l.take(now)
		if p == nil {
			return out
		}
		out = append(out, p.ev.ObjectNamespace()+"/"+p.name)
		l.done(p)
	}
}

// TestLanesTakeTurns: a flood queued in one namespace delays another
// namespace's record by one write, and each namespace keeps its order.
func TestLanesTakeTurns(t *testing.T) {
	l := newLanes()
	for i := range 5 {
		l.add(pendingIn("shop", fmt.Sprint("flood-", i)))
	}
	l.add(pendingIn("other", "quiet-0"), pendingIn("other", "quiet-1"))
	l.add(pendingIn("third", "x"))
	assert.Equal(t, []string{"shop/flood-0", "other/quiet-0", "third/x", "shop/flood-1", "other/quiet-1",
		"shop/flood-2", "shop/flood-3", "shop/flood-4"}, takeAll(l, t0))
	assert.Empty(t, l.ring)
	assert.Empty(t, l.byNS)
}

// TestLanesFailedHeadWaitsInPlace: a failed write stays at the head of
// its lane until its retry time; the record behind it never overtakes it;
// the other lanes go on meanwhile.
func TestLanesFailedHeadWaitsInPlace(t *testing.T) {
	l := newLanes()
	l.add(pendingIn("shop", "last"), pendingIn("shop", "after"), pendingIn("other", "a"), pendingIn("other", "b"))
	p, _ := l.take(t0)
	require.Equal(t, "last", p.name)
	second := func(int) time.Duration { return time.Second }
	assert.False(t, l.failed(p, errors.New("503"), t0, second, 0))

	assert.Equal(t, []string{"other/a", "other/b"}, takeAll(l, t0), "only the other lane is ready")
	none, wake := l.take(t0.Add(time.Second - time.Nanosecond))
	assert.Nil(t, none)
	assert.Equal(t, t0.Add(time.Second), wake, "the lane says when it is ready")
	assert.Equal(t, []string{"shop/last", "shop/after"}, takeAll(l, t0.Add(time.Second)), "retried first, in place")
}

// TestLanesGiveUpAfterMaxElapsed: retries end once the next one would
// come later than maxElapsed after the first failure; the lane moves on.
func TestLanesGiveUpAfterMaxElapsed(t *testing.T) {
	l := newLanes()
	l.add(pendingIn("shop", "failing"), pendingIn("shop", "next"))
	delay := func(attempt int) time.Duration { return time.Duration(attempt) * time.Second }
	now := t0
	for attempt := 1; ; attempt++ {
		p, _ := l.take(now)
		require.Equal(t, "failing", p.name)
		if l.failed(p, errors.New("503"), now, delay, 9*time.Second) {
			assert.Equal(t, 4, attempt, "1+2+3 s waited; the next retry would come 10 s after the first failure, past 9 s")
			break
		}
		now = now.Add(delay(attempt))
	}
	assert.Equal(t, []string{"shop/next"}, takeAll(l, now))
}

// TestLanesWithdrawAndStop: a push that stops waiting takes back its
// records, not the one in flight; at shutdown the heads waiting for a
// retry are handed back with their last error.
func TestLanesWithdrawAndStop(t *testing.T) {
	l := newLanes()
	b1, b2 := &batch{}, &batch{}
	p1, p2, p3 := pendingIn("shop", "1"), pendingIn("shop", "2"), pendingIn("other", "3")
	p1.b, p2.b, p3.b = b1, b2, b1
	l.add(p1, p2, p3)
	inFlight, _ := l.take(t0)
	require.Same(t, p1, inFlight)
	assert.Equal(t, []*pending{p3}, l.withdraw(b1), "p1 is in flight")
	boom := errors.New("503")
	l.failed(p1, boom, t0, func(int) time.Duration { return time.Minute }, 0)

	ps, errs := l.waiting()
	assert.Equal(t, []*pending{p1}, ps)
	assert.Equal(t, []error{boom}, errs)
	assert.Equal(t, []string{"shop/2"}, takeAll(l, t0), "the lane goes on")
}

// TestSeqGateAdmitsInStampOrder: pushes that arrive out of order enter the
// lanes in stamp order; a stamp that will not come is passed by its issuer.
func TestSeqGateAdmitsInStampOrder(t *testing.T) {
	g := newSeqGate()
	s1, s2, s3 := g.issue(), g.issue(), g.issue()
	var mu sync.Mutex
	var order []uint64
	var wg sync.WaitGroup
	entered := func(s uint64) {
		g.wait(s)
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
		g.pass(s)
	}
	wg.Add(2)
	go func() { defer wg.Done(); entered(s3) }()
	go func() { defer wg.Done(); entered(s2) }()
	g.pass(s1) // its enqueue failed
	wg.Wait()
	assert.Equal(t, []uint64{s2, s3}, order)
	g.wait(0) // no stamp: never waits

	// A stamp that never comes (the queue lost its request) is given up
	// once nothing passed for maxWait; a straggler then passes at once.
	g.maxWait = 20 * time.Millisecond
	lost, next := g.issue(), g.issue()
	assert.True(t, g.wait(next), "gave up waiting for the lost stamp")
	g.pass(next)
	assert.False(t, g.wait(lost))
	s4 := g.issue()
	g.stop()
	g.wait(s4 + 1) // stopped: never waits
}

// TestDispatcherHandsBackWhatItCannotWrite: a write that keeps failing
// holds its push until the exporter stops, which hands the record back
// (a persistent queue keeps it); a push whose caller gives up takes back
// the records not yet written; a push after the writer is gone returns at
// once.
func TestDispatcherHandsBackWhatItCannotWrite(t *testing.T) {
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
	go func() { failing <- d.run(context.Background(), []*pending{pendingIn("shop", "failing")}, func() {}) }()
	<-failedOnce
	// Behind the failing head in its lane: the caller gives up waiting.
	ctx, cancel := context.WithCancel(context.Background())
	behind := make(chan []error)
	go func() { behind <- d.run(ctx, []*pending{pendingIn("shop", "behind")}, func() {}) }()
	assert.Equal(t, []error{nil}, d.run(context.Background(), []*pending{pendingIn("other", "fine")}, func() {}))
	cancel()
	assert.Equal(t, []error{context.Canceled}, <-behind)

	d.stop()
	errs := <-failing
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], errStopping)
	assert.ErrorIs(t, errs[0], boom)
	d.close()
	late := d.run(context.Background(), []*pending{pendingIn("shop", "late")}, func() {})
	assert.Equal(t, []error{errStopping}, late)
	assert.Equal(t, []string{"fine"}, wrote)
}

// TestSeqGateAdmitsMergedRequestsInOrder: the batcher merged requests 1-2
// into one push and 3-5 into another; the later push, started first,
// enters the lanes only after the earlier one left.
func TestSeqGateAdmitsMergedRequestsInOrder(t *testing.T) {
	g := newSeqGate()
	merged := func(from, to uint64) plog.Logs {
		out := plog.NewLogs()
		for s := from; s <= to; s++ {
			ld := encodeLogs(record(fmt.Sprintf("web-1.m%d", s), k8sevent.StateSingleton, 1, t0))
			g.stamp(ld, g.issue())
			ld.ResourceLogs().MoveAndAppendTo(out.ResourceLogs())
		}
		return out
	}
	first, second := merged(1, 2), merged(3, 5)
	var mu sync.Mutex
	var order []string
	push := func(name string, ld plog.Logs) {
		stamps := g.stampsOf(ld)
		assert.False(t, g.enter(stamps), "%s: no stamp given up", name)
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		g.leave(stamps)
	}
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		close(ready)
		push("second", second)
	}()
	<-ready
	push("first", first)
	<-done
	assert.Equal(t, []string{"first", "second"}, order)
	assert.False(t, g.wait(g.issue()), "every stamp passed")
}

// TestStampSurvivesThePersistentQueue: the stamp rides in the request's
// resources, which the persistent queue stores (the encoding exporterhelper
// uses) and the batcher's merge keeps (one stamp per merged request); a
// stamp of another run (restored after a restart) is none, and a stamped
// record decodes as before.
func TestStampSurvivesThePersistentQueue(t *testing.T) {
	g := newSeqGate()
	ev := record("web-1.stamped", k8sevent.StateSingleton, 1, t0)
	ld := encodeLogs(ev)
	g.stamp(ld, 42)
	buf, err := pdatareq.MarshalLogs(context.Background(), ld)
	require.NoError(t, err)
	_, restored, err := pdatareq.UnmarshalLogs(buf)
	require.NoError(t, err)
	assert.Equal(t, []uint64{42}, g.stampsOf(restored))
	assert.Empty(t, newSeqGate().stampsOf(restored), "another run's stamp")
	assert.Empty(t, g.stampsOf(encodeLogs(ev)), "no stamp")
	rl := restored.ResourceLogs().At(0)
	got, _, found := k8sevent.Decode(rl.Resource(), rl.ScopeLogs().At(0).LogRecords().At(0), k8sevent.DecodeOptions{})
	require.True(t, found)
	assert.Equal(t, ev.Name, got.Name)
	assert.Equal(t, ev.Regarding, got.Regarding)

	// Merged as the batcher merges: the resources move, each keeps its stamp.
	later := encodeLogs(record("web-1.later", k8sevent.StateSingleton, 1, t0), record("web-1.later2", k8sevent.StateSingleton, 1, t0))
	g.stamp(later, 43)
	later.ResourceLogs().MoveAndAppendTo(restored.ResourceLogs())
	assert.Equal(t, []uint64{42, 43}, g.stampsOf(restored))
}

func TestLanesIdleKeepsTheOneInFlight(t *testing.T) {
	l := newLanes()
	p1, p2, p3 := pendingIn("shop", "1"), pendingIn("shop", "2"), pendingIn("other", "3")
	l.add(p1, p2, p3)
	inFlight, _ := l.take(t0)
	require.Same(t, p1, inFlight)
	assert.ElementsMatch(t, []*pending{p2, p3}, l.idle())
	l.done(p1)
	assert.Empty(t, takeAll(l, t0), "nothing left once the write in flight resolved")
}

// TestDispatcherWithHandBackStopsWithoutWritingTheBacklog: with a
// persistent queue, stop hands back every record not in flight (the next
// start writes them) and the one in flight finishes; a push after stop is
// handed back at once.
func TestDispatcherWithHandBackStopsWithoutWritingTheBacklog(t *testing.T) {
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
		res <- d.run(context.Background(), []*pending{pendingIn("shop", "first"), pendingIn("shop", "second"), pendingIn("other", "third")}, func() {})
	}()
	<-started
	d.stop()
	close(release)
	errs := <-res
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0], "the write in flight finishes")
	assert.ErrorIs(t, errs[1], errStopping)
	assert.ErrorIs(t, errs[2], errStopping)
	assert.Equal(t, []error{errStopping}, d.run(context.Background(), []*pending{pendingIn("shop", "late")}, func() {}))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"first"}, wrote)
}
