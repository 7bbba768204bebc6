package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// tier1MemoryLimit is the chart's memory limit of a tier-1 pod (and of
// the single tier), which an attacker must not push a collector past.
const tier1MemoryLimit = 512 << 20

// TestHostileNestedFloodWithoutToken: one client without any token opens
// two connections and sends on each 8 concurrent streams (the ready
// configurations' max_concurrent_streams), three rounds, of a request of
// about 0.9 MiB holding one attribute nested 100,000 deep: what pdata
// decodes recursively, hundreds of MB of stack per stream, when it is
// decoded before authentication. Every call is refused Unauthenticated at
// its headers (counted as refused_requests{no_token}); the same payload
// with a valid token is refused as too deep over gRPC and HTTP without
// being decoded. The collector (the ready otlp-ingestion.yaml) stays up,
// its peak RSS under a tier-1 pod's memory limit, and another client's
// record sent meanwhile becomes its Event.
func TestHostileNestedFloodWithoutToken(t *testing.T) {
	parallel(t)
	binary(t)
	r := newAuthRig(t, "a")
	app := r.serviceAccount(t, "a", "app", "a")
	const controller = "k8sevents.io/e2e-nested-flood"
	grpcAddr, httpAddr := loopback(t), loopback(t)
	c := startCollectorEnv(t, t.TempDir(), readyConfig(t, "otlp-ingestion.yaml"), append(r.kubeEnv(t),
		"OTLP_GRPC_ENDPOINT="+grpcAddr, "OTLP_HTTP_ENDPOINT="+httpAddr, "REPORTING_CONTROLLER="+controller))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	deep := nestedLogsRequest(100_000)
	require.Less(t, len(deep), 1<<20, "under the size cap: only its nesting is hostile")
	const conns, streams, rounds = 2, 8, 3
	codesSeen := make(chan codes.Code, conns*streams*rounds)
	var wg sync.WaitGroup
	for range conns {
		conn := dial(t, grpcAddr, nil)
		for range streams {
			wg.Go(func() {
				for range rounds {
					codesSeen <- status.Code(exportRaw(ctx, conn, deep))
				}
			})
		}
	}
	// Meanwhile a client with a token gets its record in.
	resp, err := exportAs(ctx, dial(t, grpcAddr, nil), app, appendOccurrences(plog.NewLogs(), "a", "survivor", "Started", 1, nil))
	require.NoError(t, err, "another client's request during the flood")
	require.Zero(t, resp.PartialSuccess().RejectedLogRecords())
	wg.Wait()
	close(codesSeen)
	for code := range codesSeen {
		assert.Equal(t, codes.Unauthenticated, code, "a call without a token")
	}
	requireRunning(t, c)
	rss, err := c.PeakRSS()
	require.NoError(t, err)
	t.Logf("collector peak RSS after %d tokenless nested requests: %d MB", conns*streams*rounds, rss>>20)
	assert.Less(t, rss, int64(tier1MemoryLimit), "peak RSS under a tier-1 pod's memory limit")
	eventually(t, time.Minute, func() (bool, string) {
		evs, err := listEvents(ctx, r.srv.Clientset(), byController(controller))
		return err == nil && len(evs) == 1 && evs[0].InvolvedObject.Name == "survivor", fmt.Sprintf("events: %d (%v)", len(evs), err)
	})
	assert.Equal(t, float64(conns*streams*rounds), c.scrape(t).Sum("otelcol_receiver_k8seventsotlp_refused_requests", "reason=no_token"),
		"refused at their headers")

	// With a token: refused for its depth, over both protocols.
	assert.Equal(t, codes.InvalidArgument, status.Code(exportRaw(withToken(ctx, app), dial(t, grpcAddr, nil), deep)), "grpc with a token")
	assert.Equal(t, http.StatusBadRequest, requireRefusedHTTP(ctx, t, httpAddr, app, deep, false), "http with a token")
	assert.Equal(t, 2.0, c.scrape(t).Sum("otelcol_receiver_k8seventsotlp_refused_requests", "reason=too_deep"))
	requireRunning(t, c)

}

// withToken is ctx carrying token as gRPC metadata.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// TestAuthClientsKeepTheirOwnSeries: two apps report the same object and
// reason, each claiming the same reporter (kubelet on node-1), through
// the ready otlp-ingestion.yaml. ops, allowed in kube-system, reports
// Node node-1 in kube-system; web, allowed only in default, reports it in
// default: each namespace gets its own Event with its own app's
// occurrences, none of the other's count or note. In one namespace, two
// apps reporting one Pod get an Event each: neither raises the other's
// count. And an app that names another's Event uid does not make that
// app's records count as repeats.
func TestAuthClientsKeepTheirOwnSeries(t *testing.T) {
	parallel(t)
	binary(t)
	r := newAuthRig(t, "a")
	ops := r.serviceAccount(t, "kube-system", "ops", "kube-system")
	web := r.serviceAccount(t, "default", "web", "default")
	other := r.serviceAccount(t, "default", "other", "default")
	const controller = "k8sevents.io/e2e-own-series"
	grpcAddr, dir := loopback(t), t.TempDir()
	env := append(r.kubeEnv(t), "OTLP_GRPC_ENDPOINT="+grpcAddr, "OTLP_HTTP_ENDPOINT="+loopback(t), "REPORTING_CONTROLLER="+controller)
	c := startCollectorEnv(t, dir, readyConfig(t, "otlp-ingestion.yaml"), env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := dial(t, grpcAddr, nil)

	node := func(ns, note string, n int) plog.Logs {
		ld := plog.NewLogs()
		for range n {
			ev := k8sevent.Event{Reason: "NodeNotReady", Note: note, Type: k8sevent.TypeWarning, Time: time.Now(), Namespace: ns,
				Regarding:           k8sevent.ObjectRef{Kind: "Node", Name: "node-1", UID: "uid-node-1", APIVersion: "v1"},
				ReportingController: "kubelet", ReportingInstance: "node-1", SourceComponent: "kubelet", SourceHost: "node-1"}
			k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		}
		return ld
	}
	send := func(token string, ld plog.Logs) {
		t.Helper()
		resp, err := exportAs(ctx, conn, token, ld)
		require.NoError(t, err)
		require.Zero(t, resp.PartialSuccess().RejectedLogRecords())
	}
	send(ops, node("kube-system", "ops: node-1 is not ready", 3))
	send(web, node("default", "web: node-1 is not ready", 2))
	uids := 0 // each app names the uids 1, 2, ...: an Event uid of the other's
	claim := func(ev *k8sevent.Event) {
		uids++
		ev.ReportingController, ev.ReportingInstance, ev.UID = "kubelet", "node-1", fmt.Sprint("uid-", uids)
	}
	send(web, appendOccurrences(plog.NewLogs(), "default", "shared", "BackOff", 4, claim))
	uids = 0
	send(other, appendOccurrences(plog.NewLogs(), "default", "shared", "BackOff", 2, claim))

	// The processor flushes its open series at the stop into the
	// exporter's persistent queue, which the next run writes.
	require.NoError(t, c.Stop(time.Minute))
	c = startCollectorEnv(t, dir, readyConfig(t, "otlp-ingestion.yaml"), env)
	want := []string{
		`default/node-1/NodeNotReady=2 "web: node-1 is not ready"`,
		`default/shared/BackOff=2 "BackOff shared"`,
		`default/shared/BackOff=4 "BackOff shared"`,
		`kube-system/node-1/NodeNotReady=3 "ops: node-1 is not ready"`,
	}
	var got []string
	eventually(t, time.Minute, func() (bool, string) {
		evs, err := listEvents(ctx, r.srv.Clientset(), byController(controller))
		if err != nil {
			return false, err.Error()
		}
		got = got[:0]
		for i := range evs {
			ev := &evs[i]
			got = append(got, fmt.Sprintf("%s/%s/%s=%d %q", ev.Namespace, ev.InvolvedObject.Name, ev.Reason, k8sevent.CoreV1Occurrences(ev), ev.Message))
		}
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("Events %q", got)
	})
	assert.Equal(t, want, got, "an Event per client and namespace, each with its own occurrences and note")
	require.NoError(t, c.Stop(time.Minute))
}
