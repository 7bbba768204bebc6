package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// adopt_open_series: when the load balancer in front of several exporters
// of one reporting controller moves an object to another of them (a tier-2
// ring change), the new owner's processor starts a series of its own for
// a series the old owner still has open. Instead of creating a second
// object, the new owner writes into the open one. Each series (a writer's
// processor series, named by its record name) keeps its own absolute count
// in an annotation of the object (its slot), and the object's count is
// the sum of the slots (and of what the object counted before it had
// slots). A write replaces its own slot and moves the count by the
// difference, preconditioned on the object's resourceVersion: two writers
// never lose each other's occurrences, a retry after a lost answer finds
// its slot already written, and the count never goes down.

// slotPrefix begins the annotation key of a series' slot.
const slotPrefix = "eventseries.k8sevents.io/count."

// maxConflicts bounds the 409 → read → write rounds of one write; past it
// the write fails (retried by the lanes).
const maxConflicts = 8

// slotKey is the annotation holding the count that series (a record name)
// of writer (this exporter's reporting instance) added to an object: a
// hash, stable across the writer's restarts, that fits an annotation name.
func slotKey(writer, series string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(writer))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(series))
	return fmt.Sprintf("%s%016x", slotPrefix, h.Sum64())
}

// objState is what an Event object holds as far as shared writes care.
type objState struct {
	name, rv string
	total    int64     // the count it states
	last     time.Time // its latest occurrence
	cluster  string    // the name of its source cluster (see sourceClusterName)
	slots    map[string]int64
	series   owner // whose series writes to it, once remembered (adoption.remember)
}

// stateOf reads an object's state; ev is the object read through k8sevent.
// A slot that is not a non-negative integer counts as absent.
func stateOf(meta *metav1.ObjectMeta, ev *k8sevent.Event) objState {
	o := objState{name: meta.Name, rv: meta.ResourceVersion, total: ev.Occurrences(), last: ev.LatestTime(),
		cluster: sourceClusterName(meta.Annotations)}
	for k, v := range meta.Annotations {
		if !strings.HasPrefix(k, slotPrefix) {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			if o.slots == nil {
				o.slots = map[string]int64{}
			}
			o.slots[k] = n
		}
	}
	return o
}

// mine is what slot has added to the object. A series writing to its own
// object (own: the object has the record's name) that has no slot there
// wrote it before slots existed: everything but the other slots is its.
func (o objState) mine(slot string, own bool) int64 {
	if n, ok := o.slots[slot]; ok {
		return n
	}
	if !own {
		return 0
	}
	rest := o.total
	for _, n := range o.slots {
		rest -= n
	}
	return max(rest, 0)
}

// sharedPatch is one series' write to a shared object.
type sharedPatch struct {
	name, rv, slot string
	count, total   int64     // the slot's new value; the object's new count
	last           time.Time // the object's latest occurrence after the write
	latest         bool      // the record carries the latest occurrence: its note is the object's
}

// plan is the write that moves slot from what o holds to count: the count
// moves by the difference, never below count, and the latest occurrence
// never goes back. ok is false when the slot already holds count or more
// (nothing to write).
func plan(o objState, slot string, own bool, count int64, last time.Time) (p sharedPatch, ok bool) {
	mine := o.mine(slot, own)
	if count <= mine {
		return sharedPatch{}, false
	}
	p = sharedPatch{name: o.name, rv: o.rv, slot: slot, count: count, total: max(o.total-mine+count, count), last: o.last, latest: !last.Before(o.last)}
	if p.latest {
		p.last = last
	}
	return p, true
}

// body is the JSON merge patch: the slot and the resourceVersion
// precondition, with the API's own fields.
func (p sharedPatch) body(fields map[string]any) ([]byte, error) {
	fields["metadata"] = map[string]any{"resourceVersion": p.rv, "annotations": map[string]string{p.slot: strconv.FormatInt(p.count, 10)}}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("patch body: %w", err)
	}
	return b, nil
}

// sourceClusterName is the name of the cluster a stored Event was written
// for: its source-cluster annotation, which holds the name, else the uid
// (then "": the cluster had no name).
func sourceClusterName(annotations map[string]string) string {
	c := annotations[k8sevent.AnnotationSourceCluster]
	if c == annotations[k8sevent.AnnotationSourceClusterUID] {
		return ""
	}
	return c
}

// sameSeries says whether a stored object is one of ev's series as the
// processor keys it (client-go's isomorphic key), the reporting instance
// aside unless bySender: who wrote it does not matter, only that this
// controller did; with keep_record_instance the instance names the client
// the series is of, and another client's object is never one of it. The
// cluster is compared by name, as the processor keys it: its uid is
// written once the receiver could read it, and a series that gains it is
// the same series.
func sameSeries(ev, stored *k8sevent.Event, storedCluster string, bySender bool) bool {
	a, b := ev.Regarding, stored.Regarding
	return ownerOf(ev, bySender).matches(ownerOf(stored, bySender)) && ev.Type == stored.Type && ev.Action == stored.Action &&
		a.APIVersion == b.APIVersion && a.FieldPath == b.FieldPath && ev.Related == stored.Related &&
		ev.Cluster.Name == storedCluster
}

// full says whether slot may not be added to o: o already holds
// maxSeries slots and none is slot's. A series writing to its own object
// (own) is never refused: its name is the object's, so it is one series.
// A slot is never folded into the object's count to make room: it is the
// only proof that its series counted there, and a series that writes
// again (a retry after a lost answer, a persistent queue replayed after
// a restart) would find none and count its occurrences twice.
func (o objState) full(slot string, own bool, maxSeries int) bool {
	_, has := o.slots[slot]
	return !own && !has && len(o.slots) >= maxSeries
}

// pickTarget chooses, among objects of ev's series (sameSeries), the one
// its records go to: the object under its own name; else one it wrote to
// before (it holds its slot: a restart forgot the mapping); else the open
// one, last observed less than window before the series' first
// occurrence, the latest if several (a series the processor ended had no
// occurrence for finish_after: with window = finish_after it is never
// reopened), among those with room for its slot (full). found is false
// when none is: a new object.
func pickTarget(cands []objState, name, slot string, first time.Time, window time.Duration, maxSeries int) (o objState, found bool) {
	for _, c := range cands {
		if c.name == name {
			return c, true
		}
	}
	for _, c := range cands {
		if _, ok := c.slots[slot]; ok {
			return c, true
		}
	}
	for _, c := range cands {
		if !c.last.After(first.Add(-window)) || c.full(slot, false, maxSeries) {
			continue
		}
		if !found || c.last.After(o.last) || c.last.Equal(o.last) && c.name < o.name {
			o, found = c, true
		}
	}
	return o, found
}

// adoption is the writer's state for adopt_open_series.
type adoption struct {
	writer    string        // this exporter's reporting instance: its slots' owner
	window    time.Duration // adopt_window
	maxSeries int           // adopt_max_series: slots per object
	mu        sync.Mutex    // guards series; never held across an API call
	series    *simplelru.LRU[string, objState]
}

func newAdoption(writer string, window time.Duration, maxSeries int) *adoption {
	series, _ := simplelru.NewLRU[string, objState](knownNames, nil)
	return &adoption{writer: writer, window: window, maxSeries: maxSeries, series: series}
}

// recall is the object the series (namespace/record name) writes to, as
// last seen.
func (a *adoption) recall(key string) (objState, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.series.Get(key)
}

// remember notes o as the object of the series key, whose records have
// the owner series: a record of another owner under the same name is not
// of this series (see writeShared).
func (a *adoption) remember(key string, series owner, o objState) {
	o.series = series
	a.mu.Lock()
	defer a.mu.Unlock()
	a.series.Add(key, o)
}

func (a *adoption) forget(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.series.Remove(key)
}
