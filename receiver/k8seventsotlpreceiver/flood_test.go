package k8seventsotlpreceiver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHostileRandomNamespaceFlood: an app allowed only in a names a
// fresh namespace in every record, 8 concurrent streams of requests of
// 300 records each, the way it would exhaust the one limiter of
// SubjectAccessReviews for every client (here qps 5 and a 1 s timeout:
// the flood's reviews queued ahead of another client's outlast it).
// Namespaces that do not exist are refused before any review (partial
// success, counted as no_namespace): the flood costs the API server no
// review. Meanwhile another app, its cached answer expired, has its
// record taken within the timeout.
func TestHostileRandomNamespaceFlood(t *testing.T) {
	r := newRig(t)
	flooder := r.serviceAccount(t, "a", "flood", "", "a")
	app := r.serviceAccount(t, "b", "app", "", "b")
	r.start(t, func(c *Config) {
		c.QPS, c.Burst, c.Timeout = 5, 1, time.Second
		c.PerClient.RecordsPerSecond, c.PerClient.Burst = 1e6, 1e6 // the budget is not what stops it here
		c.MaxNamespacesPerRequest = 1000
	})
	require.Eventually(t, r.recv.namespaces.synced, 10*time.Second, 10*time.Millisecond, "the namespaces are listed")
	_, err := r.exportGRPC(t, app, events("b"))
	require.NoError(t, err)
	appReviews := r.counter(accessReviews, "", "")
	r.clock.add(r.recv.cfg.Cache.AllowTTL + time.Second) // the app's answer expired

	const streams, rounds, perRequest = 8, 3, 300
	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() {
			for round := range rounds {
				var namespaces []string
				for i := range perRequest {
					namespaces = append(namespaces, fmt.Sprintf("x-%d-%d-%d", s, round, i))
				}
				resp, err := r.exportGRPC(t, flooder, events(namespaces...))
				if assert.NoError(t, err) {
					assert.Equal(t, int64(perRequest), resp.PartialSuccess().RejectedLogRecords())
				}
			}
		})
	}
	require.Eventually(t, func() bool {
		return r.counter(accessReviews, "", "") > appReviews || r.counter(refusedRecords, "reason", reasonNoNamespace) > 0
	}, 30*time.Second, time.Millisecond, "the flood has begun")
	resp, err := r.exportGRPC(t, app, events("b"))
	if assert.NoError(t, err, "the app's record is reviewed again within the timeout") {
		assert.Zero(t, resp.PartialSuccess().RejectedLogRecords())
	}
	wg.Wait()

	assert.Equal(t, int64(streams*rounds*perRequest), r.counter(refusedRecords, "reason", reasonNoNamespace))
	assert.Equal(t, 2*appReviews, r.counter(accessReviews, "", ""), "the app's reviews; none for the flood")
}

// TestHostileNamespaceSpray: an app allowed only in a names 30 namespaces
// that exist in each request. Only the first max_namespaces_per_request
// (here 5) are reviewed, the others refused unreviewed; each review not
// answered from the cache is charged to its own budget (review_cost), so
// it is throttled before it can cost more reviews than its budget pays
// for, while another app's budget and reviews are its own.
func TestHostileNamespaceSpray(t *testing.T) {
	r := newRig(t)
	var spray []string
	for i := range 30 {
		ns := fmt.Sprint("spray-", i)
		_, err := r.srv.Clientset().CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		spray = append(spray, ns)
	}
	flooder := r.serviceAccount(t, "a", "flood", "", "a")
	app := r.serviceAccount(t, "b", "app", "", "b")
	r.start(t, func(c *Config) {
		c.MaxNamespacesPerRequest = 5
		c.PerClient.RecordsPerSecond, c.PerClient.Burst, c.PerClient.ReviewCost = 1, 100, 10
	})
	require.Eventually(t, r.recv.namespaces.synced, 10*time.Second, 10*time.Millisecond, "the namespaces are listed")

	resp, err := r.exportGRPC(t, flooder, events(spray...))
	require.NoError(t, err, "first request: 30 records and 5 reviews (80) fit the burst of 100")
	assert.Equal(t, int64(30), resp.PartialSuccess().RejectedLogRecords())
	assert.Equal(t, int64(25), r.counter(refusedRecords, "reason", reasonNamespaces))
	assert.Equal(t, int64(5), r.counter(refusedRecords, "reason", reasonForbidden))
	reviews := r.counter(accessReviews, "", "")
	assert.Equal(t, int64(20), reviews, "two API groups asked twice (before and after /readyz) for each of the 5 namespaces denied")

	_, err = r.exportGRPC(t, flooder, events(spray[5:10]...))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "5 more reviews (50) and 5 records are over what is left (20): %v", err)
	assert.Equal(t, reviews, r.counter(accessReviews, "", ""), "throttled before any review")

	resp, err = r.exportGRPC(t, app, events("b"))
	require.NoError(t, err, "another app's budget is its own")
	assert.Zero(t, resp.PartialSuccess().RejectedLogRecords())
}
