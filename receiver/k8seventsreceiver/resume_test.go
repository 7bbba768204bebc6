package k8seventsreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestResumeAfterRelist(t *testing.T) {
	r := newResume(2)
	r.emitted("a", "10", t0)
	r.emitted("b", "11", t0.Add(time.Second))
	r.emitted("c", "12", t0.Add(time.Second))

	assert.False(t, r.emitAfterRelist("c", "12", t0.Add(time.Second)), "same version: already emitted")
	assert.True(t, r.emitAfterRelist("c", "15", t0.Add(2*time.Second)), "patched during the gap")
	assert.False(t, r.emitAfterRelist("a", "10", t0), "forgotten by the LRU, before the watermark")
	assert.True(t, r.emitAfterRelist("d", "13", t0.Add(time.Second)), "new at the watermark second")
	assert.True(t, r.emitAfterRelist("e", "14", t0.Add(3*time.Second)), "new after the watermark")
	assert.False(t, r.emitAfterRelist("f", "9", t0), "older than everything emitted")
}

func TestResumeCheckpointKeepsTheWatermarkSet(t *testing.T) {
	r := newResume(16)
	r.ResourceVersion = "42"
	r.emitted("a", "40", t0)
	r.emitted("b", "41", t0)
	b, err := r.marshal()
	require.NoError(t, err)

	// After a restart the LRU is empty; what was emitted at the watermark
	// second is still known, so a 410 relist does not emit it again.
	back := newResume(16)
	require.NoError(t, back.unmarshal(b))
	assert.Equal(t, "42", back.ResourceVersion)
	assert.True(t, back.Watermark.Equal(t0))
	assert.False(t, back.emitAfterRelist("a", "40", t0))
	assert.False(t, back.emitAfterRelist("b", "41", t0))
	assert.True(t, back.emitAfterRelist("b", "43", t0), "patched while stopped")
	assert.True(t, back.emitAfterRelist("c", "44", t0), "new in the watermark second")

	require.Error(t, back.unmarshal([]byte("{not json")))
}

func TestResumeWatermarkSetIsBounded(t *testing.T) {
	r := newResume(1)
	for i := range maxAtWatermark + 100 {
		r.emitted(string(rune('a'+i%26))+string(rune(i)), "1", t0)
	}
	assert.Len(t, r.AtWatermark, maxAtWatermark)
}
