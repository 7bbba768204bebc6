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
// must belong to and its name and uid keys (<prefix>.name, <prefix>.uid).
type semconvKind struct {
	group           string // "" for the core group
	nameKey, uidKey string
}

func kind(group, prefix string) semconvKind {
	return semconvKind{group: group, nameKey: prefix + ".name", uidKey: prefix + ".uid"}
}

// semconvKinds maps a regarding object's kind to its semantic-conventions
// keys. Namespace is left out: its key, k8s.namespace.name, is the
// regarding object's namespace in the contract.
var semconvKinds = map[string]semconvKind{
	"Pod":                     kind("", "k8s.pod"),
	"Node":                    kind("", "k8s.node"),
	"ReplicationController":   kind("", "k8s.replicationcontroller"),
	"ResourceQuota":           kind("", "k8s.resourcequota"),
	"Deployment":              kind("apps", "k8s.deployment"),
	"ReplicaSet":              kind("apps", "k8s.replicaset"),
	"StatefulSet":             kind("apps", "k8s.statefulset"),
	"DaemonSet":               kind("apps", "k8s.daemonset"),
	"Job":                     kind("batch", "k8s.job"),
	"CronJob":                 kind("batch", "k8s.cronjob"),
	"HorizontalPodAutoscaler": kind("autoscaling", "k8s.hpa"),
}

// AttrContainerName is the semantic conventions' container name, written on
// the resource of a Pod's Event whose field path names a container
// (spec.containers{name}, spec.initContainers{name}, ...).
const AttrContainerName = "k8s.container.name"

// IdentityKeys are every key PutIdentity may write on a resource: an
// emitted record's resource holds none of them but its regarding object's.
var IdentityKeys = identityKeys()

func identityKeys() []string {
	keys := []string{
		AttrNamespace, AttrObjectKind, AttrObjectName, AttrObjectUID,
		AttrObjectAPIVersion, AttrObjectFieldPath, AttrObjectResourceVer, AttrContainerName,
	}
	for _, k := range []string{"Pod", "Node", "ReplicationController", "ResourceQuota", "Deployment", "ReplicaSet",
		"StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler"} {
		keys = append(keys, semconvKinds[k].nameKey, semconvKinds[k].uidKey)
	}
	return keys
}

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
// their values, in the order PutIdentity appends them.
type identity struct {
	keys, values [10]string
	n            int
}

func (id *identity) add(k, v string) {
	if v != "" {
		id.keys[id.n], id.values[id.n] = k, v
		id.n++
	}
}

// set fills id with ref's identity keys.
func (id *identity) set(ref ObjectRef) {
	id.add(AttrNamespace, ref.Namespace)
	id.add(AttrObjectKind, ref.Kind)
	id.add(AttrObjectName, ref.Name)
	id.add(AttrObjectUID, ref.UID)
	id.add(AttrObjectAPIVersion, ref.APIVersion)
	id.add(AttrObjectFieldPath, ref.FieldPath)
	id.add(AttrObjectResourceVer, ref.ResourceVersion)
	if k, ok := semconvOf(ref); ok {
		id.add(k.nameKey, ref.Name)
		id.add(k.uidKey, ref.UID)
		if k.nameKey == "k8s.pod.name" {
			id.add(AttrContainerName, containerName(ref.FieldPath))
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
	var kept uint16 // bit i: id.keys[i] holds its value already
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
		if !IsIdentityKey(k) {
			return false
		}
		for i := range id.n {
			if id.keys[i] == k {
				keep := kept&(1<<i) == 0 && v.Type() == pcommon.ValueTypeStr && v.Str() == id.values[i]
				if keep {
					kept |= 1 << i
				}
				return !keep
			}
		}
		return true
	})
	attrs.EnsureCapacity(attrs.Len() + id.n - bits.OnesCount16(kept)) // one allocation, not one per growth
	for i := range id.n {
		if kept&(1<<i) == 0 {
			attrs.PutStr(id.keys[i], id.values[i])
		}
	}
}

// IsIdentityKey reports whether PutIdentity may write k.
func IsIdentityKey(k string) bool {
	// A switch, not a map: it runs on every attribute of every emitted
	// record's resource, and most keys are told apart by their length.
	switch k {
	case AttrNamespace, AttrObjectKind, AttrObjectName, AttrObjectUID, AttrObjectAPIVersion,
		AttrObjectFieldPath, AttrObjectResourceVer, AttrContainerName,
		"k8s.pod.name", "k8s.pod.uid", "k8s.node.name", "k8s.node.uid",
		"k8s.replicationcontroller.name", "k8s.replicationcontroller.uid",
		"k8s.resourcequota.name", "k8s.resourcequota.uid", "k8s.deployment.name", "k8s.deployment.uid",
		"k8s.replicaset.name", "k8s.replicaset.uid", "k8s.statefulset.name", "k8s.statefulset.uid",
		"k8s.daemonset.name", "k8s.daemonset.uid", "k8s.job.name", "k8s.job.uid",
		"k8s.cronjob.name", "k8s.cronjob.uid", "k8s.hpa.name", "k8s.hpa.uid":
		return true
	}
	return false
}

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
