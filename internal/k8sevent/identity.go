package k8sevent

import (
	"math/bits"
	"slices"
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
// belongs to ("" for the core group) and its name and uid keys.
type semconvKind struct{ group, nameKey, uidKey string }

func semconv(group, prefix string) semconvKind {
	return semconvKind{group, prefix + ".name", prefix + ".uid"}
}

// semconvKinds are the kinds the semantic conventions name, by kind.
// Namespace is left out: its key, k8s.namespace.name, is the regarding
// object's namespace in the contract.
var semconvKinds = map[string]semconvKind{
	"Pod":                     semconv("", "k8s.pod"),
	"Node":                    semconv("", "k8s.node"),
	"ReplicationController":   semconv("", "k8s.replicationcontroller"),
	"ResourceQuota":           semconv("", "k8s.resourcequota"),
	"Deployment":              semconv("apps", "k8s.deployment"),
	"ReplicaSet":              semconv("apps", "k8s.replicaset"),
	"StatefulSet":             semconv("apps", "k8s.statefulset"),
	"DaemonSet":               semconv("apps", "k8s.daemonset"),
	"Job":                     semconv("batch", "k8s.job"),
	"CronJob":                 semconv("batch", "k8s.cronjob"),
	"HorizontalPodAutoscaler": semconv("autoscaling", "k8s.hpa"),
}

// AttrContainerName is the semantic conventions' container name, written on
// the resource of a Pod's Event whose field path names a container
// (spec.containers{name}, spec.initContainers{name}, ...).
const AttrContainerName = "k8s.container.name"

// IdentityKeys are every key PutIdentity may write on a resource: an
// emitted record's resource holds none of them but its regarding object's.
var IdentityKeys = func() []string {
	var semconv []string
	for _, k := range semconvKinds {
		semconv = append(semconv, k.nameKey, k.uidKey)
	}
	slices.Sort(semconv)
	return append([]string{AttrNamespace, AttrObjectKind, AttrObjectName, AttrObjectUID,
		AttrObjectAPIVersion, AttrObjectFieldPath, AttrObjectResourceVer, AttrContainerName}, semconv...)
}()

var identityKeySet = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range IdentityKeys {
		m[k] = true
	}
	return m
}()

// IsIdentityKey reports whether PutIdentity may write k.
func IsIdentityKey(k string) bool { return identityKeySet[k] }

// semconvOf is the semantic-conventions kind of ref, with false when the
// conventions do not name it (or its API version is of another group: a
// custom resource may reuse a built-in kind's name). An empty API version
// is accepted, as senders often leave it out.
func semconvOf(ref *ObjectRef) (semconvKind, bool) {
	k, ok := semconvKinds[ref.Kind]
	if !ok || ref.APIVersion == "" {
		return k, ok
	}
	group, _, found := strings.Cut(ref.APIVersion, "/")
	if !found {
		group = "" // "v1": the core group
	}
	return k, group == k.group
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

// keyValue is one attribute of an object's identity.
type keyValue struct{ key, value string }

// appendIdentity appends ref's identity keys with their values, the empty
// ones left out, in the order PutIdentity writes them.
func appendIdentity(id []keyValue, ref *ObjectRef) []keyValue {
	add := func(k, v string) {
		if v != "" {
			id = append(id, keyValue{k, v})
		}
	}
	add(AttrNamespace, ref.Namespace)
	add(AttrObjectKind, ref.Kind)
	add(AttrObjectName, ref.Name)
	add(AttrObjectUID, ref.UID)
	add(AttrObjectAPIVersion, ref.APIVersion)
	add(AttrObjectFieldPath, ref.FieldPath)
	add(AttrObjectResourceVer, ref.ResourceVersion)
	if k, ok := semconvOf(ref); ok {
		add(k.nameKey, ref.Name)
		add(k.uidKey, ref.UID)
		if ref.Kind == "Pod" {
			add(AttrContainerName, containerName(ref.FieldPath))
		}
	}
	return id
}

// PutIdentity replaces every identity key of a resource's attributes with
// ref's: k8s.namespace.name, k8s.object.*, and the semantic conventions'
// keys of its kind (k8s.pod.name and k8s.pod.uid for a Pod, k8s.node.name
// and k8s.node.uid for a Node, ...). The record keeps its own copy of the
// contract keys; the source host, which k8s.node.name held on contrib's
// resources, goes on the record as k8s.event.source.host (EncodeEmitted,
// Encode).
//
// The first copy of a key that holds ref's value already is kept where it
// is: a resource that came describing the regarding object (contrib's
// k8s_events receiver) keeps its order. The keys it lacks are appended.
func PutIdentity(attrs pcommon.Map, ref ObjectRef) {
	OwnResource(attrs, ref, 0, false)
}

// OwnResource makes attrs the resource of emitted records about ref, in one
// pass over it: every copy of the keys in owned removed, with dupKeys every
// copy of a contract key after the first (DropDuplicateKeys), and ref's
// identity put (PutIdentity).
func OwnResource(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool) {
	id := appendIdentity(make([]keyValue, 0, 10), &ref)
	var kept uint16 // bit j: id[j] is held where it is
	var seen KeySet
	attrs.RemoveIf(func(k string, v pcommon.Value) bool {
		if i := keyIndex(k); i >= 0 {
			dup := seen.has(i)
			seen.add(i)
			if dup && dupKeys || owned.has(i) {
				return true
			}
		}
		if !IsIdentityKey(k) {
			return false
		}
		for j, kv := range id {
			if kv.key == k {
				// a value is never "", which Str gives for another type
				keep := kept&(1<<j) == 0 && v.Str() == kv.value
				if keep {
					kept |= 1 << j
				}
				return !keep
			}
		}
		return true // another object's identity
	})
	attrs.EnsureCapacity(attrs.Len() + len(id) - bits.OnesCount16(kept)) // grown once, not per key
	for j, kv := range id {
		if kept&(1<<j) == 0 {
			attrs.PutStr(kv.key, kv.value)
		}
	}
}

// RemoveIdentityKeys removes every copy of every key PutIdentity may write.
func RemoveIdentityKeys(attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return IsIdentityKey(k) })
}

// putsHost reports whether a record of ev states its source host as
// k8s.event.source.host: when it has one, and, empty, when its resource's
// k8s.node.name is a Node's name (PutIdentity), so that no reader falls
// back to that key for the host.
func putsHost(ev *Event) bool {
	if ev.SourceHost != "" {
		return true
	}
	_, named := semconvOf(&ev.Regarding)
	return ev.Regarding.Kind == "Node" && ev.Regarding.Name != "" && named
}
