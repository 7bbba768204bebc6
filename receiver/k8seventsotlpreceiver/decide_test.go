package k8seventsotlpreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestEventNamespaceIsWhereTheExporterWrites: the namespace authorized is
// the one the k8sevents exporter writes the Event in, after the repairs
// it makes (k8sevent.Sanitize): a record cannot name one namespace to be
// authorized and be written in another.
func TestEventNamespaceIsWhereTheExporterWrites(t *testing.T) {
	pod := k8sevent.ObjectRef{Kind: "Pod", Namespace: "a", Name: "web"}
	node := k8sevent.ObjectRef{Kind: "Node", Name: "node-1"}
	for name, tc := range map[string]struct {
		ev   k8sevent.Event
		want string
	}{
		"the regarding object's":             {k8sevent.Event{Reason: "R", Regarding: pod}, "a"},
		"its own, matching":                  {k8sevent.Event{Reason: "R", Regarding: pod, Namespace: "a"}, "a"},
		"its own, another than the object's": {k8sevent.Event{Reason: "R", Regarding: pod, Namespace: "kube-system"}, "a"},
		"cluster-scoped object: default":     {k8sevent.Event{Reason: "R", Regarding: node}, "default"},
		"cluster-scoped object: kube-system": {k8sevent.Event{Reason: "R", Regarding: node, Namespace: "kube-system"}, "kube-system"},
		"cluster-scoped object: other":       {k8sevent.Event{Reason: "R", Regarding: node, Namespace: "b"}, "default"},
		"no reason: cannot be written":       {k8sevent.Event{Regarding: pod}, ""},
		"no regarding object":                {k8sevent.Event{Reason: "R"}, ""},
		"a namespace the API server refuses": {k8sevent.Event{Reason: "R", Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: "Not_A_Label", Name: "web"}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			k8sevent.Encode(&tc.ev, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
			recs := decodeRecords(ld)
			assert.Len(t, recs, 1)
			assert.Equal(t, tc.want, recs[0].ns)
		})
	}
}

// TestBudgetPerClient: each client has its own bucket; a refused take
// says how long to wait and is not charged; a request over the burst goes
// through with a full bucket and is paid in full, so the rate holds
// whatever the requests' sizes; an evicted client comes back full.
func TestBudgetPerClient(t *testing.T) {
	b := newBudgets(PerClientConfig{RecordsPerSecond: 10, Burst: 20, MaxClients: 2})
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	_, ok := b.take("x", 20, t0)
	assert.True(t, ok, "a full bucket")
	wait, ok := b.take("x", 5, t0)
	assert.False(t, ok)
	assert.Equal(t, 500*time.Millisecond, wait, "5 records at 10/s")
	_, ok = b.take("x", 5, at(500*time.Millisecond))
	assert.True(t, ok, "after the wait it said; the refused take was not charged")
	_, ok = b.take("y", 20, t0)
	assert.True(t, ok, "another client's own bucket")

	wait, ok = b.take("x", 100, at(500*time.Millisecond))
	assert.False(t, ok)
	assert.Equal(t, 2*time.Second, wait, "more than the burst: a full bucket")
	_, ok = b.take("x", 100, at(2500*time.Millisecond))
	assert.True(t, ok, "with a full bucket")
	wait, ok = b.take("x", 1, at(2500*time.Millisecond))
	assert.False(t, ok)
	assert.Equal(t, 8100*time.Millisecond, wait, "80 records on credit and 1 more, at 10/s")
	_, ok = b.take("x", 1, at(10600*time.Millisecond))
	assert.True(t, ok, "110 records in 10.6 s from a bucket of 20: the rate held")

	_, ok = b.take("z", 1, t0) // evicts y, the least recently seen
	assert.True(t, ok)
	_, ok = b.take("y", 20, t0)
	assert.True(t, ok, "evicted: back with a full bucket")
	_, ok = b.take("z", 20, t0)
	assert.False(t, ok, "z kept its bucket: x went when y came back")
}

// TestIdentityKeyTellsIdentitiesApart: every part of an identity a
// SubjectAccessReview asks about is in its key, and parts cannot be
// shifted from one field to another.
func TestIdentityKeyTellsIdentitiesApart(t *testing.T) {
	base := k8sauth.Identity{Username: "u", UID: "1", Groups: []string{"g1", "g2"}, Extra: map[string][]string{"k": {"v"}}}
	variants := []k8sauth.Identity{
		base,
		{Username: "u", UID: "2", Groups: base.Groups, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: []string{"g1"}, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: []string{"g1g2"}, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: base.Groups, Extra: map[string][]string{"k": {"w"}}},
		{Username: "u", UID: "1", Groups: base.Groups},
		{Username: "u1", Groups: base.Groups, Extra: base.Extra},
	}
	seen := map[string]int{}
	for i := range variants {
		k := identityKey(&variants[i])
		if j, dup := seen[k]; dup {
			t.Errorf("identities %d and %d share a key", j, i)
		}
		seen[k] = i
	}
	same := base
	same.Extra = map[string][]string{"k": {"v"}}
	assert.Equal(t, identityKey(&base), identityKey(&same))
}
