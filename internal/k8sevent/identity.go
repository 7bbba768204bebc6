package k8sevent

import (
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
// must belong to and the prefix of its name and uid keys.
type semconvKind struct {
	group  string // "" for the core group
	prefix string
}

// semconvKinds maps a regarding object's kind to its semantic-conventions
// keys (<prefix>.name, <prefix>.uid). Namespace is left out: its key,
// k8s.namespace.name, is the regarding object's namespace in the contract.
var semconvKinds = map[string]semconvKind{
	"Pod":                     {"", "k8s.pod"},
	"Node":                    {"", "k8s.node"},
	"ReplicationController":   {"", "k8s.replicationcontroller"},
	"ResourceQuota":           {"", "k8s.resourcequota"},
	"Deployment":              {"apps", "k8s.deployment"},
	"ReplicaSet":              {"apps", "k8s.replicaset"},
	"StatefulSet":             {"apps", "k8s.statefulset"},
	"DaemonSet":               {"apps", "k8s.daemonset"},
	"Job":                     {"batch", "k8s.job"},
	"CronJob":                 {"batch", "k8s.cronjob"},
	"HorizontalPodAutoscaler": {"autoscaling", "k8s.hpa"},
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
		keys = append(keys, semconvKinds[k].prefix+".name", semconvKinds[k].prefix+".uid")
	}
	return keys
}

// semconvPrefix is the semantic-conventions prefix of ref's kind, or "" when
// the conventions do not name it (or its API version is of another group:
// a custom resource may reuse a built-in kind's name). An empty API version
// is accepted, as senders often leave it out.
func semconvPrefix(ref ObjectRef) string {
	k, ok := semconvKinds[ref.Kind]
	if !ok {
		return ""
	}
	if ref.APIVersion != "" {
		group, _, found := strings.Cut(ref.APIVersion, "/")
		if !found {
			group = "" // "v1": the core group
		}
		if group != k.group {
			return ""
		}
	}
	return k.prefix
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

// PutIdentity replaces every identity key of a resource's attributes with
// ref's: k8s.namespace.name, k8s.object.*, and the semantic conventions'
// keys of its kind (k8s.pod.name and k8s.pod.uid for a Pod, k8s.node.name
// and k8s.node.uid for a Node, ...). The record keeps its own copy of the
// contract keys; the source host, which k8s.node.name held on contrib's
// resources, goes on the record as k8s.event.source.host (EncodeRepairs,
// Encode).
func PutIdentity(attrs pcommon.Map, ref ObjectRef) {
	RemoveKeys(attrs, IdentityKeys)
	attrs.EnsureCapacity(attrs.Len() + 10) // one allocation, not one per growth
	putStr(attrs, AttrNamespace, ref.Namespace)
	putStr(attrs, AttrObjectKind, ref.Kind)
	putStr(attrs, AttrObjectName, ref.Name)
	putStr(attrs, AttrObjectUID, ref.UID)
	putStr(attrs, AttrObjectAPIVersion, ref.APIVersion)
	putStr(attrs, AttrObjectFieldPath, ref.FieldPath)
	putStr(attrs, AttrObjectResourceVer, ref.ResourceVersion)
	prefix := semconvPrefix(ref)
	if prefix == "" {
		return
	}
	putStr(attrs, prefix+".name", ref.Name)
	putStr(attrs, prefix+".uid", ref.UID)
	if prefix == "k8s.pod" {
		putStr(attrs, AttrContainerName, containerName(ref.FieldPath))
	}
}

// HoldsIdentityKey reports whether attrs hold any key PutIdentity writes.
func HoldsIdentityKey(attrs pcommon.Map) bool {
	for k := range attrs.All() {
		if isIdentityKey(k) {
			return true
		}
	}
	return false
}

func isIdentityKey(k string) bool { return slices.Contains(IdentityKeys, k) }

// writesNodeName reports whether PutIdentity writes k8s.node.name for ref
// (a Node's name), which a reader must then not take for the legacy
// source host: the record says k8s.event.source.host, empty if need be.
func writesNodeName(ref ObjectRef) bool { return semconvPrefix(ref) == "k8s.node" && ref.Name != "" }

// putSourceHost writes the source host on a record as
// k8s.event.source.host: when set, and as "" when its resource's
// k8s.node.name is a Node's name, so that no reader falls back to it.
func putSourceHost(attrs pcommon.Map, ev *Event) {
	if ev.SourceHost != "" || writesNodeName(ev.Regarding) {
		attrs.PutStr(AttrSourceHost, ev.SourceHost)
	}
}
