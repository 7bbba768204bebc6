package k8sevent

import "go.opentelemetry.io/collector/pdata/pcommon"

// AttrClient is the authenticated client a record came from (its
// Kubernetes username, e.g. system:serviceaccount:shop:web), written by the
// k8seventsotlp receiver on every record it passes on, for a next tier to
// tell clients apart. Not a part of the Event: the codec does not read it.
const AttrClient = "k8s.event.client"

// clusterKeys are what a record says of its cluster.
var clusterKeys = NewKeySet(AttrClusterName, AttrClusterUID)

// ClearOrigin removes every copy of the cluster keys and AttrClient from
// attrs: a record's or a resource's (the codec reads a resource's key
// when the record has none), so that what its sender claimed is gone.
func ClearOrigin(attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return k == AttrClient || clusterKeys.Has(k) })
}

// PutOrigin clears a record's origin (ClearOrigin) and writes the one the
// receiver knows: the client, and the cluster (empty fields: none).
func PutOrigin(attrs pcommon.Map, client string, c Cluster) {
	ClearOrigin(attrs)
	putStr(attrs, AttrClient, client)
	EncodeCluster(attrs, c)
}

// Client is the AttrClient a record carries, or "".
func Client(attrs pcommon.Map) string {
	if v, ok := attrs.Get(AttrClient); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}
