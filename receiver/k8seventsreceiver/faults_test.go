package k8seventsreceiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// newProxy puts a faultproxy in front of the rig's API server: faults are
// its rules, injected there and not in the code under test.
func newProxy(t *testing.T, r *rig) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.NewForREST(r.srv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxyKubeconfig writes a kubeconfig for the proxy (no credentials: the
// proxy adds them) and returns its path.
func proxyKubeconfig(t *testing.T, p *faultproxy.Proxy) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, p.WriteKubeconfig(path))
	return path
}

// compact compacts etcd up to its current revision: a watch from any
// resourceVersion before it gets 410 Gone (with --watch-cache=false the API
// server watches etcd itself), as after a long outage.
func (r *rig) compact(t *testing.T) {
	t.Helper()
	// One more write first: etcd keeps the revision it compacts at, and a
	// watch from the revision before the last write would start there.
	cm, err := r.cs.CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "compact-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	body := fmt.Sprintf(`{"revision":%q,"physical":true}`, cm.ResourceVersion)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.EtcdEndpoint()+"/v3/kv/compaction", strings.NewReader(body))
	require.NoError(t, err)
	// No connection kept: a leased server's etcd outlives the test, and
	// the package's goroutine leak check would find the idle connection.
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "etcd compaction: %s", b)
}

// refusing is a pipeline whose exporter is down for some Events: while on,
// it refuses (not permanently) every batch holding a record of the Event
// named name, and passes the others to sink; with limit > 0, only the
// first limit such batches.
type refusing struct {
	sink    *consumertest.LogsSink
	name    string
	limit   int64
	on      atomic.Bool
	refused atomic.Int64
}

func (c *refusing) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *refusing) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if c.on.Load() && holdsEvent(ld, c.name) && (c.limit == 0 || c.refused.Load() < c.limit) {
		c.refused.Add(1)
		return errors.New("exporter down (injected)")
	}
	return c.sink.ConsumeLogs(ctx, ld)
}

func holdsEvent(ld plog.Logs, name string) bool {
	for i := range ld.ResourceLogs().Len() {
		rl := ld.ResourceLogs().At(i)
		for j := range rl.ScopeLogs().Len() {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := range lrs.Len() {
				if ev, _, _ := k8sevent.Decode(rl.Resource(), lrs.At(k), k8sevent.DecodeOptions{}); ev.Name == name {
					return true
				}
			}
		}
	}
	return false
}
