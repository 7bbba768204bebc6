package k8sevent

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// referencePutIdentity is putIdentity as it was before identity slots:
// each identity key found by its string among the object's, one compare
// per key of the object. The tests hold putIdentity to it.
func referencePutIdentity(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool) {
	var keys, values [10]string
	n := 0
	add := func(k, v string) {
		if v != "" {
			keys[n], values[n] = k, v
			n++
		}
	}
	add(AttrNamespace, ref.Namespace)
	add(AttrObjectKind, ref.Kind)
	add(AttrObjectName, ref.Name)
	add(AttrObjectUID, ref.UID)
	add(AttrObjectAPIVersion, ref.APIVersion)
	add(AttrObjectFieldPath, ref.FieldPath)
	add(AttrObjectResourceVer, ref.ResourceVersion)
	if k, ok := referenceSemconvOf(ref); ok {
		add(k[1]+".name", ref.Name)
		add(k[1]+".uid", ref.UID)
		if k[1] == "k8s.pod" {
			add(AttrContainerName, containerName(ref.FieldPath))
		}
	}
	var kept uint16
	var seen uint64
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
		if !referenceIsIdentityKey(k) {
			return false
		}
		for i := range n {
			if keys[i] == k {
				keep := kept&(1<<i) == 0 && v.Type() == pcommon.ValueTypeStr && v.Str() == values[i]
				if keep {
					kept |= 1 << i
				}
				return !keep
			}
		}
		return true
	})
	attrs.EnsureCapacity(attrs.Len() + n - bits.OnesCount16(kept))
	for i := range n {
		if kept&(1<<i) == 0 {
			attrs.PutStr(keys[i], values[i])
		}
	}
}

// referenceSemconvKinds is the kinds the semantic conventions name, as
// identity.go had them: the API group and the keys' prefix.
var referenceSemconvKinds = map[string][2]string{
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

// referenceSemconvOf is semconvOf as it was, on referenceSemconvKinds.
func referenceSemconvOf(ref ObjectRef) ([2]string, bool) {
	k, ok := referenceSemconvKinds[ref.Kind]
	if !ok {
		return k, false
	}
	if ref.APIVersion != "" {
		group, _, found := strings.Cut(ref.APIVersion, "/")
		if !found {
			group = ""
		}
		if group != k[0] {
			return k, false
		}
	}
	return k, true
}

// referenceIsIdentityKey is IsIdentityKey as it was: a switch of the keys.
func referenceIsIdentityKey(k string) bool {
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

// TestIdentitySlotIsTheKeysSwitch: identitySlot finds every identity key at
// its own slot, and no key that differs from one by a byte, a cut or an
// extension, nor any contract key that is not an identity key.
func TestIdentitySlotIsTheKeysSwitch(t *testing.T) {
	for s, k := range identityKeyNames {
		require.Equal(t, s, identitySlot(k), k)
		require.True(t, referenceIsIdentityKey(k), k)
		for i := range len(k) {
			b := []byte(k)
			b[i] ^= 0x20
			require.Equal(t, -1, identitySlot(string(b)), string(b))
		}
		require.Equal(t, -1, identitySlot(k[:len(k)-1]))
		require.Equal(t, -1, identitySlot(k+"e"))
	}
	for _, k := range append(ContractKeys[:], "", "k8s", "k8s.", "service.name", "k8s.pod", "k8s.node.ip") {
		require.Equal(t, referenceIsIdentityKey(k), IsIdentityKey(k), k)
	}
}

// TestOwnResourceIsThePreviousPutIdentity: on 5,000 random resources
// (identity keys of several kinds, repeated, holding the object's values or
// others, contract and other keys) and objects, OwnResource and
// PutIdentity leave exactly the keys, values and order the previous code
// left.
func TestOwnResourceIsThePreviousPutIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 25))
	values := []string{"web-0", "pod-uid", "shop", "v1", "apps/v1", "Pod", "spec.containers{app}", "node-1", "", "x"}
	kinds := []string{"ConfigMap", "pod", ""}
	for k := range referenceSemconvKinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	apiVersions := []string{"", "v1", "apps/v1", "batch/v1", "autoscaling/v2", "example.com/v1",
		"/v1", "apps", "apps/", "appsx/v1", "app/v1", "v1/x", "batch/apps/v1"}
	pool := append(append([]string{"service.name", "k8s.cluster.name", "k8s.node.ip", ""}, IdentityKeys...), ContractKeys[:]...)
	for n := range 5000 {
		var kvs [][2]string
		for range rng.IntN(14) {
			kvs = append(kvs, [2]string{pool[rng.IntN(len(pool))], values[rng.IntN(len(values))]})
		}
		pick := func() string { return values[rng.IntN(len(values))] }
		ref := ObjectRef{Kind: kinds[rng.IntN(len(kinds))], Namespace: pick(), Name: pick(), UID: pick(),
			APIVersion: apiVersions[rng.IntN(len(apiVersions))], FieldPath: pick(), ResourceVersion: pick()}
		var owned KeySet
		if rng.IntN(2) == 0 {
			owned = OwnedKeySet
		}
		dupKeys := rng.IntN(3) == 0
		got, want := ResourceWith(t, kvs...), ResourceWith(t, kvs...)
		if owned == 0 && !dupKeys && rng.IntN(2) == 0 {
			PutIdentity(got, ref)
		} else {
			OwnResource(got, ref, owned, dupKeys)
		}
		referencePutIdentity(want, ref, owned, dupKeys)
		require.Equal(t, orderedAttrs(want), orderedAttrs(got), "case %d: %v on %+v", n, kvs, ref)
	}
}

// ResourceWith is a resource's attributes holding kvs in order, repeated
// keys included (the wire format allows them; pcommon.Map's setters do
// not). Exported for the package's external tests.
func ResourceWith(t testing.TB, kvs ...[2]string) pcommon.Map {
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

// orderedAttrs is a map's keys and values in order, repeats included.
func orderedAttrs(m pcommon.Map) []string {
	var out []string
	for k, v := range m.All() {
		out = append(out, k+"="+v.AsString())
	}
	return out
}
