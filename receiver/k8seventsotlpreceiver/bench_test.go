package k8seventsotlpreceiver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcmetadata "google.golang.org/grpc/metadata"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/k8sauth"
)

// BenchmarkAuthCost measures what authentication and authorization cost,
// on a real API server, through the receiver and the k8stokenauth
// extension as a collector runs them:
//
//   - steady: 20 clients, each sending a one-record request every 100 ms
//     for 10 s, with the caches' TTLs shortened to 2 s (tokens) and 4 s
//     (namespaces) so that renewals happen within the run: TokenReviews
//     and SubjectAccessReviews per second the API server receives (its own
//     apiserver_request_total), to be scaled to the default TTLs (2m, 5m);
//
//   - flood: 8 goroutines sending 2,000 requests with distinct tokens the
//     API server does not know, as fast as they are answered: the reviews
//     per second it receives (the extension's qps cap), and meanwhile the
//     latency of a client whose token is cached;
//
//   - latency: what a request gains, measured around the two checks the
//     receiver adds (the authenticator, then authorize): with cached
//     answers (10,000 requests) and with a new token and a new namespace
//     (100 requests: one TokenReview and one SubjectAccessReview each).
//
//     go test -run XXX -bench BenchmarkAuthCost -benchtime 1x ./receiver/k8seventsotlpreceiver/
func BenchmarkAuthCost(b *testing.B) {
	for range b.N {
		benchAuthCost(b)
	}
}

func benchAuthCost(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	tokens := make([]string, 20)
	for i := range tokens {
		tokens[i] = r.serviceAccount(b, "a", fmt.Sprintf("app-%d", i), "", "a")
	}
	r.clusterWide(b, "a", "app-0")
	r.startWithAuthTTL(b, func(c *Config) { c.Cache.AllowTTL = 4 * time.Second }, 2*time.Second)
	r.recv.now = time.Now

	// steady
	before := r.reviews(b)
	start := time.Now()
	var wg sync.WaitGroup
	for _, tok := range tokens {
		wg.Go(func() {
			for time.Since(start) < 10*time.Second {
				_, err := r.exportGRPC(b, tok, events("a"))
				require.NoError(b, err)
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	after := r.reviews(b)
	b.ReportMetric(float64(after.token-before.token)/elapsed, "steady-tokenreviews/s")
	b.ReportMetric(float64(after.access-before.access)/elapsed, "steady-accessreviews/s")

	// flood of distinct unknown tokens, and a cached client meanwhile; the
	// default TTLs from here on
	r.start(b, nil)
	r.recv.now = time.Now
	_, err := r.exportGRPC(b, tokens[1], events("a"))
	require.NoError(b, err)
	before = r.reviews(b)
	start = time.Now()
	var next sync.Mutex
	n := 0
	cachedConn := r.conn
	floodConn, err := grpc.NewClient(r.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer floodConn.Close()
	r.conn = floodConn // the flood's own connection: max_concurrent_streams is per connection
	for range 8 {
		wg.Go(func() {
			for {
				next.Lock()
				i := n
				n++
				next.Unlock()
				if i >= 2000 {
					return
				}
				_, _ = r.exportGRPC(b, "flood."+strconv.Itoa(i)+".token", events("a"))
			}
		})
	}
	var during []time.Duration
	for time.Since(start) < 10*time.Second {
		t0 := time.Now()
		_, err := plogotlp.NewGRPCClient(cachedConn).Export(grpcmetadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tokens[1]),
			plogotlp.NewExportRequestFromLogs(events("a")))
		require.NoError(b, err)
		during = append(during, time.Since(t0))
		time.Sleep(50 * time.Millisecond)
		next.Lock()
		done := n >= 2000
		next.Unlock()
		if done {
			break
		}
	}
	wg.Wait()
	elapsed = time.Since(start).Seconds()
	after = r.reviews(b)
	b.ReportMetric(float64(after.token-before.token)/elapsed, "flood-tokenreviews/s")
	b.ReportMetric(ms(percentile(during, 50)), "flood-cached-client-p50-ms")
	b.ReportMetric(ms(percentile(during, 99)), "flood-cached-client-p99-ms")

	// latency of the checks, cached and new
	auth := r.ext.(extensionauth.Server)
	check := func(token, ns string) time.Duration {
		t0 := time.Now()
		actx, err := auth.Authenticate(ctx, map[string][]string{"authorization": {"Bearer " + token}})
		require.NoError(b, err)
		id, ok := k8sauth.FromAuth(client.FromContext(actx).Auth)
		require.True(b, ok)
		allowed, err := r.recv.authorize(actx, &id, identityKey(&id), []string{ns})
		require.NoError(b, err)
		require.True(b, allowed[ns])
		return time.Since(t0)
	}
	var cached, fresh []time.Duration
	check(tokens[0], "a")
	for range 10000 {
		cached = append(cached, check(tokens[0], "a"))
	}
	for i := range 100 {
		tok := r.srv.ServiceAccountToken(b, "a", "app-0", time.Hour, audience) // a new token of the cluster-wide client
		fresh = append(fresh, check(tok, "ns-"+strconv.Itoa(i)))
	}
	b.ReportMetric(us(percentile(cached, 50)), "cached-p50-us")
	b.ReportMetric(us(percentile(cached, 99)), "cached-p99-us")
	b.ReportMetric(ms(percentile(fresh, 50)), "new-token-and-namespace-p50-ms")
	b.ReportMetric(ms(percentile(fresh, 99)), "new-token-and-namespace-p99-ms")
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// clusterWide lets ServiceAccount ns/name create Events in every namespace.
func (r *rig) clusterWide(tb testing.TB, ns, name string) {
	ctx, cs := context.Background(), r.srv.Clientset()
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "create-events"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	require.NoError(tb, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "create-events-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "create-events"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})
	require.NoError(tb, err)
}

// reviewCount is the reviews the API server has received so far.
type reviewCount struct{ token, access int }

func (r *rig) reviews(tb testing.TB) reviewCount {
	raw, err := r.srv.Clientset().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(tb, err)
	var c reviewCount
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="POST"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(tb, err)
		switch {
		case strings.Contains(line, `resource="tokenreviews"`):
			c.token += int(v)
		case strings.Contains(line, `resource="subjectaccessreviews"`):
			c.access += int(v)
		}
	}
	return c
}
