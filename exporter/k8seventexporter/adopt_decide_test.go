package k8seventexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The pure decisions of adopt_open_series, without an API server.

func TestSlotKeyIsStableAndFitsAnAnnotation(t *testing.T) {
	t.Parallel()
	a := slotKey("otelcol-tier2-0", "web-1.17a2b3c4d5e6f7a8deadbeef")
	assert.Equal(t, a, slotKey("otelcol-tier2-0", "web-1.17a2b3c4d5e6f7a8deadbeef"), "the same after a restart")
	assert.NotEqual(t, a, slotKey("otelcol-tier2-3", "web-1.17a2b3c4d5e6f7a8deadbeef"), "another writer, another slot")
	assert.NotEqual(t, a, slotKey("otelcol-tier2-0", "web-1.17a2b3c4d5e6f7a8deadbeee"), "another series, another slot")
	assert.Empty(t, validation.IsQualifiedName(a), "a valid annotation key")
}

func TestStateOfIgnoresBadSlots(t *testing.T) {
	t.Parallel()
	meta := &metav1.ObjectMeta{Name: "x", ResourceVersion: "7", Annotations: map[string]string{
		slotPrefix + "a": "3", slotPrefix + "b": "-2", slotPrefix + "c": "many", "other": "1",
	}}
	o := stateOf(meta, &k8sevent.Event{SeriesCount: 9})
	assert.Equal(t, map[string]int64{slotPrefix + "a": 3}, o.slots)
	assert.Equal(t, int64(9), o.total)
	assert.Equal(t, "7", o.rv)
}

func TestMineAndPlan(t *testing.T) {
	t.Parallel()
	at := time.Unix(1000, 0)
	o := objState{name: "web.a", rv: "5", total: 10, last: at, slots: map[string]int64{"s.d": 4}}
	// The object's creator wrote it before slots: all but the others' is its.
	assert.Equal(t, int64(6), o.mine("s.a", true))
	assert.Equal(t, int64(0), o.mine("s.x", false), "a series new to the object has added nothing")
	assert.Equal(t, int64(4), o.mine("s.d", false))

	p, ok := plan(o, "s.d", false, 7, at.Add(-time.Second))
	assert.True(t, ok)
	assert.Equal(t, sharedPatch{name: "web.a", rv: "5", slot: "s.d", count: 7, total: 13, last: at}, p,
		"the count moves by the slot's difference; an older record leaves the latest occurrence and note")
	p, ok = plan(o, "s.a", true, 8, at.Add(time.Second))
	assert.True(t, ok)
	assert.Equal(t, int64(12), p.total)
	assert.True(t, p.latest)
	assert.Equal(t, at.Add(time.Second), p.last)
	_, ok = plan(o, "s.d", false, 4, at)
	assert.False(t, ok, "the slot already holds it (a retry after a lost answer): nothing to write")
	_, ok = plan(o, "s.d", false, 3, at)
	assert.False(t, ok, "never lower")
	low := objState{name: "web.a", total: 1, slots: map[string]int64{"s.d": 5}}
	p, _ = plan(low, "s.d", false, 6, at)
	assert.Equal(t, int64(6), p.total, "never below the slot's own count, whatever the object states")
}

func TestPickTarget(t *testing.T) {
	t.Parallel()
	first := time.Unix(10_000, 0)
	window := 6 * time.Minute
	own := objState{name: "web.own", last: first.Add(-time.Hour)}
	held := objState{name: "web.held", last: first.Add(-time.Hour), slots: map[string]int64{"slot": 2}}
	open := objState{name: "web.open", last: first.Add(-window + time.Nanosecond)}
	later := objState{name: "web.later", last: first.Add(-time.Minute)}
	ended := objState{name: "web.ended", last: first.Add(-window)}

	o, found := pickTarget([]objState{later, own, held}, "web.own", "slot", first, window, 100)
	assert.True(t, found)
	assert.Equal(t, "web.own", o.name, "its own object first, open or not")
	o, _ = pickTarget([]objState{later, held}, "web.own", "slot", first, window, 100)
	assert.Equal(t, "web.held", o.name, "then one it wrote to before")
	o, _ = pickTarget([]objState{open, later, ended}, "web.own", "slot", first, window, 100)
	assert.Equal(t, "web.later", o.name, "then the open one observed last")
	o, _ = pickTarget([]objState{open, ended}, "web.own", "slot", first, window, 100)
	assert.Equal(t, "web.open", o.name, "open: last observed less than the window before")
	_, found = pickTarget([]objState{ended}, "web.own", "slot", first, window, 100)
	assert.False(t, found, "an ended series is left alone")
	_, found = pickTarget(nil, "web.own", "slot", first, window, 100)
	assert.False(t, found)

	full := objState{name: "web.full", last: first.Add(-time.Second), slots: map[string]int64{"a": 1, "b": 1}}
	o, _ = pickTarget([]objState{open, full}, "web.own", "slot", first, window, 2)
	assert.Equal(t, "web.open", o.name, "an open object with no room for another slot is passed over")
	_, found = pickTarget([]objState{full}, "web.own", "slot", first, window, 2)
	assert.False(t, found, "only full ones: a new object")
	o, _ = pickTarget([]objState{full}, "web.own", "a", first, window, 2)
	assert.Equal(t, "web.full", o.name, "a series with a slot there goes on writing there")
	assert.False(t, full.full("a", false, 2), "its own slot")
	assert.True(t, full.full("c", false, 2))
	assert.False(t, full.full("c", true, 2), "the object's own series is never refused")
}

func TestSameSeries(t *testing.T) {
	t.Parallel()
	ev := record("web-1.a", k8sevent.StateOngoing, 3, t0)
	ev.ReportingController = "k8sevents.io/otlp"
	for _, c := range []struct {
		name   string
		change func(*k8sevent.Event)
		same   bool
	}{
		{"another instance", func(e *k8sevent.Event) { e.ReportingInstance = "tier2-3" }, true},
		{"another name and count", func(e *k8sevent.Event) { e.Name, e.SeriesCount = "web-1.d", 9 }, true},
		{"another controller", func(e *k8sevent.Event) { e.ReportingController = "kubelet" }, false},
		{"another type", func(e *k8sevent.Event) { e.Type = k8sevent.TypeNormal }, false},
		{"another action", func(e *k8sevent.Event) { e.Action = "Pulling" }, false},
		{"another container", func(e *k8sevent.Event) { e.Regarding.FieldPath = "spec.containers{b}" }, false},
		{"another related object", func(e *k8sevent.Event) { e.Related = k8sevent.ObjectRef{Kind: "Node", Name: "n"} }, false},
		{"another pod uid", func(e *k8sevent.Event) { e.Regarding.UID = "uid-other" }, false},
	} {
		stored := ev
		c.change(&stored)
		assert.Equal(t, c.same, sameSeries(&ev, &stored, "", false), c.name)
		// keep_record_instance: the instance names the client the series
		// is of, so another instance is another series.
		assert.Equal(t, c.same && c.name != "another instance", sameSeries(&ev, &stored, "", true), c.name+", by sender")
	}
	ev.Cluster = k8sevent.Cluster{Name: "east"}
	assert.True(t, sameSeries(&ev, &ev, "east", false))
	assert.False(t, sameSeries(&ev, &ev, "west", false), "another source cluster")
}
