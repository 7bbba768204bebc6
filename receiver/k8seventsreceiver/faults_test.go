package k8seventsreceiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// apiProxy stands between a client and the real API server on loopback
// and injects faults there, not in the code under test.
type apiProxy struct {
	url string

	failContinue atomic.Bool // lists that go on from a continue token get a 500
	stallWatches atomic.Bool // watches get their headers, then nothing: a dead connection
	refuseAll    atomic.Bool // every request gets a 503: the API server is unreachable

	refused atomic.Int64 // requests answered with an injected error
	stalled atomic.Int64 // watches stalled
}

func newAPIProxy(t *testing.T, r *rig) *apiProxy {
	t.Helper()
	target, err := url.Parse(r.srv.URL())
	require.NoError(t, err)
	transport, err := rest.TransportFor(r.srv.RESTConfig()) // TLS and the admin token
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport, rp.FlushInterval = transport, -1 // watches stream

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &apiProxy{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.serve(w, req, rp)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

func (p *apiProxy) serve(w http.ResponseWriter, req *http.Request, upstream http.Handler) {
	q := req.URL.Query()
	switch {
	case p.refuseAll.Load():
		p.refused.Add(1)
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable)
	case p.failContinue.Load() && q.Get("continue") != "":
		p.refused.Add(1)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError)
	case p.stallWatches.Load() && q.Get("watch") == "true":
		p.stalled.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush() //nolint:errcheck // a test server: the client sees the headers or fails
		<-req.Context().Done()
	default:
		upstream.ServeHTTP(w, req)
	}
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason) {
	b, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Reason: reason, Code: int32(code), Message: "injected by the test proxy",
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// kubeconfig writes a kubeconfig for the proxy (no credentials: the proxy
// adds them) and returns its path.
func (p *apiProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.url}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
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
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "etcd compaction: %s", b)
}

// refusing is a pipeline whose exporter is down for some Events: while on,
// it refuses (not permanently) every batch holding a record of the Event
// named name, and passes the others to sink.
type refusing struct {
	sink    *consumertest.LogsSink
	name    string
	on      atomic.Bool
	refused atomic.Int64
}

func (c *refusing) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *refusing) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if c.on.Load() && holdsEvent(ld, c.name) {
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
