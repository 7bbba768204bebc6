package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	refusedRecords = "otelcol_receiver_k8seventsotlp_refused_records"
	authRefusals   = "otelcol_extension_k8stokenauth_refusals"
)

// TestAuthIngestion runs the ready otlp-ingestion.yaml (apps → k8stokenauth
// + k8seventsotlp → eventseries → k8sevents) on a real API server with
// real ServiceAccounts and TokenRequest tokens, its caches' TTLs shortened
// to seconds (shortTTLs).
func TestAuthIngestion(t *testing.T) {
	parallel(t)
	binary(t)
	r := newAuthRig(t, "a", "b")
	app := r.serviceAccount(t, "a", "app", "a")
	const controller = "k8sevents.io/e2e-auth"
	grpcAddr, httpAddr := loopback(t), loopback(t)
	c := startCollectorEnv(t, t.TempDir(), readyConfig(t, "otlp-ingestion.yaml"), append(r.kubeEnv(t),
		"OTLP_GRPC_ENDPOINT="+grpcAddr, "OTLP_HTTP_ENDPOINT="+httpAddr, "REPORTING_CONTROLLER="+controller), shortTTLs)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := dial(t, grpcAddr, nil)
	want := map[string]int64{} // what is allowed, to be written exactly

	// A ServiceAccount allowed in a: its records for a written, those for
	// b refused (partial success) and counted, over gRPC and HTTP.
	t.Run("allowed namespace written, other refused", func(t *testing.T) {
		ld := appendOccurrences(plog.NewLogs(), "a", "web-g", "Started", 5, nil)
		resp, err := exportAs(ctx, conn, app, appendOccurrences(ld, "b", "web-g", "Started", 3, nil))
		require.NoError(t, err)
		assert.Equal(t, int64(3), resp.PartialSuccess().RejectedLogRecords())
		assert.Contains(t, resp.PartialSuccess().ErrorMessage(), "system:serviceaccount:a:app may not create events in namespace b")
		code, hresp := postAs(ctx, t, httpAddr, app, appendOccurrences(appendOccurrences(plog.NewLogs(), "b", "web-h", "Pulled", 2, nil), "a", "web-h", "Pulled", 4, nil))
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, int64(2), hresp.PartialSuccess().RejectedLogRecords())
		want["a/web-g/Started"], want["a/web-h/Pulled"] = 5, 4
		assert.Equal(t, 5.0, c.scrape(t).Sum(refusedRecords, "reason=forbidden"))
	})

	// Refused before any record is looked at: no token, a token for
	// another audience, an expired one (gRPC Unauthenticated, HTTP 401).
	t.Run("no token, wrong audience, expired token refused", func(t *testing.T) {
		for name, token := range map[string]string{
			"no token":       "",
			"wrong audience": r.srv.ServiceAccountToken(t, "a", "app", time.Hour, "someone-else"),
			"expired":        r.srv.ExpiredToken(t, app),
		} {
			_, err := exportAs(ctx, conn, token, appendOccurrences(plog.NewLogs(), "a", "web-x", "Refused", 1, nil))
			assert.Equal(t, codes.Unauthenticated, status.Code(err), "grpc, %s: %v", name, err)
			code, _ := postAs(ctx, t, httpAddr, token, appendOccurrences(plog.NewLogs(), "a", "web-x", "Refused", 1, nil))
			assert.Equal(t, http.StatusUnauthorized, code, "http, %s", name)
		}
		m := c.scrape(t)
		assert.Equal(t, 1.0, m.Sum(authRefusals, "reason=missing"), "http: the authenticator refuses")
		assert.Equal(t, 1.0, m.Sum("otelcol_receiver_k8seventsotlp_refused_requests", "reason=no_token"), "grpc: refused at the stream's headers")
		assert.Equal(t, 4.0, m.Sum(authRefusals, "reason=invalid"))
	})

	// A deleted ServiceAccount's token: accepted until the cached answer
	// (allow_ttl) runs out, refused from then; the API server itself
	// accepts the token for up to 10 s more (its cache of authenticated
	// tokens, kube-apiserver's TokenSuccessCacheTTL).
	t.Run("deleted ServiceAccount refused within allow_ttl", func(t *testing.T) {
		token := r.serviceAccount(t, "a", "gone", "a")
		_, err := exportAs(ctx, conn, token, appendOccurrences(plog.NewLogs(), "a", "web-gone", "Started", 1, nil))
		require.NoError(t, err)
		want["a/web-gone/Started"] = 1
		require.NoError(t, r.srv.Clientset().CoreV1().ServiceAccounts("a").Delete(ctx, "gone", metav1.DeleteOptions{}))
		deleted := time.Now()
		took := untilCode(t, testAllowTTL+apiServerTokenCache+10*time.Second, codes.Unauthenticated, func() error {
			resp, err := exportAs(ctx, conn, token, appendOccurrences(plog.NewLogs(), "a", "web-gone", "Started", 1, nil))
			if err == nil {
				want["a/web-gone/Started"] += 1 - resp.PartialSuccess().RejectedLogRecords()
			}
			return err
		}, deleted)
		t.Logf("deleted ServiceAccount refused %v after its deletion (allow_ttl %v, the API server's cache %v)",
			took.Round(time.Millisecond), testAllowTTL, apiServerTokenCache)
		assert.LessOrEqual(t, took, testAllowTTL+apiServerTokenCache+2*time.Second, "refused within allow_ttl and the API server's cache (plus a request)")
	})

	// A Role granted later: refused until the cached denial (deny_ttl)
	// runs out, written from then.
	t.Run("Role granted later takes effect within deny_ttl", func(t *testing.T) {
		token := r.serviceAccount(t, "a", "late")
		send := func() int64 {
			resp, err := exportAs(ctx, conn, token, appendOccurrences(plog.NewLogs(), "a", "web-late", "Started", 1, nil))
			require.NoError(t, err)
			want["a/web-late/Started"] += 1 - resp.PartialSuccess().RejectedLogRecords()
			return resp.PartialSuccess().RejectedLogRecords()
		}
		require.Equal(t, int64(1), send())
		r.grant(t, "a", "a", "late")
		granted := time.Now()
		for send() != 0 {
			require.Less(t, time.Since(granted), testDenyTTL+10*time.Second, "still refused")
			time.Sleep(200 * time.Millisecond)
		}
		took := time.Since(granted)
		t.Logf("Role granted: records written %v later (deny_ttl %v)", took.Round(time.Millisecond), testDenyTTL)
		assert.LessOrEqual(t, took, testDenyTTL+2*time.Second, "written within deny_ttl (plus a request)")
	})

	// Counts stay exact for what is allowed: after the stop (the processor
	// flushes its open series) and the next start (which writes what the
	// stop left in the exporter's queue), each object's Event holds exactly
	// the occurrences accepted; nothing in b.
	c.stopAndWrite(t, time.Minute, func() (bool, string) {
		got := eventCounts(ctx, t, r, controller)
		return maps.Equal(got, want), fmt.Sprintf("Events %v, want %v", got, want)
	})
}

// apiServerTokenCache is how long kube-apiserver keeps accepting a token
// it authenticated (TokenSuccessCacheTTL, not a flag).
const apiServerTokenCache = 10 * time.Second

// untilCode calls send every 200 ms until it fails with code, at most
// limit after since, and answers how long after since that was.
func untilCode(t *testing.T, limit time.Duration, code codes.Code, send func() error, since time.Time) time.Duration {
	t.Helper()
	for {
		err := send()
		if status.Code(err) == code {
			return time.Since(since)
		}
		require.True(t, err == nil, "unexpected: %v", err)
		require.Less(t, time.Since(since), limit, "not refused")
		time.Sleep(200 * time.Millisecond)
	}
}

// tiers is one tier-1 collector in front of one tier-2 collector, the
// ready configurations with mutual TLS between them.
type tiers struct {
	tier1, tier2 *collector
	startTier2   func() *collector
	grpc, http   string // tier 1's
	tier2Addr    string
	sinks        []string // tier 2's file sink, one per run
}

const tiersController = "k8sevents.io/e2e-tiers"

// startTiers runs tier 2 (with a file sink beside its exporter, and
// tier2Overlays), then tier 1 routing to it, for cluster east.
func startTiers(t *testing.T, r *authRig, tier2Overlays ...string) *tiers {
	t.Helper()
	dir := t.TempDir()
	tr := &tiers{grpc: loopback(t), http: loopback(t), tier2Addr: loopback(t)}
	env2 := append(slices.Concat(r.kubeEnv(t), r.tls.env(), r.tier1.env()), "OTLP_GRPC_ENDPOINT="+tr.tier2Addr, "STORAGE_DIR="+filepath.Join(dir, "storage"),
		"REPORTING_CONTROLLER="+tiersController, "REPORTING_INSTANCE=tier2-0")
	tr.startTier2 = func() *collector {
		tr.sinks = append(tr.sinks, sinkFile(dir, len(tr.sinks)))
		return startCollectorEnv(t, filepath.Join(dir, "tier2"), readyConfig(t, "tier2-processor.yaml"), env2,
			append([]string{sinkOverlay(tr.sinks[len(tr.sinks)-1], "k8sevents")}, tier2Overlays...)...)
	}
	tr.tier2 = tr.startTier2()
	env1 := append(slices.Concat(r.kubeEnv(t), r.tls.env(), r.tier1.env()), "OTLP_GRPC_ENDPOINT="+tr.grpc, "OTLP_HTTP_ENDPOINT="+tr.http,
		"TIER2_ENDPOINTS=["+tr.tier2Addr+"]", "CLUSTER_NAME=east")
	tr.tier1 = startCollectorEnv(t, filepath.Join(dir, "tier1"), readyConfig(t, "tier1-loadbalancer.yaml"), env1, shortTTLs)
	return tr
}

// stop stops tier 1 (its queue drains into tier 2), waits until tier 2
// has written what it emitted, stops it (its processor flushes the open
// series into the exporter's persistent queue), and runs it once more
// until the Events tier 2 wrote hold want (namespace/pod/reason →
// occurrences), or a minute has passed.
func (tr *tiers) stop(ctx context.Context, t *testing.T, r *authRig, want map[string]int64) {
	t.Helper()
	require.NoError(t, tr.tier1.Stop(time.Minute))
	awaitExported(t, tr.tier2)
	require.NoError(t, tr.tier2.Stop(time.Minute))
	tr.tier2 = tr.startTier2()
	eventually(t, time.Minute, func() (bool, string) {
		got := eventCounts(ctx, t, r, tiersController)
		return maps.Equal(got, want), fmt.Sprintf("Events %v, want %v", got, want)
	})
	require.NoError(t, tr.tier2.Stop(time.Minute))
}

// forEachSinkRecord calls f with every record tier 2's file sinks got.
func (tr *tiers) forEachSinkRecord(t *testing.T, f func(res, rec pcommon.Map)) {
	t.Helper()
	for _, sink := range tr.sinks {
		if _, err := os.Stat(sink); err == nil {
			forEachFileRecord(t, sink, f)
		}
	}
}

// TestAuthTiers runs the ready tier1-loadbalancer.yaml in front of
// tier2-processor.yaml, mutual TLS between them with certificates made
// here: tier 1 authenticates and authorizes, over gRPC and HTTP; tier 2
// writes what it was given with exact counts, each record stamped with its
// client and tier 1's cluster; tier 2 takes no connection but tier 1's.
func TestAuthTiers(t *testing.T) {
	parallel(t)
	binary(t)
	r := newAuthRig(t, "a", "b")
	app := r.serviceAccount(t, "a", "app", "a")
	tr := startTiers(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	t.Run("through tier 1: allowed written, other refused", func(t *testing.T) {
		resp, err := exportAs(ctx, dial(t, tr.grpc, nil), app,
			appendOccurrences(appendOccurrences(plog.NewLogs(), "a", "web-g", "Started", 6, nil), "b", "web-g", "Started", 2, nil))
		require.NoError(t, err)
		assert.Equal(t, int64(2), resp.PartialSuccess().RejectedLogRecords())
		code, hresp := postAs(ctx, t, tr.http, app, appendOccurrences(appendOccurrences(plog.NewLogs(), "a", "web-h", "Pulled", 3, nil), "b", "web-h", "Pulled", 1, nil))
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, int64(1), hresp.PartialSuccess().RejectedLogRecords())
		_, err = exportAs(ctx, dial(t, tr.grpc, nil), "", appendOccurrences(plog.NewLogs(), "a", "web-g", "Started", 1, nil))
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "tier 1 without a token")
	})

	// A certificate of the CA is not tier 1: read from the Secret, or
	// issued again by whoever may, it gets nowhere without tier 1's
	// identity, and a token for tier 2's audience is no such identity
	// either (any pod may have one projected).
	t.Run("tier 2 takes only tier 1's certificate and identity", func(t *testing.T) {
		other := writeTLS(t, t.TempDir(), "other")
		intruder := r.serviceAccount(t, "a", "intruder")
		intruderTier2 := r.srv.ServiceAccountToken(t, "a", "intruder", time.Hour, tier1Audience)
		certOf := func(f tlsFiles) *grpc.ClientConn { return dial(t, tr.tier2Addr, r.tls.clientTLS(t, f)) }
		for name, c := range map[string]*grpcConnCase{
			"plaintext":                   {conn: dial(t, tr.tier2Addr, nil), token: r.tier1.token},
			"TLS, no client cert":         {conn: certOf(tlsFiles{}), token: r.tier1.token},
			"client cert of another CA":   {conn: certOf(other), token: r.tier1.token},
			"the CA's cert, no token":     {conn: certOf(r.tls)},
			"the CA's cert, an app token": {conn: certOf(r.tls), token: intruder},
			"the CA's cert, another's token for tier 2's audience": {conn: certOf(r.tls), token: intruderTier2, code: codes.Unauthenticated},
			"tier 1's certificate and token":                       {conn: certOf(r.tls), token: r.tier1.token, ok: true},
		} {
			_, err := exportAs(ctx, c.conn, c.token, plog.NewLogs()) // an empty request: nothing to write
			switch {
			case c.ok:
				assert.NoError(t, err, name)
			case c.code != codes.OK:
				assert.Equal(t, c.code, status.Code(err), "%s: %v", name, err)
			default:
				assert.Error(t, err, name)
			}
		}
	})

	// tier 2 wrote exactly what tier 1 allowed, nothing in b
	tr.stop(ctx, t, r, map[string]int64{"a/web-g/Started": 6, "a/web-h/Pulled": 3})
	clients, clusters := map[string]int{}, map[string]int{}
	tr.forEachSinkRecord(t, func(res, rec pcommon.Map) {
		if v, ok := rec.Get("k8s.event.client"); ok {
			clients[v.Str()]++
		}
		cluster, _ := rec.Get("k8s.cluster.name")
		if cluster.Str() == "" {
			cluster, _ = res.Get("k8s.cluster.name")
		}
		clusters[cluster.Str()]++
	})
	assert.Equal(t, []string{"system:serviceaccount:a:app"}, slices.Sorted(maps.Keys(clients)), "the client tier 1 stamped")
	assert.Equal(t, []string{"east"}, slices.Sorted(maps.Keys(clusters)), "tier 1's cluster on every record")
}

type grpcConnCase struct {
	conn  *grpc.ClientConn
	token string
	code  codes.Code // when not OK: the refusal's code
	ok    bool
}
