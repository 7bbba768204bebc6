package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// resume is what one watch needs to go on after a restart or a 410 without a
// gap and without emitting an occurrence twice, in constant memory:
//
//   - the resourceVersion it reached (opaque: only handed back to the API
//     server, never compared or parsed);
//   - the latest occurrence time it emitted (the watermark), and the
//     versions of the objects whose latest occurrence is exactly that time;
//   - in memory only, the version it last emitted of the most recent objects.
//
// After a relist, an object is emitted when its version differs from the
// one emitted, or, for an object not remembered, when its latest occurrence
// is after the watermark (or at it and not among those emitted at it).
// Events change only by new occurrences, which move their latest time on.
type resume struct {
	ResourceVersion string            `json:"resourceVersion"`
	Watermark       time.Time         `json:"watermark"`
	AtWatermark     map[string]string `json:"atWatermark,omitempty"` // uid -> resourceVersion

	recent *simplelru.LRU[string, string] // uid -> resourceVersion emitted
}

// maxAtWatermark bounds the set kept at the watermark time (one second of
// core/v1 timestamps); past it the oldest are forgotten, which may re-emit
// one of them after a 410, never skip one.
const maxAtWatermark = 1024

func newResume(recentSize int) *resume {
	recent, _ := simplelru.NewLRU[string, string](recentSize, nil)
	return &resume{recent: recent}
}

// emitted records that the version rv of object uid, whose latest
// occurrence is latest, went out.
func (r *resume) emitted(uid, rv string, latest time.Time) {
	r.recent.Add(uid, rv)
	switch {
	case latest.After(r.Watermark):
		r.Watermark = latest
		r.AtWatermark = map[string]string{uid: rv}
	case latest.Equal(r.Watermark) && len(r.AtWatermark) < maxAtWatermark:
		if r.AtWatermark == nil {
			r.AtWatermark = map[string]string{}
		}
		r.AtWatermark[uid] = rv
	}
}

// emitAfterRelist decides for one listed object.
func (r *resume) emitAfterRelist(uid, rv string, latest time.Time) bool {
	if prev, ok := r.recent.Get(uid); ok {
		return prev != rv
	}
	if prev, ok := r.AtWatermark[uid]; ok {
		return prev != rv
	}
	return !latest.Before(r.Watermark)
}

func (r *resume) marshal() ([]byte, error) { return json.Marshal(r) }

func (r *resume) unmarshal(b []byte) error {
	if err := json.Unmarshal(b, r); err != nil {
		return fmt.Errorf("checkpoint %q: %w", b, err)
	}
	return nil
}
