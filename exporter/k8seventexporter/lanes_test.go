package k8seventexporter

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
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
	t.Parallel()
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
	t.Parallel()
	l := newLanes()
	l.add(pendingIn("shop", "last"), pendingIn("shop", "after"), pendingIn("other", "a"), pendingIn("other", "b"))
	p, _ := l.take(t0)
	require.Equal(t, "last", p.name)
	second := func(int) time.Duration { return time.Second }
	l.failed(p, errors.New("503"), t0, second)

	assert.Equal(t, []string{"other/a", "other/b"}, takeAll(l, t0), "only the other lane is ready")
	none, wake := l.take(t0.Add(time.Second - time.Nanosecond))
	assert.Nil(t, none)
	assert.Equal(t, t0.Add(time.Second), wake, "the lane says when it is ready")
	assert.Equal(t, []string{"shop/last", "shop/after"}, takeAll(l, t0.Add(time.Second)), "retried first, in place")
}

// TestLanesNeverGiveUpForTime: a head that keeps failing, for days of
// retries, stays at the head of its lane and is written once the failures
// end; nothing behind it overtakes it.
func TestLanesNeverGiveUpForTime(t *testing.T) {
	t.Parallel()
	l := newLanes()
	l.add(pendingIn("shop", "failing"), pendingIn("shop", "next"))
	delay := func(int) time.Duration { return 30 * time.Second }
	now := t0
	for range 10000 { // more than three days of 30 s retries
		p, _ := l.take(now)
		require.Equal(t, "failing", p.name)
		l.failed(p, errors.New("503"), now, delay)
		now = now.Add(delay(0))
	}
	p, _ := l.take(now)
	require.Equal(t, "failing", p.name)
	l.done(p)
	assert.Equal(t, []string{"shop/next"}, takeAll(l, now))
}

// TestLanesWithdrawAndStop: a push that stops waiting takes back its
// records, not the one in flight; at shutdown the heads waiting for a
// retry are handed back with their last error.
func TestLanesWithdrawAndStop(t *testing.T) {
	t.Parallel()
	l := newLanes()
	b1, b2 := &batch{}, &batch{}
	p1, p2, p3 := pendingIn("shop", "1"), pendingIn("shop", "2"), pendingIn("other", "3")
	p1.b, p2.b, p3.b = b1, b2, b1
	l.add(p1, p2, p3)
	inFlight, _ := l.take(t0)
	require.Same(t, p1, inFlight)
	assert.Equal(t, []*pending{p3}, l.withdraw(b1), "p1 is in flight")
	boom := errors.New("503")
	l.failed(p1, boom, t0, func(int) time.Duration { return time.Minute })

	ps, errs := l.waiting()
	assert.Equal(t, []*pending{p1}, ps)
	assert.Equal(t, []error{boom}, errs)
	assert.Equal(t, []string{"shop/2"}, takeAll(l, t0), "the lane goes on")
}

func TestLanesIdleKeepsTheOneInFlight(t *testing.T) {
	t.Parallel()
	l := newLanes()
	p1, p2, p3 := pendingIn("shop", "1"), pendingIn("shop", "2"), pendingIn("other", "3")
	l.add(p1, p2, p3)
	inFlight, _ := l.take(t0)
	require.Same(t, p1, inFlight)
	assert.ElementsMatch(t, []*pending{p2, p3}, l.idle())
	l.done(p1)
	assert.Empty(t, takeAll(l, t0), "nothing left once the write in flight resolved")
}

// TestPushAnswerKeepsWhatCanBeKept: a push whose records failed, some for
// good and some to be retried, answers a retryable error, whichever failed
// first: a persistent queue deletes a request on a permanent one; only a
// push whose every failure is permanent answers one.
func TestPushAnswerKeepsWhatCanBeKept(t *testing.T) {
	t.Parallel()
	gaveUp := consumererror.NewPermanent(errors.New("rejected"))
	handedBack := fmt.Errorf("%w: 503", errStopping)
	assert.NoError(t, pushAnswer([]error{nil, nil}))
	for _, errs := range [][]error{{gaveUp, handedBack}, {handedBack, gaveUp}, {nil, gaveUp, nil, handedBack}} {
		err := pushAnswer(errs)
		require.Error(t, err)
		assert.False(t, consumererror.IsPermanent(err), "%v: the handed-back record must be kept", errs)
		assert.ErrorIs(t, err, errStopping)
	}
	err := pushAnswer([]error{gaveUp, nil, gaveUp})
	assert.True(t, consumererror.IsPermanent(err), "nothing to keep")
	assert.ErrorContains(t, err, "2 of 3 event records not written")
}
