package k8sevent

import (
	"math/bits"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The regarding object's identity on the resource of a record the
// eventseries processor emits: contrib's k8s_events receiver's k8s.object.*
// keys, the namespace, and the semantic conventions' own keys for the kinds
// they name, so that resource-based processors (k8sattributes'
// pod_association, routing on resource attributes) see the object the Event
// is about, not whoever sent it.

// semconvKind is a kind the semantic conventions name: the API group it
// must belong to and its name and uid keys (<prefix>.name, <prefix>.uid),
// whose identity slots are nameSlot and nameSlot+1.
type semconvKind struct {
	group           string // "" for the core group
	nameKey, uidKey string
	nameSlot        int
}

// semconvKindNames are the kinds the semantic conventions name, in the
// order of their identity slots.
var semconvKindNames = [...]string{"Pod", "Node", "ReplicationController", "ResourceQuota", "Deployment", "ReplicaSet",
	"StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler"}

// semconvKinds maps a regarding object's kind to its semantic-conventions
// keys. Namespace is left out: its key, k8s.namespace.name, is the
// regarding object's namespace in the contract.
var semconvKinds = map[string]semconvKind{
	"Pod":                     {group: "", nameKey: "k8s.pod"},
	"Node":                    {group: "", nameKey: "k8s.node"},
	"ReplicationController":   {group: "", nameKey: "k8s.replicationcontroller"},
	"ResourceQuota":           {group: "", nameKey: "k8s.resourcequota"},
	"Deployment":              {group: "apps", nameKey: "k8s.deployment"},
	"ReplicaSet":              {group: "apps", nameKey: "k8s.replicaset"},
	"StatefulSet":             {group: "apps", nameKey: "k8s.statefulset"},
	"DaemonSet":               {group: "apps", nameKey: "k8s.daemonset"},
	"Job":                     {group: "batch", nameKey: "k8s.job"},
	"CronJob":                 {group: "batch", nameKey: "k8s.cronjob"},
	"HorizontalPodAutoscaler": {group: "autoscaling", nameKey: "k8s.hpa"},
}

// AttrContainerName is the semantic conventions' container name, written on
// the resource of a Pod's Event whose field path names a container
// (spec.containers{name}, spec.initContainers{name}, ...).
const AttrContainerName = "k8s.container.name"

// Identity slots: every key PutIdentity may write has a number below
// identitySlots (its bit in a uint32), the semantic conventions' name and
// uid keys from slotSemconv on, two per kind in semconvKindNames' order.
const (
	slotNamespace = iota
	slotObjectKind
	slotObjectName
	slotObjectUID
	slotObjectAPIVersion
	slotObjectFieldPath
	slotObjectResourceVer
	slotContainerName
	slotSemconv
	slotPodName   = slotSemconv // Pod is semconvKindNames[0]
	identitySlots = slotSemconv + 2*len(semconvKindNames)
)

// identityKeyNames is the key of each identity slot; identityTable finds
// a key's slot (identitySlot).
var identityKeyNames, identityTable = identitySlotTables()

// identitySlotEntry is a key in identityTable, with its slot.
type identitySlotEntry struct {
	name string
	slot int8
}

// identityTableSlot is where identityTable holds k, if anywhere: a mix of
// its length and two bytes, without collision for the identity keys
// (identitySlotTables panics otherwise).
func identityTableSlot(k string) int {
	return (len(k) + int(k[4])*6 + int(k[len(k)-2])*28) & 63
}

func identitySlotTables() (names [identitySlots]string, table [64]identitySlotEntry) {
	copy(names[:], []string{AttrNamespace, AttrObjectKind, AttrObjectName, AttrObjectUID,
		AttrObjectAPIVersion, AttrObjectFieldPath, AttrObjectResourceVer, AttrContainerName})
	for i, kind := range semconvKindNames {
		k := semconvKinds[kind]
		prefix := k.nameKey
		k.nameKey, k.uidKey, k.nameSlot = prefix+".name", prefix+".uid", slotSemconv+2*i
		semconvKinds[kind] = k
		names[k.nameSlot], names[k.nameSlot+1] = k.nameKey, k.uidKey
	}
	for s, k := range names {
		e := &table[identityTableSlot(k)]
		if e.name != "" {
			panic("k8sevent: identity keys " + e.name + " and " + k + " share a table slot")
		}
		*e = identitySlotEntry{name: k, slot: int8(s)}
	}
	return names, table
}

// identitySlot is k's identity slot, or -1 when PutIdentity never writes k.
func identitySlot(k string) int {
	if len(k) < 5 {
		return -1
	}
	if e := &identityTable[identityTableSlot(k)]; e.name == k {
		return int(e.slot)
	}
	return -1
}

// IdentityKeys are every key PutIdentity may write on a resource: an
// emitted record's resource holds none of them but its regarding object's.
var IdentityKeys = append([]string(nil), identityKeyNames[:]...)

// semconvOf is the semantic-conventions kind of ref, or false when the
// conventions do not name it (or its API version is of another group: a
// custom resource may reuse a built-in kind's name). An empty API version
// is accepted, as senders often leave it out.
func semconvOf(ref ObjectRef) (semconvKind, bool) {
	k, ok := semconvKinds[ref.Kind]
	if !ok {
		return semconvKind{}, false
	}
	if ref.APIVersion != "" {
		group, _, found := strings.Cut(ref.APIVersion, "/")
		if !found {
			group = "" // "v1": the core group
		}
		if group != k.group {
			return semconvKind{}, false
		}
	}
	return k, true
}

// containerName is the container a Pod's field path names, or "".
func containerName(fieldPath string) string {
	open := strings.IndexByte(fieldPath, '{')
	if open < 0 || !strings.HasSuffix(fieldPath, "}") || !strings.HasPrefix(fieldPath, "spec.") {
		return ""
	}
	switch fieldPath[len("spec."):open] {
	case "containers", "initContainers", "ephemeralContainers":
		return fieldPath[open+1 : len(fieldPath)-1]
	}
	return ""
}

// identity is the identity keys a resource holds for one object, with
// their values: order lists their slots (identitySlot) in the order
// PutIdentity appends them.
type identity struct {
	values [identitySlots]string
	has    uint32 // bit s: the key of slot s is one of them
	order  [10]int8
	n      int
}

func (id *identity) add(slot int, v string) {
	if v != "" {
		id.values[slot] = v
		id.has |= 1 << slot
		id.order[id.n] = int8(slot)
		id.n++
	}
}

// set fills id with ref's identity keys.
func (id *identity) set(ref ObjectRef) {
	id.add(slotNamespace, ref.Namespace)
	id.add(slotObjectKind, ref.Kind)
	id.add(slotObjectName, ref.Name)
	id.add(slotObjectUID, ref.UID)
	id.add(slotObjectAPIVersion, ref.APIVersion)
	id.add(slotObjectFieldPath, ref.FieldPath)
	id.add(slotObjectResourceVer, ref.ResourceVersion)
	if k, ok := semconvOf(ref); ok {
		id.add(k.nameSlot, ref.Name)
		id.add(k.nameSlot+1, ref.UID)
		if k.nameSlot == slotPodName {
			id.add(slotContainerName, containerName(ref.FieldPath))
		}
	}
}

// PutIdentity replaces every identity key of a resource's attributes with
// ref's: k8s.namespace.name, k8s.object.*, and the semantic conventions'
// keys of its kind (k8s.pod.name and k8s.pod.uid for a Pod, k8s.node.name
// and k8s.node.uid for a Node, ...). The record keeps its own copy of the
// contract keys; the source host, which k8s.node.name held on contrib's
// resources, goes on the record as k8s.event.source.host (EncodeEmitted,
// Encode).
//
// A key that already holds ref's value (the first copy of it) is kept
// where it is, with no new value made: a resource that came describing
// the regarding object (contrib's k8s_events receiver) changes little.
// The keys it lacks are appended.
func PutIdentity(attrs pcommon.Map, ref ObjectRef) {
	putIdentity(attrs, ref, 0, false)
}

// OwnResource makes attrs the resource of emitted records about ref, in one
// pass over it: every copy of the keys in owned removed, with dupKeys every
// copy of a contract key after the first (DropDuplicateKeys), and ref's
// identity put (PutIdentity).
func OwnResource(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool) {
	putIdentity(attrs, ref, owned, dupKeys)
}

func putIdentity(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool) {
	var id identity
	id.set(ref)
	var kept uint32 // bit s: the key of slot s holds its value already
	var seen uint64 // contract keys met, with dupKeys
	attrs.RemoveIf(func(k string, v pcommon.Value) bool {
		if owned != 0 || dupKeys {
			if i := keyIndex(k); i >= 0 {
				dup := dupKeys && seen&(1<<i) != 0
				seen |= 1 << i
				if dup || owned&(1<<i) != 0 {
					return true
				}
			}
		}
		s := identitySlot(k)
		if s < 0 {
			return false
		}
		bit := uint32(1) << s
		keep := id.has&^kept&bit != 0 && v.Type() == pcommon.ValueTypeStr && v.Str() == id.values[s]
		if keep {
			kept |= bit
		}
		return !keep
	})
	attrs.EnsureCapacity(attrs.Len() + id.n - bits.OnesCount32(kept)) // one allocation, not one per growth
	for _, s := range id.order[:id.n] {
		if kept&(1<<s) == 0 {
			attrs.PutStr(identityKeyNames[s], id.values[s])
		}
	}
}

// IsIdentityKey reports whether PutIdentity may write k.
func IsIdentityKey(k string) bool { return identitySlot(k) >= 0 }

// RemoveIdentityKeys removes every copy of every key PutIdentity may write.
func RemoveIdentityKeys(attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return IsIdentityKey(k) })
}

// writesNodeName reports whether PutIdentity writes k8s.node.name for ref
// (a Node's name), which a reader must then not take for the legacy
// source host: the record says k8s.event.source.host, empty if need be.
func writesNodeName(ref ObjectRef) bool {
	if ref.Kind != "Node" || ref.Name == "" {
		return false
	}
	k, ok := semconvOf(ref)
	return ok && k.nameKey == AttrNodeName
}

// putSourceHost writes the source host on a record as
// k8s.event.source.host: when set, and as "" when its resource's
// k8s.node.name is a Node's name, so that no reader falls back to it.
func putSourceHost(attrs pcommon.Map, ev *Event) {
	if ev.SourceHost != "" || writesNodeName(ev.Regarding) {
		attrs.PutStr(AttrSourceHost, ev.SourceHost)
	}
}
