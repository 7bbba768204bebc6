package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A legacy event's spam bucket pushed out of the cache (its state stays)
// is forgotten: the event's next record takes a bucket of its own, full;
// it never spends another key's tokens.
func TestStateKeepsItsSpamBucketOnlyWhileCached(t *testing.T) {
	cfg := defaults()
	cfg.Legacy, cfg.SpamBurst, cfg.SpamQPS = true, 1, 1e-9
	r := newTester(t, cfg)
	a := podEvent("pod-a", "BackOff", "back-off a")
	b := podEvent("pod-b", "BackOff", "back-off b")
	require.Len(t, r.at(time.Second, a), 1, "a's bucket gives its one token")
	require.Empty(t, r.at(2*time.Second, a), "a's bucket is empty")
	require.True(t, r.e.states.Len() > 0 && r.e.spam.Len() == 1)

	r.e.spam.resize(0) // a's bucket is pushed out, a's state stays
	r.e.spam.resize(cfg.MaxKeys)
	require.Len(t, r.at(3*time.Second, b), 1, "b's new bucket gives its token")
	require.Len(t, r.at(4*time.Second, a), 1, "a takes a new full bucket, not b's")
	require.Empty(t, r.at(5*time.Second, b), "b's token was not spent by a")
	require.Empty(t, r.at(6*time.Second, a))
	require.Equal(t, int64(3), r.e.Stats.SpamDropped)
}

// A legacy event's aggregation group pushed out of the cache (its state
// stays) is forgotten: the event's next record starts a group of its own,
// and is not combined with another object's notes.
func TestStateKeepsItsGroupOnlyWhileCached(t *testing.T) {
	cfg := defaults()
	cfg.Legacy, cfg.SpamFilter, cfg.AggregateMaxEvents = true, false, 2
	r := newTester(t, cfg)
	a := podEvent("pod-a", "BackOff", "back-off a")
	b := podEvent("pod-b", "BackOff", "back-off b")
	require.False(t, r.at(time.Second, a)[0].Aggregated)
	require.False(t, r.at(2*time.Second, a)[0].Aggregated, "a's group holds its one note")

	r.e.aggs.resize(0) // a's group is pushed out, a's state stays
	r.e.aggs.resize(cfg.MaxKeys)
	require.False(t, r.at(3*time.Second, b)[0].Aggregated, "b's new group")
	require.False(t, r.at(4*time.Second, a)[0].Aggregated, "a's event starts a group of its own: its one note, not b's and its own")
	b.Note = "back-off b, again"
	require.True(t, r.at(5*time.Second, b)[0].Aggregated, "b's second note combines b's events")
}
