package k8sevent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestPutIdentityReplacesTheSendersIdentity: an app's resource describes
// the app's own pod; on an emitted record it describes the regarding object
// only, with the semantic conventions' keys of its kind, and keeps the rest.
func TestPutIdentityReplacesTheSendersIdentity(t *testing.T) {
	attrs := pcommon.NewMap()
	attrs.PutStr("k8s.pod.name", "sender-7f9c")
	attrs.PutStr("k8s.pod.uid", "sender-uid")
	attrs.PutStr("k8s.namespace.name", "sender-ns")
	attrs.PutStr("k8s.node.name", "node-of-sender")
	attrs.PutStr("k8s.deployment.name", "sender")
	attrs.PutStr("k8s.object.resource_version", "1")
	attrs.PutStr("service.name", "my-controller")
	attrs.PutStr("k8s.cluster.name", "prod-eu")

	k8sevent.PutIdentity(attrs, web0)
	assert.Equal(t, web0Identity(map[string]any{"service.name": "my-controller", "k8s.cluster.name": "prod-eu"}), attrs.AsRaw())
}

// web0 is a Pod's container, the regarding object of the identity tests.
var web0 = k8sevent.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "pod-uid", APIVersion: "v1",
	FieldPath: "spec.containers{app}"}

// web0Identity is what PutIdentity(attrs, web0) leaves on a resource, plus
// the keys of other that are not identity keys.
func web0Identity(other map[string]any) map[string]any {
	want := map[string]any{
		"k8s.namespace.name":     "shop",
		"k8s.object.kind":        "Pod",
		"k8s.object.name":        "web-0",
		"k8s.object.uid":         "pod-uid",
		"k8s.object.api_version": "v1",
		"k8s.object.fieldpath":   "spec.containers{app}",
		"k8s.pod.name":           "web-0",
		"k8s.pod.uid":            "pod-uid",
		"k8s.container.name":     "app",
	}
	for k, v := range other {
		want[k] = v
	}
	return want
}

func TestPutIdentityKinds(t *testing.T) {
	for _, tc := range []struct {
		ref  k8sevent.ObjectRef
		want map[string]any // the keys beyond k8s.object.* and the namespace
	}{
		{k8sevent.ObjectRef{Kind: "Node", Name: "n1", UID: "u", APIVersion: "v1"},
			map[string]any{"k8s.node.name": "n1", "k8s.node.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "d", UID: "u", APIVersion: "apps/v1"},
			map[string]any{"k8s.deployment.name": "d", "k8s.deployment.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "ReplicaSet", Namespace: "a", Name: "r", UID: "u", APIVersion: "apps/v1"},
			map[string]any{"k8s.replicaset.name": "r", "k8s.replicaset.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "s", UID: "u"},
			map[string]any{"k8s.statefulset.name": "s", "k8s.statefulset.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "DaemonSet", Namespace: "a", Name: "s", UID: "u", APIVersion: "apps/v1"},
			map[string]any{"k8s.daemonset.name": "s", "k8s.daemonset.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "Job", Namespace: "a", Name: "j", UID: "u", APIVersion: "batch/v1"},
			map[string]any{"k8s.job.name": "j", "k8s.job.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "CronJob", Namespace: "a", Name: "c", UID: "u", APIVersion: "batch/v1"},
			map[string]any{"k8s.cronjob.name": "c", "k8s.cronjob.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "HorizontalPodAutoscaler", Namespace: "a", Name: "h", UID: "u", APIVersion: "autoscaling/v2"},
			map[string]any{"k8s.hpa.name": "h", "k8s.hpa.uid": "u"}},
		{k8sevent.ObjectRef{Kind: "Pod", Namespace: "a", Name: "p", FieldPath: "spec.initContainers{init}"},
			map[string]any{"k8s.pod.name": "p", "k8s.container.name": "init"}},
		{k8sevent.ObjectRef{Kind: "Pod", Namespace: "a", Name: "p", FieldPath: "metadata.labels"},
			map[string]any{"k8s.pod.name": "p"}},
		// A custom resource reusing a built-in kind's name is not that kind.
		{k8sevent.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "d", APIVersion: "example.com/v1"}, map[string]any{}},
		// Kinds the conventions do not name, and Namespace (its key is the
		// regarding object's namespace in the contract).
		{k8sevent.ObjectRef{Kind: "Namespace", Name: "shop", APIVersion: "v1"}, map[string]any{}},
		{k8sevent.ObjectRef{Kind: "Ingress", Namespace: "a", Name: "i"}, map[string]any{}},
	} {
		attrs := pcommon.NewMap()
		k8sevent.PutIdentity(attrs, tc.ref)
		got := attrs.AsRaw()
		for _, k := range []string{"k8s.namespace.name", "k8s.object.kind", "k8s.object.name", "k8s.object.uid",
			"k8s.object.api_version", "k8s.object.fieldpath"} {
			delete(got, k)
		}
		assert.Equal(t, tc.want, got, "%+v", tc.ref)
		for k := range attrs.All() {
			assert.Contains(t, k8sevent.IdentityKeys, k, "PutIdentity wrote a key IdentityKeys does not list")
		}
	}
}

// TestSourceHostBesideNodeIdentity: the legacy source host and a regarding
// Node's name both used k8s.node.name; after PutIdentity and Encode each
// reads back as it was, whatever the kind and whether the host is set.
func TestSourceHostBesideNodeIdentity(t *testing.T) {
	for _, ev := range []k8sevent.Event{
		{Reason: "NodeNotReady", Regarding: k8sevent.ObjectRef{Kind: "Node", Name: "n1", UID: "u1", APIVersion: "v1"}},
		{Reason: "Rebooted", SourceHost: "n1", Regarding: k8sevent.ObjectRef{Kind: "Node", Name: "n1", APIVersion: "v1"}},
		{Reason: "Moved", SourceHost: "n2", Regarding: k8sevent.ObjectRef{Kind: "Node", Name: "n1", APIVersion: "v1"}},
		{Reason: "BackOff", SourceHost: "n3", Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: "a", Name: "p"}},
		{Reason: "Scaled", Regarding: k8sevent.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "d"}},
	} {
		ev.Time = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		res := pcommon.NewResource()
		res.Attributes().PutStr(k8sevent.AttrNodeName, "node-of-sender")
		k8sevent.PutIdentity(res.Attributes(), ev.Regarding)
		lr := plog.NewLogRecord()
		k8sevent.Encode(&ev, lr)
		got, problems, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
		require.True(t, found)
		require.Zero(t, problems)
		assert.Equal(t, ev.SourceHost, got.SourceHost, ev.Reason)
		assert.Equal(t, ev.Regarding, got.Regarding, ev.Reason)
	}
}

// TestSourceHostKeyWinsInAnyOrder: in one map, k8s.event.source.host (even
// empty) is the source host whichever order the two keys come in;
// k8s.node.name alone still is (contrib's receiver, older recorders).
func TestSourceHostKeyWinsInAnyOrder(t *testing.T) {
	for _, order := range [][2]string{{k8sevent.AttrSourceHost, k8sevent.AttrNodeName}, {k8sevent.AttrNodeName, k8sevent.AttrSourceHost}} {
		for _, host := range []string{"", "h1"} {
			attrs := pcommon.NewMap()
			for _, k := range order {
				v := "node-name"
				if k == k8sevent.AttrSourceHost {
					v = host
				}
				attrs.PutStr(k, v)
			}
			var ev k8sevent.Event
			k8sevent.DecodeAttributes(attrs, &ev, k8sevent.DecodeOptions{})
			assert.Equal(t, host, ev.SourceHost, "%v", order)
		}
	}
	attrs := pcommon.NewMap()
	attrs.PutStr(k8sevent.AttrNodeName, "legacy")
	var ev k8sevent.Event
	k8sevent.DecodeAttributes(attrs, &ev, k8sevent.DecodeOptions{})
	assert.Equal(t, "legacy", ev.SourceHost)
}

// TestEmittedRecordKeepsContribSourceHost: a contrib record's source host
// sits in the resource's k8s.node.name, which an emitted record's resource
// loses to the regarding Node's name; EncodeEmitted keeps it on the record.
func TestEmittedRecordKeepsContribSourceHost(t *testing.T) {
	res, lr := contribRecord(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC))
	res.Attributes().PutStr(k8sevent.AttrObjectKind, "Node")
	res.Attributes().PutStr(k8sevent.AttrObjectName, "node-b")
	ev, _, _ := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	require.Equal(t, "node-a", ev.SourceHost)

	k8sevent.EncodeEmitted(lr, &ev, 0, &k8sevent.State{Name: ev.Name, SeriesState: k8sevent.StateSingleton, Count: 1})
	k8sevent.PutIdentity(res.Attributes(), ev.Regarding)
	v, _ := res.Attributes().Get(k8sevent.AttrNodeName)
	require.Equal(t, "node-b", v.Str(), "the resource names the regarding Node")
	again, _, _ := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	assert.Equal(t, ev.SourceHost, again.SourceHost)
	assert.Equal(t, ev.Regarding, again.Regarding)
}
