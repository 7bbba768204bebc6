package k8sevent_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// resourceWith is a resource's attributes holding kvs in order, repeated
// keys included (the wire format allows them; pcommon.Map's setters do
// not).
func resourceWith(t *testing.T, kvs ...[2]string) pcommon.Map {
	t.Helper()
	js := `{"resourceLogs":[{"resource":{"attributes":[`
	for i, kv := range kvs {
		if i > 0 {
			js += ","
		}
		js += fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, kv[0], kv[1])
	}
	js += `]}}]}`
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs([]byte(js))
	require.NoError(t, err)
	attrs := ld.ResourceLogs().At(0).Resource().Attributes()
	require.Equal(t, len(kvs), attrs.Len())
	return attrs
}

// TestPutIdentityOverHeldIdentity: a resource that already names the
// object (contrib's receiver), with a second copy of a key holding another
// value, a first copy holding a wrong value, and another kind's key: each
// identity key is there once, with the object's value, and nothing else
// changes.
func TestPutIdentityOverHeldIdentity(t *testing.T) {
	attrs := resourceWith(t,
		[2]string{"k8s.object.kind", "Pod"},
		[2]string{"k8s.object.name", "web-0"},
		[2]string{"service.name", "app"},
		[2]string{"k8s.object.name", "other"}, // a second copy: removed
		[2]string{"k8s.object.uid", "stale"},  // a wrong first copy, then the right one
		[2]string{"k8s.object.uid", "pod-uid"},
		[2]string{"k8s.node.name", "node-1"}, // the sender's node: not the object's identity
		[2]string{"k8s.deployment.name", "web"},
		[2]string{"k8s.object.resource_version", ""},
		[2]string{"k8s.object.kind", "Pod"}, // a second copy of the right value: removed too
	)
	k8sevent.PutIdentity(attrs, web0)
	want := web0Identity(map[string]any{"service.name": "app"})
	require.Equal(t, want, attrs.AsRaw())
	require.Equal(t, len(want), attrs.Len(), "every key once")
}

// TestKeySetRemovesAsRemoveKeys: removing a KeySet removes what RemoveKeys
// removes given the same keys, every copy, on maps of random contract and
// other keys.
func TestKeySetRemovesAsRemoveKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	other := []string{"service.name", "k8s.pod.name", "k8s.event", "k8s.event.uidx", "", "k8s.e"}
	for range 200 {
		var keys []string
		for _, k := range k8sevent.ContractKeys {
			if rng.IntN(3) == 0 {
				keys = append(keys, k)
			}
		}
		var kvs [][2]string
		for range rng.IntN(20) {
			k := other[rng.IntN(len(other))]
			if rng.IntN(2) == 0 {
				k = k8sevent.ContractKeys[rng.IntN(len(k8sevent.ContractKeys))]
			}
			kvs = append(kvs, [2]string{k, "v"})
		}
		a, b := resourceWith(t, kvs...), resourceWith(t, kvs...)
		k8sevent.RemoveKeys(a, keys)
		k8sevent.NewKeySet(keys...).Remove(b)
		require.Equal(t, a.AsRaw(), b.AsRaw())
		require.Equal(t, a.Len(), b.Len())
	}
	require.Panics(t, func() { k8sevent.NewKeySet("service.name") })
}
