package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// checkpoint is what one watch needs to go on after a restart or a 410 without a
// gap and without emitting an occurrence twice, in constant memory:
//
//   - the resourceVersion it reached: every change the server ordered at or
//     before it has been emitted (or, at a first start with initial: none,
//     was there before the start);
//   - the latest occurrence time it emitted (the watermark), and the
//     versions of the objects whose latest occurrence is in the watermark's
//     second;
//   - while a relist is under way, how far its attempts got (a relist
//     that fails half way goes on from there, after a restart too);
//   - in memory only, the version it last emitted of the most recent objects.
//
// After a 410, an object is emitted when the server changed it after the
// checkpoint: its resourceVersion is greater than the checkpoint's. The API
// server sets both (for etcd-backed storage, the etcd revision of the write
// and of the list or watch position); they are integers ordered in the
// order of the writes of one resource, which conformant clusters guarantee
// and k8s.io/apimachinery's resourceversion.CompareResourceVersion reads.
// The emitter's clock plays no part: client-go's tools/events writes a
// series' later counts minutes after they occurred, with a lastObservedTime
// older than Events written in between.
//
// Where either version is not such an integer (a server that does not
// guarantee comparable versions), the receiver falls back to time: an
// object is emitted when its version differs from the one emitted, or, for
// an object not remembered, when its latest occurrence is in or after the
// watermark's second (and it is not among those emitted in that second).
// Seconds, not instants: core/v1 lastTimestamp is cut to the second while
// eventTime and series times keep microseconds, so an Event that occurred
// after a watermark of 12:00:00.5 can read 12:00:00. That fallback misses an
// occurrence written with a time before the watermark.
//
// A relist compares every page with the checkpoint from before it began and
// moves it only when the last page is in: a list comes in namespace/name
// order, not in time order, so a watermark moved by page 1 would hide what
// changed on page 2 during the gap.
//
// A relist that fails part way and starts again must not emit again what
// it emitted, however many objects that was. It needs no set of them: a
// list comes in the order of its storage keys (namespace/name; a continue
// token is the key the page before ended at) and reads every page at its
// first page's resourceVersion. So once an attempt listing at version V
// has judged its pages up to key K, every object at a key up to K was
// judged in its version as of V: an object there whose resourceVersion is
// not after V is done, one written after V is new to the relist. That is
// one (K, V) per attempt, kept only while a later attempt has not got as
// far (see relistProgress.Reached).
type checkpoint struct {
	ResourceVersion string `json:"resourceVersion"`
	mark
	// Relist is the relist under way; nil when none is.
	Relist *relistProgress `json:"relist,omitempty"`

	recent *simplelru.LRU[string, string] // uid -> resourceVersion emitted
}

// mark is a watermark and what was emitted in its second.
type mark struct {
	Watermark   time.Time         `json:"watermark"`
	AtWatermark map[string]string `json:"atWatermark,omitempty"` // uid -> resourceVersion
}

// relistProgress is what a relist did before its last page: the mark it
// will move the watermark to, and how far its attempts got.
type relistProgress struct {
	mark
	// Reached holds, per attempt still needed, the list key its pages got
	// to and the resourceVersion it listed at: keys ascending, versions
	// descending (a later attempt lists at a later version, and replaces
	// the ones it got as far as). An object was judged as of the version
	// of the first entry whose key is not before its own; past the last
	// entry, no attempt reached it.
	Reached []reached `json:"reached,omitempty"`
	// ByObject: a page of this relist did not come in key order, or was
	// listed at a resourceVersion that is not an integer, so positions say
	// nothing: Reached stays empty and Emitted keeps what was emitted, up
	// to maxRelistEmitted, until the relist completes.
	ByObject bool `json:"byObject,omitempty"`
	// Emitted: uid -> resourceVersion emitted, of the objects positions
	// cannot vouch for (ByObject, or a version that is not an integer).
	Emitted map[string]string `json:"emitted,omitempty"`
}

// reached is how far one attempt of a relist got: every object at a list
// key up to Key was judged in its version as of ResourceVersion.
type reached struct {
	Key             string `json:"key"`
	ResourceVersion string `json:"resourceVersion"`
}

// maxAtWatermark bounds the set kept in the watermark's second; past it
// the oldest are forgotten, which may re-emit one of them after a 410,
// never skip one.
const maxAtWatermark = 1024

// maxRelistEmitted bounds what a relist under way remembers it emitted by
// object, which it does only where positions say nothing (ByObject,
// versions that are not integers); past it, a relist that fails and starts
// again may re-emit what it emitted beyond the bound, never skip anything.
const maxRelistEmitted = 4096

// maxRelistReached bounds the attempts a relist keeps: one is added only
// while an attempt has got less far than every kept one (one that gets as
// far replaces them), so reaching the bound takes that many attempts each
// failing earlier in the list than all those kept. Past it, an attempt's
// progress is not kept until it gets as far as the nearest kept one: what
// it emitted because it was written after that one listed may be emitted
// again; nothing is skipped.
const maxRelistReached = 32

func newCheckpoint(recentSize int) *checkpoint {
	recent, _ := simplelru.NewLRU[string, string](recentSize, nil)
	return &checkpoint{recent: recent}
}

// add records that version rv of object uid, whose latest occurrence is
// latest, went out.
func (m *mark) add(uid, rv string, latest time.Time) {
	sec, cur := latest.Truncate(time.Second), m.Watermark.Truncate(time.Second)
	switch {
	case sec.After(cur) || m.AtWatermark == nil && sec.Equal(cur):
		m.AtWatermark = map[string]string{uid: rv}
	case sec.Equal(cur) && len(m.AtWatermark) < maxAtWatermark:
		m.AtWatermark[uid] = rv
	}
	if latest.After(m.Watermark) {
		m.Watermark = latest
	}
}

// merge moves m on to o where o is later.
func (m *mark) merge(o mark) {
	for uid, rv := range o.AtWatermark {
		// Any time in o's second gives the same decision as o's own.
		m.add(uid, rv, o.Watermark.Truncate(time.Second))
	}
	if o.Watermark.After(m.Watermark) {
		m.Watermark = o.Watermark
	}
}

// emitted records that the version rv of object uid, whose latest
// occurrence is latest, went out.
func (r *checkpoint) emitted(uid, rv string, latest time.Time) {
	r.recent.Add(uid, rv)
	if r.Relist == nil {
		r.mark.add(uid, rv, latest)
		return
	}
	r.Relist.add(uid, rv, latest)
	if (r.Relist.ByObject || !integerVersion(rv)) && len(r.Relist.Emitted) < maxRelistEmitted {
		r.Relist.Emitted[uid] = rv
	}
}

// relistPage is called before a page of a relist's attempt that lists at
// resourceVersion rv is judged; ordered: the page's keys ascend, from
// after the key the attempt's previous page ended at.
func (r *checkpoint) relistPage(rv string, ordered bool) {
	if !ordered || !integerVersion(rv) {
		r.Relist.ByObject, r.Relist.Reached = true, nil
	}
}

// reach records that the relist's attempt listing at resourceVersion rv
// judged, and emitted what it had to of, every object up to list key key.
func (r *checkpoint) reach(key, rv string) {
	p := r.Relist
	if p.ByObject {
		return
	}
	// The attempt listed after every kept one: it replaces those whose key
	// it got to.
	i, found := p.at(key)
	if found {
		i++
	}
	if i == 0 && len(p.Reached) >= maxRelistReached {
		return // see maxRelistReached
	}
	p.Reached = append([]reached{{Key: key, ResourceVersion: rv}}, p.Reached[i:]...)
}

// at is the index of the first entry of Reached whose key is not before
// key, and whether it is key's.
func (p *relistProgress) at(key string) (int, bool) {
	return slices.BinarySearchFunc(p.Reached, key, func(e reached, k string) int { return strings.Compare(e.Key, k) })
}

// judgedAt is the resourceVersion as of which the relist judged the object
// at list key key; false: no attempt reached it.
func (p *relistProgress) judgedAt(key string) (string, bool) {
	if i, _ := p.at(key); i < len(p.Reached) {
		return p.Reached[i].ResourceVersion, true
	}
	return "", false
}

// integerVersion reports whether rv is a resourceVersion that orders
// writes (an integer, as conformant servers write them).
func integerVersion(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// beginRelist starts a relist, or goes on with the one under way.
func (r *checkpoint) beginRelist() {
	if r.Relist == nil {
		r.Relist = &relistProgress{Emitted: map[string]string{}}
	}
	if r.Relist.Emitted == nil {
		r.Relist.Emitted = map[string]string{}
	}
}

// endRelist completes a relist whose list was at resourceVersion rv.
func (r *checkpoint) endRelist(rv string) {
	if r.Relist != nil {
		r.mark.merge(r.Relist.mark)
	}
	r.Relist, r.ResourceVersion = nil, rv
}

// emitAfterRelist decides for one listed object, at list key key; fresh:
// a first list, which emits everything not emitted yet.
func (r *checkpoint) emitAfterRelist(uid, key, rv string, latest time.Time, fresh bool) bool {
	if r.Relist != nil {
		if prev, ok := r.Relist.Emitted[uid]; ok {
			return prev != rv
		}
		if at, ok := r.Relist.judgedAt(key); ok {
			if order, err := resourceversion.CompareResourceVersion(rv, at); err == nil {
				return order > 0 // written after an attempt of this relist judged it
			}
		}
	}
	if fresh {
		return true
	}
	if order, err := resourceversion.CompareResourceVersion(rv, r.ResourceVersion); err == nil {
		return order > 0 // written after the point the watch had reached
	}
	if prev, ok := r.recent.Get(uid); ok {
		return prev != rv
	}
	if prev, ok := r.AtWatermark[uid]; ok {
		return prev != rv
	}
	return !latest.Before(r.Watermark.Truncate(time.Second))
}

// startAt begins a watch with initial: none at the list's resourceVersion
// rv, at now: what the server holds then is not to be emitted. The
// watermark, now, serves only the time fallback (without it, a relist
// there would emit every stored Event).
func (r *checkpoint) startAt(rv string, now time.Time) {
	r.ResourceVersion, r.Watermark = rv, now
}

// started reports whether there is anything to save: a place to watch
// from, or a relist under way.
func (r *checkpoint) started() bool { return r.ResourceVersion != "" || r.Relist != nil }

func (r *checkpoint) marshal() ([]byte, error) { return json.Marshal(r) }

func (r *checkpoint) unmarshal(b []byte) error {
	if err := json.Unmarshal(b, r); err != nil {
		return fmt.Errorf("checkpoint %q: %w", b, err)
	}
	return nil
}
