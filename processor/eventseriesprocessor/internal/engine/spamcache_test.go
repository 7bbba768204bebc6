package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A legacy event keeps its spam bucket (bucketOf) only while the bucket
// is in the cache: once pushed out, and its object reused for another
// key, the event's next record takes a bucket of its own, full, as it did
// when every record looked its bucket up; it never spends the other
// key's tokens or reads an emptied bucket.
func TestStateKeepsItsSpamBucketOnlyWhileCached(t *testing.T) {
	cfg := defaults()
	cfg.Legacy, cfg.SpamBurst, cfg.SpamQPS = true, 1, 1e-9
	r := newTester(t, cfg)
	a := podEvent("pod-a", "BackOff", "back-off a")
	b := podEvent("pod-b", "BackOff", "back-off b")
	require.Len(t, r.at(time.Second, a), 1, "a's bucket gives its one token")
	require.Empty(t, r.at(2*time.Second, a), "a's bucket is empty")
	require.True(t, r.e.states.Len() > 0 && r.e.spam.Len() == 1)

	r.e.spam.Resize(0) // a's bucket is pushed out, a's state stays
	r.e.spam.Resize(cfg.MaxKeys)
	require.Len(t, r.at(3*time.Second, b), 1, "b's new bucket (a's, reused) gives its token")
	require.Len(t, r.at(4*time.Second, a), 1, "a takes a new full bucket, not b's")
	require.Empty(t, r.at(5*time.Second, b), "b's token was not spent by a")
	require.Empty(t, r.at(6*time.Second, a))
	require.Equal(t, int64(3), r.e.Stats.SpamDropped)
}

// A legacy event keeps its aggregation group (aggregateOf) only while the
// group is in the cache: once pushed out, and its object reused for
// another object's group, the event's next record starts a group of its
// own, and is not combined with the other object's notes.
func TestStateKeepsItsGroupOnlyWhileCached(t *testing.T) {
	cfg := defaults()
	cfg.Legacy, cfg.SpamFilter, cfg.AggregateMaxEvents = true, false, 2
	r := newTester(t, cfg)
	a := podEvent("pod-a", "BackOff", "back-off a")
	b := podEvent("pod-b", "BackOff", "back-off b")
	require.False(t, r.at(time.Second, a)[0].Aggregated)
	require.False(t, r.at(2*time.Second, a)[0].Aggregated, "a's state holds its group")

	r.e.aggs.Resize(0) // a's group is pushed out, a's state stays
	r.e.aggs.Resize(cfg.MaxKeys)
	require.False(t, r.at(3*time.Second, b)[0].Aggregated, "b's new group (a's, reused)")
	require.False(t, r.at(4*time.Second, a)[0].Aggregated, "a's event starts a group of its own: its one note, not b's and its own")
	b.Note = "back-off b, again"
	require.True(t, r.at(5*time.Second, b)[0].Aggregated, "b's second note combines b's events")
}
