package k8seventsreceiver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/apimodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/memstorage"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

const (
	manyNS       = "many"
	manyPageSize = 500
	// manyEvents is more than a relist could remember by object: the
	// interrupted relist below emits manyPages-1 pages, past that bound.
	manyPages  = (maxRelistEmitted+manyPageSize-1)/manyPageSize + 2
	manyEvents = manyPages * manyPageSize
)

// manyName is the name of Event i; they list in i's order.
func manyName(i int) string { return fmt.Sprintf("e-%05d", i) }

// lastPage is the first Event of the relist's last page.
var lastPage = manyName((manyPages - 1) * manyPageSize)

// TestExactInterruptedRelistOfManyEventsEmitsEachVersionOnce: a receiver
// (api v1, initial: none, storage) starts on the in-process API server
// model and stops; during the gap manyEvents Events are written, some
// patched, and the history is compacted. Started again (410, relist), it
// emits every page but the last, more objects than maxRelistEmitted, and
// then cannot get the last page through: the pipeline refuses it, or the
// API server fails it, until the receiver stops. Meanwhile Events on the
// emitted pages occur again. Started once more with everything healthy,
// the relist goes on: every version of every Event is emitted exactly once,
// so the occurrences the records add up to are each Event's count.
func TestExactInterruptedRelistOfManyEventsEmitsEachVersionOnce(t *testing.T) {
	for _, fault := range []string{"pipeline", "list"} {
		t.Run(fault+" fails", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { exactManyRelist(t, fault) })
		})
	}
}

func exactManyRelist(t *testing.T, fault string) {
	srv := apimodel.New(apimodel.Options{})
	srv.AddUser("admin-token", "admin", "system:masters")
	srv.CreateNamespace(manyNS)
	adminCfg := srv.RESTConfig("admin-token")
	adminCfg.QPS, adminCfg.Burst = 1e6, 1e6
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	store := memstorage.New()
	var failPages atomic.Bool // the API server fails the relist's last page
	var failedPages atomic.Int64
	start := func(next consumer.Logs) *k8seventsReceiver {
		return startInModel(t, store, next, func() *rest.Config {
			cfg := srv.RESTConfig("admin-token")
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return &pageFault{next: rt, on: &failPages, n: manyPages - 1, failed: &failedPages}
			})
			return cfg
		})
	}

	first := start(consumertest.NewNop())
	untilInBubble(t, "the first start is watching", first.watching)
	require.NoError(t, first.Shutdown(context.Background()))

	for i := range manyEvents {
		createManyEvent(t, admin, manyName(i))
	}
	for i := 7; i < manyEvents; i += manyPageSize - 1 { // on every page: occurred again during the gap
		occurManyEvent(t, admin, manyName(i))
	}
	srv.Compact()

	sink := new(consumertest.LogsSink)
	pipeline := &refusing{sink: sink, name: lastPage}
	pipeline.on.Store(fault == "pipeline")
	failPages.Store(fault == "list")
	second := start(pipeline)
	untilInBubble(t, "every page but the last emitted", func() bool {
		return sink.LogRecordCount() >= (manyPages-1)*manyPageSize
	})
	time.Sleep(time.Minute) // the receiver retries the last page meanwhile
	synctest.Wait()
	require.NoError(t, second.Shutdown(context.Background()))
	interrupted := received(t, sink)
	require.Greater(t, len(interrupted), maxRelistEmitted, "the interrupted relist emitted more than it can remember by object")
	require.Positive(t, pipeline.refused.Load()+failedPages.Load(), "the last page failed")
	for _, name := range []string{manyName(3), manyName(7), manyName(maxRelistEmitted + 1)} {
		occurManyEvent(t, admin, name) // on emitted pages, after the interrupted relist listed them
	}

	pipeline.on.Store(false)
	failPages.Store(false)
	again := new(consumertest.LogsSink)
	third := start(again)
	untilInBubble(t, "the relist completed and the watch is open", third.watching)
	synctest.Wait()
	require.NoError(t, third.Shutdown(context.Background()))

	records := append(interrupted, received(t, again)...)
	counts := map[string][]int64{}
	for _, ev := range records {
		counts[ev.Name] = append(counts[ev.Name], ev.Occurrences())
	}
	stored, err := admin.CoreV1().Events(manyNS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, stored.Items, manyEvents)
	twice, lost := 0, 0
	for i := range stored.Items {
		want := k8sevent.FromCoreV1(&stored.Items[i])
		got := counts[want.Name]
		var sum, prev int64
		rising := true
		for _, c := range got {
			rising = rising && c > prev
			sum, prev = sum+max(c-prev, 0), c
		}
		if !rising {
			twice++
			if twice <= 5 {
				t.Errorf("%s: a version emitted twice: counts %v", want.Name, got)
			}
		}
		if sum != want.Occurrences() {
			lost++
			if lost <= 5 {
				t.Errorf("%s: occurrences emitted %d, want %d (counts %v)", want.Name, sum, want.Occurrences(), got)
			}
		}
		delete(counts, want.Name)
	}
	assert.Zero(t, twice, "Events with a version emitted twice")
	assert.Zero(t, lost, "Events whose emitted occurrences are not their count")
	assert.Empty(t, counts, "records of Events the server does not hold")
}

// pageFault fails, while on, every list request for page n (from 0) of a
// list: the n-th continued request since the last list without continue.
type pageFault struct {
	next   http.RoundTripper
	on     *atomic.Bool
	n      int
	failed *atomic.Int64 // pages failed

	mu   sync.Mutex
	page int
}

func (f *pageFault) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method == http.MethodGet && q.Get("watch") == "" && q.Get("limit") != "" {
		f.mu.Lock()
		if q.Get("continue") == "" {
			f.page = 0
		} else {
			f.page++
		}
		fail := f.on.Load() && f.page == f.n
		f.mu.Unlock()
		if fail {
			f.failed.Add(1)
			if req.Body != nil {
				req.Body.Close()
			}
			return &http.Response{
				Status: "500 Internal Server Error", StatusCode: http.StatusInternalServerError,
				Header: http.Header{"Content-Type": {"text/plain"}}, Body: http.NoBody, Request: req,
			}, nil
		}
	}
	return f.next.RoundTrip(req)
}

func createManyEvent(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	now := metav1.Now()
	_, err := cs.CoreV1().Events(manyNS).Create(context.Background(), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: manyNS},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: manyNS, Name: name, APIVersion: "v1"},
		Reason:         "BackOff", Message: "back-off", Type: corev1.EventTypeWarning, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: now, LastTimestamp: now,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// occurManyEvent writes one more occurrence of Event name, as client-go's
// recorder does on a repeat.
func occurManyEvent(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ev, err := cs.CoreV1().Events(manyNS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	ev.Count++
	ev.LastTimestamp = metav1.Now()
	_, err = cs.CoreV1().Events(manyNS).Update(context.Background(), ev, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// startInModel runs a receiver (api v1, namespace manyNS, storage in
// store, pages of manyPageSize) on the API server model inside the
// test's bubble.
func startInModel(t *testing.T, store *memstorage.Storage, next consumer.Logs, restConfig func() *rest.Config) *k8seventsReceiver {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.InProcess = restConfig
	cfg.API, cfg.Namespaces, cfg.ListPageSize = k8sevent.APICoreV1, []string{manyNS}, manyPageSize
	id := storageID
	cfg.Storage = &id
	require.NoError(t, cfg.Validate())
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	rcv, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), host{storageID: store}))
	t.Cleanup(func() { require.NoError(t, rcv.Shutdown(context.Background())) })
	return rcv.(*k8seventsReceiver)
}

// untilInBubble lets the bubble's virtual time run, a second at a time,
// until cond holds; at most an hour of it.
func untilInBubble(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 3600 {
		synctest.Wait()
		if cond() {
			return
		}
		time.Sleep(time.Second)
	}
	require.FailNow(t, "not within an hour of virtual time: "+what)
}
