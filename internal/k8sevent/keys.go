package k8sevent

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attribute keys of the log-record contract (the README's table). The codec reads
// each key from the record's attributes first, then the resource's.
const (
	AttrEventName         = "k8s.event.name"
	AttrEventUID          = "k8s.event.uid"
	AttrReason            = "k8s.event.reason"
	AttrAction            = "k8s.event.action"
	AttrNamespace         = "k8s.namespace.name" // of the regarding object
	AttrObjectKind        = "k8s.object.kind"
	AttrObjectName        = "k8s.object.name"
	AttrObjectUID         = "k8s.object.uid"
	AttrObjectAPIVersion  = "k8s.object.api_version"
	AttrObjectFieldPath   = "k8s.object.fieldpath"
	AttrObjectResourceVer = "k8s.object.resource_version"
	AttrSourceComponent   = "k8s.event.source.component"
	// AttrSourceHost is the legacy source host (core/v1 source.host). It
	// was k8s.node.name, as contrib's k8s_events receiver writes it on the
	// resource; that key now names the regarding Node on the resource of
	// emitted records (PutIdentity), and is still read as the source host
	// where a map holds no k8s.event.source.host (contrib, older records
	// and recorders).
	AttrSourceHost          = "k8s.event.source.host"
	AttrNodeName            = "k8s.node.name"
	AttrReportingController = "k8s.event.reporting_controller"
	AttrReportingInstance   = "k8s.event.reporting_instance"
	AttrRelatedKind         = "k8s.event.related.kind"
	AttrRelatedName         = "k8s.event.related.name"
	AttrRelatedNamespace    = "k8s.event.related.namespace"
	AttrRelatedUID          = "k8s.event.related.uid"
	AttrRelatedAPIVersion   = "k8s.event.related.api_version"
	AttrRelatedFieldPath    = "k8s.event.related.fieldpath"
	AttrRelatedResourceVer  = "k8s.event.related.resource_version"
	AttrCount               = "k8s.event.count"
	AttrFirstTimestamp      = "k8s.event.first_timestamp"
	AttrLastTimestamp       = "k8s.event.last_timestamp"
	AttrSeriesCount         = "k8s.event.series.count"
	AttrSeriesLastObserved  = "k8s.event.series.last_observed_time"
	AttrSeriesState         = "k8s.event.series.state"
	AttrAggregated          = "k8s.event.aggregated"
	// AttrNewOccurrences is written by the eventseries processor on every
	// record it emits: the occurrences this record accounts for that the
	// previous record of the same Event object did not (0 for a repeat).
	// Summed over a pipeline's output, it gives the true occurrences.
	AttrNewOccurrences = "k8s.event.occurrences.new"

	// Additions to the contract, so that both APIs round-trip: the Event
	// object's own namespace when it is not the one derived from the
	// regarding object, and events.k8s.io eventTime.
	AttrEventNamespace = "k8s.event.namespace"
	AttrEventTime      = "k8s.event.time"

	// The cluster the Event was recorded in (semantic conventions): on the
	// resource of what the k8sevents receiver emits; the processor keeps
	// two clusters' records apart, the exporter annotates what it writes.
	// k8s.cluster.uid is the uid of the cluster's kube-system namespace.
	AttrClusterName = "k8s.cluster.name"
	AttrClusterUID  = "k8s.cluster.uid"

	// Read only: the contrib k8s_events receiver's creation timestamp, used as
	// the first occurrence when nothing better is present.
	AttrStartTime = "k8s.event.start_time"
)

// EventName is the log record's EventName on every record that carries a
// Kubernetes Event: one low-cardinality name, as the OpenTelemetry semantic
// conventions identify events. Records without it are read all the same.
const EventName = "k8s.event"

// contractKey indexes the contract's attribute keys (ContractKeys).
type contractKey int

const (
	keyEventName contractKey = iota
	keyEventUID
	keyEventNamespace
	keyReason
	keyAction
	keyNamespace
	keyObjectKind
	keyObjectName
	keyObjectUID
	keyObjectAPIVersion
	keyObjectFieldPath
	keyObjectResourceVer
	keySourceComponent
	keyNodeName
	keySourceHost
	keyReportingController
	keyReportingInstance
	keyRelatedKind
	keyRelatedName
	keyRelatedNamespace
	keyRelatedUID
	keyRelatedAPIVersion
	keyRelatedFieldPath
	keyRelatedResourceVer
	keyCount
	keySeriesCount
	keySeriesState
	keyAggregated
	keyFirstTimestamp
	keyLastTimestamp
	keyEventTime
	keySeriesLastObserved
	keyStartTime
	keyNewOccurrences
	keyClusterName
	keyClusterUID
	numContractKeys
)

// ContractKeys are every attribute key the codec reads, indexed by
// contractKey: the one list a fuzzer or a writer that must strip them uses.
var ContractKeys = [numContractKeys]string{
	AttrEventName,
	AttrEventUID,
	AttrEventNamespace,
	AttrReason,
	AttrAction,
	AttrNamespace,
	AttrObjectKind,
	AttrObjectName,
	AttrObjectUID,
	AttrObjectAPIVersion,
	AttrObjectFieldPath,
	AttrObjectResourceVer,
	AttrSourceComponent,
	AttrNodeName,
	AttrSourceHost,
	AttrReportingController,
	AttrReportingInstance,
	AttrRelatedKind,
	AttrRelatedName,
	AttrRelatedNamespace,
	AttrRelatedUID,
	AttrRelatedAPIVersion,
	AttrRelatedFieldPath,
	AttrRelatedResourceVer,
	AttrCount,
	AttrSeriesCount,
	AttrSeriesState,
	AttrAggregated,
	AttrFirstTimestamp,
	AttrLastTimestamp,
	AttrEventTime,
	AttrSeriesLastObserved,
	AttrStartTime,
	AttrNewOccurrences,
	AttrClusterName,
	AttrClusterUID,
}

// keyIndex is k's place in ContractKeys, or -1 for a key outside the
// contract. Every attribute of every record is looked up: a table indexed
// by a hash of the length and two bytes, which no two contract keys share
// (keyTable panics at start otherwise), then one compare.
// DecodeAttributes, the hottest caller, compares words in place instead.
func keyIndex(k string) contractKey {
	if len(k) < minKeyLen {
		return -1
	}
	if e := &keyTable[keySlot(k)]; int(e.n) == len(k) && e.name == k {
		return e.key
	}
	return -1
}

// The shortest and longest contract keys (keyTable checks every key is
// inside them): keySlot reads k[len(k)-4], DecodeAttributes whole words,
// of a key of a slot's length only.
const (
	minKeyLen = 13
	maxKeyLen = 40
)

func keySlot(k string) int {
	return (len(k)*5 + int(k[len(k)-1])*3 + int(k[len(k)-4])) & (keyTableSize - 1)
}

const keyTableSize = 128

// keyEntry is a contract key in keyTable, with its bytes as words at 0, 8,
// 16 and 24, or at its last 8 where a word would pass its end, and its
// last 8: what DecodeAttributes compares, with no call and no branch.
type keyEntry struct {
	words [5]uint64
	name  string
	n     uint8    // len(name); 0 in an empty slot
	at    [3]uint8 // where words 1 to 3 start: min(8, 16 or 24, n-8), so a decoder computes no offset
	ident int8     // its identity slot (identitySlot), or -1
	other int8     // its place in a decoder's others (otherSlot), or -1 for one of stringKeys
	key   contractKey
	field uintptr // one of stringKeys: where its string field sits in an Event (stringOffsets)
}

var keyTable = func() (t [keyTableSize]keyEntry) {
	for i, k := range ContractKeys {
		if len(k) < minKeyLen || len(k) > maxKeyLen {
			panic("k8sevent: contract key " + k + " is outside minKeyLen and maxKeyLen")
		}
		e := &t[keySlot(k)]
		if e.n != 0 {
			panic("k8sevent: contract keys " + ContractKeys[e.key] + " and " + k + " share a slot of keyTable")
		}
		e.name, e.n, e.key, e.ident = k, uint8(len(k)), contractKey(i), int8(identitySlot(k))
		e.other, e.field = otherSlot[i], stringOffsets[i]
		for w := range e.words {
			e.words[w] = keyWord(k, min(8*w, len(k)-8)) // a short key's last words repeat its last 8 bytes
		}
		for w := range e.at {
			e.at[w] = uint8(min(8*(w+1), len(k)-8))
		}
	}
	return t
}()

// DropDuplicateKeys removes every copy of a contract key after the first,
// the copy DecodeAttributes reads.
func DropDuplicateKeys(attrs pcommon.Map) {
	var seen uint64
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool {
		i := keyIndex(k)
		if i < 0 {
			return false
		}
		dup := seen&(1<<i) != 0
		seen |= 1 << i
		return dup
	})
}

// RemoveKeys removes every copy of the given keys (pcommon.Map.Remove
// removes only the first, and a second copy would then be read).
func RemoveKeys(attrs pcommon.Map, keys []string) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return slices.Contains(keys, k) })
}

// KeySet is a set of contract keys, for removing them in one pass with
// one table lookup per attribute (RemoveKeys compares each attribute with
// every key it is given).
type KeySet uint64

// NewKeySet is the set of keys, every one of which must be a contract key.
func NewKeySet(keys ...string) KeySet {
	var s KeySet
	for _, k := range keys {
		i := keyIndex(k)
		if i < 0 {
			panic("k8sevent: " + k + " is not a contract key")
		}
		s |= 1 << i
	}
	return s
}

// Has reports whether k is in s.
func (s KeySet) Has(k string) bool {
	i := keyIndex(k)
	return i >= 0 && s&(1<<i) != 0
}

// Remove removes every copy of s's keys from attrs.
func (s KeySet) Remove(attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return s.Has(k) })
}
