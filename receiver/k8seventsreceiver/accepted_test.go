package k8seventsreceiver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// auditedStorage is a storage extension whose clients call written with
// every value set, before setting it.
type auditedStorage struct {
	storage.Extension
	written func(key string, value []byte)
}

func (s auditedStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := s.Extension.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, fmt.Errorf("audited storage: %w", err)
	}
	return auditedClient{Client: c, written: s.written}, nil
}

type auditedClient struct {
	storage.Client
	written func(key string, value []byte)
}

func (c auditedClient) Set(ctx context.Context, key string, value []byte) error {
	c.written(key, value)
	return c.Client.Set(ctx, key, value)
}

// write is one write of the test to an Event: the count it set, and the
// resourceVersion the API server gave it.
type write struct {
	name            string
	count           int32
	resourceVersion string
}

// occur writes occurrence count of the core/v1 Event name: a create for the
// first, else an update of its count.
func (r *rig) occur(t *testing.T, ns, name string, count int32) write {
	t.Helper()
	ctx := context.Background()
	events := r.cs.CoreV1().Events(ns)
	now := metav1.Now()
	if count == 1 {
		ev, err := events.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, APIVersion: "v1"},
			Reason:         "BackOff", Message: "restarting", Type: corev1.EventTypeWarning, Count: 1,
			Source:         corev1.EventSource{Component: "kubelet"},
			FirstTimestamp: now, LastTimestamp: now,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return write{name, count, ev.ResourceVersion}
	}
	ev, err := events.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	ev.Count, ev.LastTimestamp = count, now
	ev, err = events.Update(ctx, ev, metav1.UpdateOptions{})
	require.NoError(t, err)
	return write{name, count, ev.ResourceVersion}
}

// TestCheckpointCoversOnlyAcceptedRecords: the receiver's half of "a crash
// loses nothing" (the processor's write-ahead log is the other half): every
// checkpoint it writes covers only records the next consumer had accepted
// when it was written. The pipeline refuses the record of a series' last
// occurrence once, five times, or until the receiver stops; every
// checkpoint written meanwhile and at the stop is checked against the
// records accepted by then, and the receiver started again emits each
// count of each Event exactly once over both runs.
func TestCheckpointCoversOnlyAcceptedRecords(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name  string
		limit int64 // refusals; 0: until the receiver stops
	}{{"once", 1}, {"for a while", 5}, {"until stopped", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("accepted-%d", tc.limit)
			r.namespace(t, ns)
			sink := new(consumertest.LogsSink)
			pipeline := &refusing{sink: sink, name: "e-0", limit: tc.limit}

			var mu sync.Mutex
			var writes []write
			var checked int
			var violations []string
			// A checkpoint written must not cover a write whose record
			// the pipeline had not accepted by then.
			audit := func(_ string, value []byte) {
				c := newCheckpoint(recentSize)
				if err := c.unmarshal(value); err != nil || c.ResourceVersion == "" {
					return
				}
				evs, _ := decodeAll(sink)
				accepted := occurrences(evs)
				mu.Lock()
				defer mu.Unlock()
				checked++
				for _, w := range writes {
					order, err := resourceversion.CompareResourceVersion(w.resourceVersion, c.ResourceVersion)
					if err == nil && order <= 0 && !slices.Contains(accepted[w.name], int64(w.count)) {
						violations = append(violations, fmt.Sprintf("checkpoint %s covers %s count %d (version %s), not accepted",
							c.ResourceVersion, w.name, w.count, w.resourceVersion))
					}
				}
			}
			dir := t.TempDir()
			audited := func() host { // a new extension at each start, as in a collector
				h := fileStorage(t, dir)
				h[storageID] = auditedStorage{Extension: h[storageID].(storage.Extension), written: audit}
				return h
			}
			occur := func(name string, count int32) {
				mu.Lock() // the audit must see the write once the API server has it
				defer mu.Unlock()
				writes = append(writes, r.occur(t, ns, name, count))
			}

			first := r.startInto(t, audited(), r.kubeconfig, pipeline, withStorage(ns))
			watching(t, first)
			occur("e-0", 1)
			occur("e-1", 1)
			occur("e-0", 2)
			occur("e-2", 1)
			waitReceived(t, sink, 4)
			pipeline.on.Store(true)
			occur("e-0", 3) // the series' last occurrence, refused
			refusals := tc.limit
			if refusals == 0 {
				refusals = 3 // and more, until the stop
			}
			require.Eventually(t, func() bool { return pipeline.refused.Load() >= refusals },
				60*time.Second, 10*time.Millisecond, "the pipeline refused e-0's last record")
			if tc.limit > 0 {
				waitReceived(t, sink, 5)
			}
			require.NoError(t, first.Shutdown(context.Background()))
			pipeline.on.Store(false)

			r.startInto(t, audited(), r.kubeconfig, pipeline, withStorage(ns))
			occur("sentinel", 1)
			got := occurrences(waitFor(t, sink, "sentinel"))
			assert.Equal(t, map[string][]int64{"e-0": {1, 2, 3}, "e-1": {1}, "e-2": {1}, "sentinel": {1}}, got,
				"each count of each Event once over both runs")
			mu.Lock()
			defer mu.Unlock()
			assert.Positive(t, checked, "checkpoints were written and checked")
			assert.Empty(t, violations)
		})
	}
}
