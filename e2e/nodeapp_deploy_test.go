package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

// The Node example's records: notes of noteBytes make a batch of the SDK's
// 512 records about 1.7 MB of OTLP/JSON, over the ready configurations'
// 1 MiB body limit; hugeNoteBytes make one record over it alone.
const (
	nodeDeployFile = "../examples/node/deploy.yaml"
	noteBytes      = 3000
	hugeNoteBytes  = 1100000
	bigRecords     = 600
	sdkBatch       = 512
)

// TestNodeAppAsDeployed: examples/node/deploy.yaml goes onto a real API
// server with strict field validation; its ServiceAccount may create
// Events in its own namespace and not elsewhere; its pod projects a token
// for the collector's audience where k8sevents.js reads it and names
// tier 1's Service in K8SEVENTS_OTLP_ENDPOINT. Then main.js runs as that
// pod would, with such a token, against the built collector on the ready
// otlp-ingestion.yaml:
//   - with only OTEL_EXPORTER_OTLP_ENDPOINT set (as the Operator's
//     auto-instrumentation sets it), it refuses to start;
//   - with K8SEVENTS_OTLP_ENDPOINT too, it sends there and never to the
//     OTEL_ one; records whose batches are over the body limit arrive in
//     parts: every occurrence in its namespace is counted in the Events
//     written, none in another namespace; the one record over the limit
//     alone is counted failed;
//   - without the bound, one batch of the same records is refused (413,
//     not retried): all counted failed. The bound is what delivers them.
func TestNodeAppAsDeployed(t *testing.T) {
	parallel(t)
	binary(t)
	node, dir := nodeExample(t)
	side := startIngestSide(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := side.rig.srv.Clientset()

	objs := readManifests(t, nodeDeployFile)
	apply(ctx, t, side.rig.srv.RESTConfig(), objs)
	pod := nodePod(t, objs)
	ns, sa := pod.Namespace, pod.Spec.ServiceAccountName
	user := "system:serviceaccount:" + ns + ":" + sa
	for _, c := range []struct {
		ns, group string
		want      bool
	}{{ns, "", true}, {ns, "events.k8s.io", true}, {"default", "", false}, {"shop", "events.k8s.io", false}} {
		assert.Equal(t, c.want, allowed(ctx, t, cs, user, "create", c.group, "events", c.ns, ""), "%s may create %q events in %s", user, c.group, c.ns)
	}
	audience, tokenPath := projectedToken(t, pod)
	assert.Equal(t, authAudience, audience, "the token's audience is the ready configuration's")
	assert.Equal(t, "/var/run/secrets/k8sevents/token", tokenPath, "where k8sevents.js reads the token (DEFAULT_TOKEN_FILE)")
	endpoint, err := url.Parse(envOf(pod.Spec.Containers[0].Env, "K8SEVENTS_OTLP_ENDPOINT"))
	require.NoError(t, err)
	assert.Equal(t, "/v1/logs", endpoint.Path)
	assert.Equal(t, tier1HTTP(t), endpoint.Host, "K8SEVENTS_OTLP_ENDPOINT names tier 1's Service and OTLP/HTTP port")

	tokenFile := filepath.Join(t.TempDir(), "token")
	writeToken(t, tokenFile, side.rig.srv.ServiceAccountToken(t, ns, sa, time.Hour, audience))
	var decoyRequests atomic.Int64
	decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { decoyRequests.Add(1) }))
	defer decoy.Close()
	otelEnv := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + decoy.URL, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=" + decoy.URL + "/v1/logs"}

	refused := exec.CommandContext(ctx, node, "main.js", "--token-file", tokenFile)
	refused.Dir, refused.Env = dir, append(nodeEnv(), otelEnv...)
	out, err := refused.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 2, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "K8SEVENTS_OTLP_ENDPOINT")

	occs := bigNoteOccurrences(ns, bigRecords, noteBytes)
	huge := bigNoteOccurrences(ns, 1, hugeNoteBytes)[0]
	elsewhere := bigNoteOccurrences("default", 10, 100)
	input := append(append(append([]storm.Occurrence{}, occs[:300]...), huge), append(elsewhere, occs[300:]...)...)
	env := append([]string{"K8SEVENTS_OTLP_ENDPOINT=" + side.url()}, otelEnv...)
	_, done := runNode(ctx, t, node, dir, []string{"--token-file", tokenFile}, env, input, len(input), func() {})
	assert.Equal(t, nodeCounts{Recorded: len(input), Sent: len(input) - 1, Failed: 1}, done,
		"every record sent but the one over the limit alone")

	control := bigNoteOccurrences(ns, sdkBatch, noteBytes)
	flushed, _ := runNode(ctx, t, node, dir, []string{"--token-file", tokenFile, "--max-request-bytes", "0",
		"--batch-delay-millis", "600000"}, env, control, sdkBatch, func() {})
	assert.Equal(t, nodeCounts{Recorded: sdkBatch, Failed: sdkBatch}, flushed, "without the bound: one batch, refused")
	assert.Zero(t, decoyRequests.Load(), "requests to OTEL_EXPORTER_OTLP_ENDPOINT")

	// SIGTERM: the processor flushes its open series into the exporter's
	// queue on disk; the next start writes them.
	side.c.stopAndWrite(t, time.Minute, func() (bool, string) {
		evs, err := listEvents(ctx, cs, byController(ingestController))
		require.NoError(t, err)
		lines, missing, extra := diffTallies(truthTally(occs), tallyEvents(evs), 10)
		return len(lines) == 0, fmt.Sprintf("per (object, reason) the occurrences sent (missing %d, extra %d): %v", missing, extra, lines)
	})
}

// nodePod is the Pod of the example's manifest.
func nodePod(t *testing.T, objs []*unstructured.Unstructured) *corev1.Pod {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Pod" {
			var pod corev1.Pod
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &pod))
			require.Len(t, pod.Spec.Containers, 1)
			return &pod
		}
	}
	t.Fatalf("%s has no Pod", nodeDeployFile)
	return nil
}

// projectedToken is the audience of the pod's projected ServiceAccount
// token and the path the container reads it at.
func projectedToken(t *testing.T, pod *corev1.Pod) (audience, file string) {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken == nil {
				continue
			}
			for _, m := range pod.Spec.Containers[0].VolumeMounts {
				if m.Name == v.Name {
					return src.ServiceAccountToken.Audience, path.Join(m.MountPath, src.ServiceAccountToken.Path)
				}
			}
		}
	}
	t.Fatalf("%s: no projected ServiceAccount token mounted in the container", nodeDeployFile)
	return "", ""
}

// tier1HTTP is the host:port of tier 1's OTLP/HTTP Service in deploy/.
func tier1HTTP(t *testing.T) string {
	t.Helper()
	for _, o := range manifests(t, "otlp-tier1.yaml") {
		if o.GetKind() != "Service" || o.GetName() != "otelcol-tier1" {
			continue
		}
		var svc corev1.Service
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc))
		for _, p := range svc.Spec.Ports {
			if p.Port == 4318 {
				return fmt.Sprintf("%s.%s:%d", svc.Name, svc.Namespace, p.Port)
			}
		}
	}
	t.Fatal("deploy/otlp-tier1.yaml has no Service otelcol-tier1 with port 4318")
	return ""
}

// bigNoteOccurrences are n Warnings about 20 pods of ns, each note of
// noteLen bytes (the collector cuts a note to 1,024 bytes; the request
// carries it whole).
func bigNoteOccurrences(ns string, n, noteLen int) []storm.Occurrence {
	occs := make([]storm.Occurrence, n)
	for i := range occs {
		name := fmt.Sprintf("web-%d", i%20)
		occs[i] = storm.Occurrence{Time: storm.Start.Add(time.Duration(i) * time.Millisecond), Type: "Warning", Reason: "BackOff",
			Action: "Restart", Note: strings.Repeat("x", noteLen),
			Regarding: storm.Ref{Kind: "Pod", Namespace: ns, Name: name, UID: "uid-" + ns + "-" + name, APIVersion: "v1"}}
	}
	return occs
}
