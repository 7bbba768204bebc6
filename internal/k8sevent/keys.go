package k8sevent

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attribute keys of the log-record contract (docs/contract.md's table). The codec reads
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
	// AttrSourceHost is the legacy source host (core/v1 source.host).
	// contrib's k8s_events receiver writes it as k8s.node.name on the
	// resource, which names the regarding Node on the resource of emitted
	// records (PutIdentity): k8s.node.name is read as the source host only
	// where a map holds no k8s.event.source.host.
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

// ContractKeys are every attribute key the codec reads: the one list a
// fuzzer or a writer that must strip them uses. A key's place in it is its
// bit in a KeySet.
var ContractKeys = [...]string{
	AttrEventName, AttrEventUID, AttrEventNamespace, AttrReason, AttrAction, AttrNamespace,
	AttrObjectKind, AttrObjectName, AttrObjectUID, AttrObjectAPIVersion, AttrObjectFieldPath,
	AttrObjectResourceVer, AttrSourceComponent, AttrNodeName, AttrSourceHost, AttrReportingController,
	AttrReportingInstance, AttrRelatedKind, AttrRelatedName, AttrRelatedNamespace, AttrRelatedUID,
	AttrRelatedAPIVersion, AttrRelatedFieldPath, AttrRelatedResourceVer, AttrCount, AttrSeriesCount,
	AttrSeriesState, AttrAggregated, AttrFirstTimestamp, AttrLastTimestamp, AttrEventTime,
	AttrSeriesLastObserved, AttrStartTime, AttrNewOccurrences, AttrClusterName, AttrClusterUID,
}

var contractKeyIndex = func() map[string]int {
	m := make(map[string]int, len(ContractKeys))
	for i, k := range ContractKeys {
		m[k] = i
	}
	return m
}()

// keyIndex is k's place in ContractKeys, or -1 for a key outside the contract.
func keyIndex(k string) int {
	if i, ok := contractKeyIndex[k]; ok {
		return i
	}
	return -1
}

// KeySet is a set of contract keys, one bit each.
type KeySet uint64

// NewKeySet is the set of keys, every one of which must be a contract key.
func NewKeySet(keys ...string) KeySet {
	var s KeySet
	for _, k := range keys {
		i := keyIndex(k)
		if i < 0 {
			panic("k8sevent: " + k + " is not a contract key")
		}
		s.add(i)
	}
	return s
}

func (s KeySet) has(i int) bool { return i >= 0 && s&(1<<i) != 0 }
func (s *KeySet) add(i int)     { *s |= 1 << i }

// Has reports whether k is in s.
func (s KeySet) Has(k string) bool { return s.has(keyIndex(k)) }

// Remove removes every copy of s's keys from attrs.
func (s KeySet) Remove(attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return s.Has(k) })
}

// DropDuplicateKeys removes every copy of a contract key after the first,
// the copy DecodeAttributes reads.
func DropDuplicateKeys(attrs pcommon.Map) {
	var seen KeySet
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool {
		i := keyIndex(k)
		dup := seen.has(i)
		if i >= 0 {
			seen.add(i)
		}
		return dup
	})
}

// RemoveKeys removes every copy of the given keys (pcommon.Map.Remove
// removes only the first, and a second copy would then be read).
func RemoveKeys(attrs pcommon.Map, keys []string) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return slices.Contains(keys, k) })
}
