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

// semconvIndex is kind's place in semconvKinds, or -1: a switch, not
// a map lookup (a string hash per emitted record).
func semconvIndex(kind string) int {
	switch kind {
	case "Pod":
		return 0
	case "Node":
		return 1
	case "ReplicationController":
		return 2
	case "ResourceQuota":
		return 3
	case "Deployment":
		return 4
	case "ReplicaSet":
		return 5
	case "StatefulSet":
		return 6
	case "DaemonSet":
		return 7
	case "Job":
		return 8
	case "CronJob":
		return 9
	case "HorizontalPodAutoscaler":
		return 10
	}
	return -1
}

// semconvKinds are the kinds the semantic conventions name, in the order
// of semconvIndex and of their identity slots. Namespace is left out: its
// key, k8s.namespace.name, is the regarding object's namespace in the
// contract.
var semconvKinds = [...]semconvKind{
	kind(0, "", "k8s.pod"),
	kind(1, "", "k8s.node"),
	kind(2, "", "k8s.replicationcontroller"),
	kind(3, "", "k8s.resourcequota"),
	kind(4, "apps", "k8s.deployment"),
	kind(5, "apps", "k8s.replicaset"),
	kind(6, "apps", "k8s.statefulset"),
	kind(7, "apps", "k8s.daemonset"),
	kind(8, "batch", "k8s.job"),
	kind(9, "batch", "k8s.cronjob"),
	kind(10, "autoscaling", "k8s.hpa"),
}

func kind(i int, group, prefix string) semconvKind {
	return semconvKind{group: group, nameKey: prefix + ".name", uidKey: prefix + ".uid", nameSlot: slotSemconv + 2*i}
}

// AttrContainerName is the semantic conventions' container name, written on
// the resource of a Pod's Event whose field path names a container
// (spec.containers{name}, spec.initContainers{name}, ...).
const AttrContainerName = "k8s.container.name"

// Identity slots: every key PutIdentity may write has a number below
// identitySlots (its bit in a uint32), the semantic conventions' name and
// uid keys from slotSemconv on, two per kind in semconvKinds' order.
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
	slotPodName   = slotSemconv // Pod is semconvKinds[0]
	identitySlots = slotSemconv + 2*len(semconvKinds)
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
	for _, k := range semconvKinds {
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

// semconvOf is the semantic-conventions kind of ref, or nil when the
// conventions do not name it (or its API version is of another group: a
// custom resource may reuse a built-in kind's name). An empty API version
// is accepted, as senders often leave it out.
func semconvOf(ref *ObjectRef) *semconvKind {
	i := semconvIndex(ref.Kind)
	if i < 0 {
		return nil
	}
	k := &semconvKinds[i]
	if ref.APIVersion != "" && !inGroup(ref.APIVersion, k.group) {
		return nil
	}
	return k
}

// inGroup reports whether API version v is of group g: v's text before its
// first "/", or "" when it has none ("v1": the core group).
func inGroup(v, g string) bool {
	if g == "" {
		return strings.IndexByte(v, '/') <= 0
	}
	return len(v) > len(g) && v[len(g)] == '/' && v[:len(g)] == g // g holds no "/"
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
// their values, in the order PutIdentity appends them: slots[i] is the
// identity slot (identitySlot) of the i-th, at[slot] is i+1 (0: none).
type identity struct {
	slots  [10]int8
	values [10]string
	at     [identitySlots]int8
	n      int
}

func (id *identity) add(slot int, v string) {
	if v != "" {
		id.slots[id.n], id.values[id.n] = int8(slot), v
		id.n++
		id.at[slot] = int8(id.n)
	}
}

// set fills id with ref's identity keys.
func (id *identity) set(ref *ObjectRef) {
	id.add(slotNamespace, ref.Namespace)
	id.add(slotObjectKind, ref.Kind)
	id.add(slotObjectName, ref.Name)
	id.add(slotObjectUID, ref.UID)
	id.add(slotObjectAPIVersion, ref.APIVersion)
	id.add(slotObjectFieldPath, ref.FieldPath)
	id.add(slotObjectResourceVer, ref.ResourceVersion)
	if k := semconvOf(ref); k != nil {
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
	putIdentity(attrs, ref, 0, false, nil)
}

// OwnResource makes attrs the resource of emitted records about ref, in one
// pass over it: every copy of the keys in owned removed, with dupKeys every
// copy of a contract key after the first (DropDuplicateKeys), and ref's
// identity put (PutIdentity).
func OwnResource(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool) {
	putIdentity(attrs, ref, owned, dupKeys, nil)
}

// hostMove asks putIdentity's pass to move the first k8s.node.name, when
// it holds host, to the record's attributes to as k8s.event.source.host
// (moved then reports it did): that key is never the identity of an
// object whose record's source host is moved (EncodeEmittedOwn), so the
// pass removes it anyway.
type hostMove struct {
	to    pcommon.Map
	host  string
	moved bool
}

func putIdentity(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool, mv *hostMove) {
	var id identity
	id.set(&ref)
	var kept uint16 // bit i: the i-th key holds its value already
	var seen uint64 // contract keys met, with owned, dupKeys or mv
	lookUp := owned != 0 || dupKeys || mv != nil
	attrs.RemoveIf(func(k string, v pcommon.Value) bool {
		s := -2 // not looked up yet
		var e *keyEntry
		if lookUp && len(k) >= minKeyLen { // k's contract key and identity slot, in one lookup
			if e = &keyTable[keySlot(k)]; int(e.n) == len(k) && e.name == k {
				s = int(e.ident)
			}
		}
		if s != -2 {
			bit := uint64(1) << (uint(e.key) & 63)
			first := seen&bit == 0
			seen |= bit
			if !first && dupKeys || uint64(owned)&bit != 0 {
				return true
			}
			if e.key == keyNodeName && first && mv != nil && v.Str() == mv.host {
				v.MoveTo(mv.to.PutEmpty(AttrSourceHost))
				mv.moved = true
				return true
			}
		} else {
			s = identitySlot(k)
		}
		if s < 0 {
			return false
		}
		i := int(id.at[s]) - 1 // -1: not one of ref's keys
		// id's values are never empty: Str's "" of another type never matches
		keep := i >= 0 && kept&(1<<i) == 0 && v.Str() == id.values[i]
		if keep {
			kept |= 1 << i
		}
		return !keep
	})
	attrs.EnsureCapacity(attrs.Len() + id.n - bits.OnesCount16(kept)) // one allocation, not one per growth
	for i := range id.n {
		if kept&(1<<i) == 0 {
			attrs.PutStr(identityKeyNames[id.slots[i]], id.values[i])
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
	k := semconvOf(&ref)
	return k != nil && k.nameKey == AttrNodeName
}

// putSourceHost writes the source host on a record as
// k8s.event.source.host: when set, and as "" when its resource's
// k8s.node.name is a Node's name, so that no reader falls back to it.
func putSourceHost(attrs pcommon.Map, ev *Event) {
	if putsHost(ev) {
		attrs.PutStr(AttrSourceHost, ev.SourceHost)
	}
}
