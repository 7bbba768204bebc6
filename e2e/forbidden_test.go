package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// startingWrites is how many Event writes the restarted destination refuses
// with 403 before its authorizer counts as synced: each one a record the
// exporter dropped for good before it told a starting API server's 403 from
// an RBAC gap. The storm's series are in few namespaces, so few lanes retry
// after the restart, each every 5 s at most (fastRetry): four take about
// 20 s.
const startingWrites = 4

// TestExactDestinationStartingAnswers403: as in
// TestFaultDestinationDownAsStormEnds (storage on, as mirror.yaml), B is
// down for 30 s as the storm ends (finish_after 5s: every series' finished
// record waits for B), then
// started again on the same etcd. For a while it answers as a real
// kube-apiserver does in the moment it serves before its RBAC informers
// have synced: 403 to every Event write, and 403 to /readyz. A proxy in
// front of B (the collector's only way to it) gives those answers to the
// first startingWrites writes after the restart, so that the exporter meets
// them whatever the timing, rather than a race with a 100 ms window; then
// it forwards again. Every occurrence arrives: the promise of the fault
// tests holds, the 403s were retried (retryable_failures{reason=forbidden})
// and nothing was dropped for good (logPipeline).
func TestExactDestinationStartingAnswers403(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	occs := faultStorm(t, 4*time.Minute, 2*time.Minute, 8*time.Second)
	rig := newFaultRig(ctx, t, "starting403", occs, mirrorSpec{api: "events.k8s.io/v1", storage: "on", finishAfter: "5s", fastRetry: true}, kubetest.OwnServer())
	p, err := faultproxy.NewForREST(rig.dstSrv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	rig.spec.kubeB = filepath.Join(rig.dir, "kubeconfig-b-proxy")
	require.NoError(t, p.WriteKubeconfig(rig.spec.kubeB))

	c := rig.collector(t)
	st := rig.storm(ctx, faultSpeed).wait(ctx, t)
	down := rig.stopDestination(ctx, t)
	eventually(t, 2*time.Minute, func() (bool, string) {
		m := c.scrape(t)
		open := m.Pipeline().Open
		return open == 0 && retryable(m) > 0, fmt.Sprintf("open entries %v, retryable failures %v", open, retryable(m))
	})
	awaitOutageEnd(ctx, t, down)

	const msg = `events.events.k8s.io is forbidden: User "system:serviceaccount:otel-k8sevents:otel-k8sevents" cannot write resource "events" in API group "events.k8s.io"`
	var refused []*faultproxy.Handle
	for verb, path := range map[string]string{"POST": "/apis/events.k8s.io/v1/namespaces/*/events", "PATCH": "/apis/events.k8s.io/v1/namespaces/*/events/*"} {
		refused = append(refused, p.Add(faultproxy.Rule{Verb: verb, Path: path, Action: faultproxy.Fail, Code: 403, Message: msg}))
	}
	readyz := p.Add(faultproxy.Rule{Path: "/readyz", Action: faultproxy.Fail, Code: 403,
		Message: `forbidden: User "system:serviceaccount:otel-k8sevents:otel-k8sevents" cannot get path "/readyz"`})
	outage := rig.restartDestination(t, down)
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := refused[0].Acted() + refused[1].Acted()
		return n >= startingWrites, fmt.Sprintf("writes refused with 403 after the restart: %d of %d", n, startingWrites)
	})
	for _, h := range append(refused, readyz) {
		h.Remove()
	}
	t.Logf("storm: %d occurrences in %v; B down %v, then %d writes and %d /readyz answered 403",
		st.Occurrences, st.Elapsed.Round(time.Millisecond), outage, refused[0].Acted()+refused[1].Acted(), readyz.Acted())

	awaitIdle(t, c, 2*time.Minute)
	rig.awaitMirrored(ctx, t, "starting403")
	m := c.scrape(t)
	logPipeline(t, "before SIGTERM", c)
	require.NoError(t, c.Stop(time.Minute))
	assert.Positive(t, retryable(m, "forbidden"), "the 403s were retried")

	r, drops := rig.finishFault(ctx, t, "destination answers 403 as it starts", int64(st.Occurrences))
	assertFaultPromise(t, r, int64(st.Occurrences), drops)
}
