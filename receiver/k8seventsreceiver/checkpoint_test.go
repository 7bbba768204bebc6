package k8seventsreceiver

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestResumeAfterRelist(t *testing.T) {
	r := newCheckpoint(2)
	r.emitted("a", "10", t0)
	r.emitted("b", "11", t0.Add(time.Second))
	r.emitted("c", "12", t0.Add(time.Second))

	assert.False(t, r.emitAfterRelist("c", "ns/c", "12", t0.Add(time.Second), false), "same version: already emitted")
	assert.True(t, r.emitAfterRelist("c", "ns/c", "15", t0.Add(2*time.Second), false), "patched during the gap")
	assert.False(t, r.emitAfterRelist("a", "ns/a", "10", t0, false), "forgotten by the LRU, before the watermark")
	assert.True(t, r.emitAfterRelist("d", "ns/d", "13", t0.Add(time.Second), false), "new at the watermark second")
	assert.True(t, r.emitAfterRelist("e", "ns/e", "14", t0.Add(3*time.Second), false), "new after the watermark")
	assert.False(t, r.emitAfterRelist("f", "ns/f", "9", t0, false), "older than everything emitted")
}

func TestResumeCheckpointKeepsTheWatermarkSet(t *testing.T) {
	r := newCheckpoint(16)
	r.ResourceVersion = "42"
	r.emitted("a", "40", t0)
	r.emitted("b", "41", t0)
	b, err := r.marshal()
	require.NoError(t, err)

	// After a restart the LRU is empty; what was emitted at the watermark
	// second is still known, so a 410 relist does not emit it again.
	back := newCheckpoint(16)
	require.NoError(t, back.unmarshal(b))
	assert.Equal(t, "42", back.ResourceVersion)
	assert.True(t, back.Watermark.Equal(t0))
	assert.False(t, back.emitAfterRelist("a", "ns/a", "40", t0, false))
	assert.False(t, back.emitAfterRelist("b", "ns/b", "41", t0, false))
	assert.True(t, back.emitAfterRelist("b", "ns/b", "43", t0, false), "patched while stopped")
	assert.True(t, back.emitAfterRelist("c", "ns/c", "44", t0, false), "new in the watermark second")

	require.Error(t, back.unmarshal([]byte("{not json")))
}

func TestResumeWatermarkSetIsBounded(t *testing.T) {
	r := newCheckpoint(1)
	for i := range maxAtWatermark + 100 {
		r.emitted(string(rune('a'+i%26))+string(rune(i)), "1", t0)
	}
	assert.Len(t, r.AtWatermark, maxAtWatermark)
}

// A relist judges every page against the watermark from before it: an
// object on a later page that changed during the gap, before the newest
// object of an earlier page, is still emitted.
func TestResumeRelistJudgesPagesAgainstTheOldWatermark(t *testing.T) {
	r := newCheckpoint(1) // the LRU forgets: only the watermark decides
	r.emitted("old", "1", t0)
	r.ResourceVersion = "1"

	r.beginRelist()
	require.True(t, r.emitAfterRelist("page1", "ns/page1", "5", t0.Add(200*time.Second), false))
	r.emitted("page1", "5", t0.Add(200*time.Second))
	assert.True(t, r.Watermark.Equal(t0), "the watermark waits for the last page")
	assert.True(t, r.emitAfterRelist("page4", "ns/page4", "4", t0.Add(100*time.Second), false), "changed during the gap, on a later page")
	r.emitted("page4", "4", t0.Add(100*time.Second))
	r.endRelist("9")

	assert.Equal(t, "9", r.ResourceVersion)
	assert.True(t, r.Watermark.Equal(t0.Add(200*time.Second)))
	assert.Nil(t, r.Relist)
	assert.False(t, r.emitAfterRelist("page1", "ns/page1", "5", t0.Add(200*time.Second), false), "in the watermark's second")
}

// A relist that fails half way and is saved goes on after a restart: what
// its attempt judged is not emitted again unless written since the
// attempt listed, what it had not reached is judged against the
// checkpoint.
func TestResumeRelistInterruptedGoesOnAfterRestart(t *testing.T) {
	r := newCheckpoint(16)
	r.ResourceVersion = "1"
	r.emitted("old", "1", t0)
	r.beginRelist()
	r.relistPage("10", true)
	r.emitted("page1", "5", t0.Add(200*time.Second))
	r.reach("ns/page1", "10") // page 1 ended at page1
	b, err := r.marshal()
	require.NoError(t, err)

	back := newCheckpoint(16)
	require.NoError(t, back.unmarshal(b))
	require.NotNil(t, back.Relist)
	assert.True(t, back.started())
	back.beginRelist()
	assert.False(t, back.emitAfterRelist("page1", "ns/page1", "5", t0.Add(200*time.Second), false), "emitted before the failure")
	assert.True(t, back.emitAfterRelist("page1", "ns/page1", "11", t0.Add(300*time.Second), false), "changed again since")
	assert.False(t, back.emitAfterRelist("a", "ns/a", "1", t0, false), "on page 1, unchanged since the checkpoint")
	assert.True(t, back.emitAfterRelist("page4", "ns/page4", "4", t0.Add(100*time.Second), false), "not reached before the failure")
	assert.False(t, back.emitAfterRelist("zz", "ns/zz", "1", t0, false), "not reached, emitted before the 410")

	// A first list (no resourceVersion yet) interrupted goes on the same way.
	fresh := newCheckpoint(16)
	fresh.beginRelist()
	fresh.relistPage("3", true)
	fresh.emitted("a", "2", t0)
	fresh.reach("ns/a", "3")
	assert.True(t, fresh.started(), "saved although it has no resourceVersion yet")
	assert.False(t, fresh.emitAfterRelist("a", "ns/a", "2", t0, true))
	assert.True(t, fresh.emitAfterRelist("a", "ns/a", "4", t0, true), "changed since the attempt listed")
	assert.True(t, fresh.emitAfterRelist("b", "ns/b", "3", t0.Add(-time.Hour), true), "a first list emits every object once")
}

// Attempts of one relist that get less far than the one before are kept
// together: each object is judged as of the latest attempt that reached
// it; an attempt that gets further replaces those it passed.
func TestResumeRelistAttemptsThatFallShort(t *testing.T) {
	r := newCheckpoint(1)
	r.ResourceVersion = "100"
	r.beginRelist()
	r.relistPage("200", true)
	r.reach("ns/d", "200")
	r.reach("ns/m", "200") // its next page
	r.relistPage("300", true)
	r.reach("ns/f", "300") // the next attempt fails after one page
	assert.Equal(t, []reached{{"ns/f", "300"}, {"ns/m", "200"}}, r.Relist.Reached)

	assert.False(t, r.emitAfterRelist("c", "ns/c", "250", t0, false), "judged by the second attempt")
	assert.True(t, r.emitAfterRelist("c", "ns/c", "301", t0, false), "written after the second attempt listed")
	assert.False(t, r.emitAfterRelist("f", "ns/f", "300", t0, false), "the second attempt's last key")
	assert.False(t, r.emitAfterRelist("h", "ns/h", "150", t0, false), "judged by the first attempt")
	assert.True(t, r.emitAfterRelist("h", "ns/h", "250", t0, false), "written after the first attempt listed; the second did not reach it")
	assert.True(t, r.emitAfterRelist("x", "ns/x", "150", t0, false), "no attempt reached it, written after the checkpoint")
	assert.False(t, r.emitAfterRelist("x", "ns/x", "90", t0, false), "no attempt reached it, written before the checkpoint")

	r.relistPage("400", true)
	r.reach("ns/p", "400")
	assert.Equal(t, []reached{{"ns/p", "400"}}, r.Relist.Reached, "the third attempt got past both")
	assert.False(t, r.emitAfterRelist("h", "ns/h", "350", t0, false))

	r.endRelist("400")
	assert.Nil(t, r.Relist)
	assert.Equal(t, "400", r.ResourceVersion)
}

// Past maxRelistReached attempts, each less far than the one before, the
// progress of the next is not kept: what it emitted may be emitted again,
// nothing is skipped.
func TestResumeRelistAttemptsAreBounded(t *testing.T) {
	r := newCheckpoint(1)
	r.ResourceVersion = "100"
	r.beginRelist()
	for i := range maxRelistReached + 5 {
		rv := strconv.Itoa(200 + i)
		r.relistPage(rv, true)
		r.reach(fmt.Sprintf("ns/k%03d", 500-i), rv)
	}
	require.Len(t, r.Relist.Reached, maxRelistReached)
	kept := strconv.Itoa(200 + maxRelistReached - 1)
	assert.Equal(t, reached{fmt.Sprintf("ns/k%03d", 500-maxRelistReached+1), kept}, r.Relist.Reached[0])
	assert.False(t, r.emitAfterRelist("a", "ns/a", kept, t0, false), "judged by the last attempt kept")
	assert.True(t, r.emitAfterRelist("a", "ns/a", strconv.Itoa(200+maxRelistReached), t0, false),
		"judged by an attempt not kept: emitted again")
}

// Where a page does not come in key order, or lists at a resourceVersion
// that is not an integer, positions say nothing: the relist remembers what
// it emitted by object instead, up to maxRelistEmitted.
func TestResumeRelistWithoutPositionsRemembersObjects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rv      string
		ordered bool
	}{{"out of order", "10", false}, {"opaque version", "opaque-10", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newCheckpoint(1)
			r.ResourceVersion = "1"
			r.beginRelist()
			r.relistPage("5", true)
			r.reach("ns/m", "5")
			r.relistPage(tc.rv, tc.ordered)
			assert.True(t, r.Relist.ByObject)
			assert.Empty(t, r.Relist.Reached, "no position is trusted")
			r.emitted("b", "4", t0)
			r.reach("ns/z", tc.rv)
			assert.Empty(t, r.Relist.Reached)
			assert.Equal(t, map[string]string{"b": "4"}, r.Relist.Emitted)
			assert.False(t, r.emitAfterRelist("b", "ns/b", "4", t0, false), "emitted")
			assert.True(t, r.emitAfterRelist("c", "ns/c", "3", t0, false), "judged once, but positions are not trusted")
			r.relistPage("20", true)
			assert.True(t, r.Relist.ByObject, "until the relist completes")
		})
	}
}

// core/v1 lastTimestamp has whole seconds, eventTime and series times
// microseconds: an object whose second-precision time falls in the
// watermark's second is emitted unless it was emitted in that second.
func TestResumeWatermarkComparesSeconds(t *testing.T) {
	r := newCheckpoint(1)
	r.emitted("micro", "1", t0.Add(500*time.Millisecond))
	r.emitted("x", "2", t0.Add(-time.Hour)) // pushes "micro" out of the LRU

	assert.True(t, r.emitAfterRelist("legacy", "ns/legacy", "3", t0, false), "occurred after 12:00:00.5, reads 12:00:00")
	assert.False(t, r.emitAfterRelist("micro", "ns/micro", "1", t0.Add(500*time.Millisecond), false), "emitted in that second")
	assert.False(t, r.emitAfterRelist("older", "ns/older", "4", t0.Add(-time.Second), false))

	r.emitted("legacy", "3", t0)
	assert.True(t, r.Watermark.Equal(t0.Add(500*time.Millisecond)), "an earlier time does not move the watermark back")
	assert.Equal(t, map[string]string{"micro": "1", "legacy": "3"}, r.AtWatermark)
}

func TestResumeRelistProgressIsBounded(t *testing.T) {
	r := newCheckpoint(1)
	r.beginRelist()
	r.relistPage("1", true)
	r.emitted("by-position", "1", t0)
	assert.Empty(t, r.Relist.Emitted, "where positions say what was judged, no object is remembered")
	r.relistPage("1", false)
	for i := range maxRelistEmitted + 100 {
		r.emitted(fmt.Sprintf("uid-%d", i), "1", t0.Add(time.Duration(i)*time.Millisecond))
	}
	assert.Len(t, r.Relist.Emitted, maxRelistEmitted)
	assert.LessOrEqual(t, len(r.Relist.AtWatermark), maxAtWatermark)
	r.endRelist("2")
	assert.True(t, r.Watermark.Equal(t0.Add(time.Duration(maxRelistEmitted+99)*time.Millisecond)))
	assert.LessOrEqual(t, len(r.AtWatermark), maxAtWatermark)
}

// Where the server's resourceVersions are integers, a relist judges an
// object by its version against the checkpoint's, not by its time: an
// Event written after the checkpoint with an older time is emitted, one
// written before it with a later time is not. Elsewhere time decides.
func TestResumeComparesResourceVersionsNotTimes(t *testing.T) {
	r := newCheckpoint(1)
	r.emitted("f", "100", t0)
	r.ResourceVersion = "100"

	assert.True(t, r.emitAfterRelist("e", "ns/e", "120", t0.Add(-time.Minute), false), "written after the checkpoint, an older time")
	assert.False(t, r.emitAfterRelist("g", "ns/g", "99", t0.Add(time.Hour), false), "written before the checkpoint")
	assert.False(t, r.emitAfterRelist("f", "ns/f", "100", t0, false), "the version emitted")

	r.ResourceVersion = "opaque-100"
	assert.False(t, r.emitAfterRelist("e", "ns/e", "120", t0.Add(-time.Minute), false), "not comparable: before the watermark")
	assert.True(t, r.emitAfterRelist("g", "ns/g", "99", t0.Add(time.Hour), false), "not comparable: after the watermark")
}

// A first start with initial: none saves where the server was: a later
// relist emits nothing that was there, by version, or by time where
// versions are not comparable.
func TestResumeStartAtSkipsWhatWasThere(t *testing.T) {
	r := newCheckpoint(16)
	r.startAt("50", t0)
	assert.False(t, r.emitAfterRelist("old", "ns/old", "40", t0.Add(-time.Hour), false))
	assert.True(t, r.emitAfterRelist("new", "ns/new", "60", t0.Add(-time.Hour), false), "written after the start")

	r.startAt("opaque", t0)
	assert.False(t, r.emitAfterRelist("old", "ns/old", "x", t0.Add(-time.Hour), false))
	assert.True(t, r.emitAfterRelist("new", "ns/new", "y", t0.Add(time.Second), false))
}
