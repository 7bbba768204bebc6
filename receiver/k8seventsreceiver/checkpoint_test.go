package k8seventsreceiver

import (
	"fmt"
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

	assert.False(t, r.emitAfterRelist("c", "12", t0.Add(time.Second), false), "same version: already emitted")
	assert.True(t, r.emitAfterRelist("c", "15", t0.Add(2*time.Second), false), "patched during the gap")
	assert.False(t, r.emitAfterRelist("a", "10", t0, false), "forgotten by the LRU, before the watermark")
	assert.True(t, r.emitAfterRelist("d", "13", t0.Add(time.Second), false), "new at the watermark second")
	assert.True(t, r.emitAfterRelist("e", "14", t0.Add(3*time.Second), false), "new after the watermark")
	assert.False(t, r.emitAfterRelist("f", "9", t0, false), "older than everything emitted")
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
	assert.False(t, back.emitAfterRelist("a", "40", t0, false))
	assert.False(t, back.emitAfterRelist("b", "41", t0, false))
	assert.True(t, back.emitAfterRelist("b", "43", t0, false), "patched while stopped")
	assert.True(t, back.emitAfterRelist("c", "44", t0, false), "new in the watermark second")

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
	require.True(t, r.emitAfterRelist("page1", "5", t0.Add(200*time.Second), false))
	r.emitted("page1", "5", t0.Add(200*time.Second))
	assert.True(t, r.Watermark.Equal(t0), "the watermark waits for the last page")
	assert.True(t, r.emitAfterRelist("page4", "4", t0.Add(100*time.Second), false), "changed during the gap, on a later page")
	r.emitted("page4", "4", t0.Add(100*time.Second))
	r.endRelist("9")

	assert.Equal(t, "9", r.ResourceVersion)
	assert.True(t, r.Watermark.Equal(t0.Add(200*time.Second)))
	assert.Nil(t, r.Relist)
	assert.False(t, r.emitAfterRelist("page1", "5", t0.Add(200*time.Second), false), "in the watermark's second")
}

// A relist that fails half way and is saved goes on after a restart: what
// it emitted is not emitted again, what it had not reached is.
func TestResumeRelistInterruptedGoesOnAfterRestart(t *testing.T) {
	r := newCheckpoint(16)
	r.ResourceVersion = "1"
	r.emitted("old", "1", t0)
	r.beginRelist()
	r.emitted("page1", "5", t0.Add(200*time.Second))
	b, err := r.marshal()
	require.NoError(t, err)

	back := newCheckpoint(16)
	require.NoError(t, back.unmarshal(b))
	require.NotNil(t, back.Relist)
	assert.True(t, back.started())
	back.beginRelist()
	assert.False(t, back.emitAfterRelist("page1", "5", t0.Add(200*time.Second), false), "emitted before the failure")
	assert.True(t, back.emitAfterRelist("page1", "6", t0.Add(300*time.Second), false), "changed again since")
	assert.True(t, back.emitAfterRelist("page4", "4", t0.Add(100*time.Second), false), "not reached before the failure")
	assert.False(t, back.emitAfterRelist("old", "1", t0, false), "emitted before the 410")

	// A first list (no resourceVersion yet) interrupted goes on the same way.
	fresh := newCheckpoint(16)
	fresh.beginRelist()
	fresh.emitted("a", "2", t0)
	assert.True(t, fresh.started(), "saved although it has no resourceVersion yet")
	assert.False(t, fresh.emitAfterRelist("a", "2", t0, true))
	assert.True(t, fresh.emitAfterRelist("b", "3", t0.Add(-time.Hour), true), "a first list emits every object once")
}

// core/v1 lastTimestamp has whole seconds, eventTime and series times
// microseconds: an object whose second-precision time falls in the
// watermark's second is emitted unless it was emitted in that second.
func TestResumeWatermarkComparesSeconds(t *testing.T) {
	r := newCheckpoint(1)
	r.emitted("micro", "1", t0.Add(500*time.Millisecond))
	r.emitted("x", "2", t0.Add(-time.Hour)) // pushes "micro" out of the LRU

	assert.True(t, r.emitAfterRelist("legacy", "3", t0, false), "occurred after 12:00:00.5, reads 12:00:00")
	assert.False(t, r.emitAfterRelist("micro", "1", t0.Add(500*time.Millisecond), false), "emitted in that second")
	assert.False(t, r.emitAfterRelist("older", "4", t0.Add(-time.Second), false))

	r.emitted("legacy", "3", t0)
	assert.True(t, r.Watermark.Equal(t0.Add(500*time.Millisecond)), "an earlier time does not move the watermark back")
	assert.Equal(t, map[string]string{"micro": "1", "legacy": "3"}, r.AtWatermark)
}

func TestResumeRelistProgressIsBounded(t *testing.T) {
	r := newCheckpoint(1)
	r.beginRelist()
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

	assert.True(t, r.emitAfterRelist("e", "120", t0.Add(-time.Minute), false), "written after the checkpoint, an older time")
	assert.False(t, r.emitAfterRelist("g", "99", t0.Add(time.Hour), false), "written before the checkpoint")
	assert.False(t, r.emitAfterRelist("f", "100", t0, false), "the version emitted")

	r.ResourceVersion = "opaque-100"
	assert.False(t, r.emitAfterRelist("e", "120", t0.Add(-time.Minute), false), "not comparable: before the watermark")
	assert.True(t, r.emitAfterRelist("g", "99", t0.Add(time.Hour), false), "not comparable: after the watermark")
}

// A first start with initial: none saves where the server was: a later
// relist emits nothing that was there, by version, or by time where
// versions are not comparable.
func TestResumeStartAtSkipsWhatWasThere(t *testing.T) {
	r := newCheckpoint(16)
	r.startAt("50", t0)
	assert.False(t, r.emitAfterRelist("old", "40", t0.Add(-time.Hour), false))
	assert.True(t, r.emitAfterRelist("new", "60", t0.Add(-time.Hour), false), "written after the start")

	r.startAt("opaque", t0)
	assert.False(t, r.emitAfterRelist("old", "x", t0.Add(-time.Hour), false))
	assert.True(t, r.emitAfterRelist("new", "y", t0.Add(time.Second), false))
}
