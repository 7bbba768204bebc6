package k8seventsotlpreceiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcmetadata "google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"
	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver/internal/metadata"
)

const audience = "otel-k8sevents"

var authID = component.MustNewID("k8stokenauth")

// host gives the receiver its authenticator.
type host struct {
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// rig is a real API server with namespaces a and b, and a receiver (with
// the k8stokenauth extension) in front of a sink.
type rig struct {
	srv        *kubetest.Server
	kubeconfig string
	clock      *fakeClock
	ext        component.Component // the k8stokenauth extension
	recv       *otlpReceiver
	sink       *consumertest.LogsSink
	refuseNext atomic.Int32 // the next this many requests' records are refused by the next consumer (retryable)
	tel        *componenttest.Telemetry
	grpcAddr   string
	httpURL    string
	conn       *grpc.ClientConn
}

func newRig(t testing.TB, opts ...kubetest.Option) *rig {
	srv := kubetest.Start(t, opts...)
	r := &rig{srv: srv, kubeconfig: srv.Kubeconfig(t), clock: &fakeClock{t: time.Now()}}
	for _, ns := range []string{"a", "b"} {
		_, err := srv.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return r
}

// serviceAccount makes ServiceAccount ns/name, allowed to create Events
// (in the API group given) in the namespaces given, and answers its token.
func (r *rig) serviceAccount(t testing.TB, ns, name, group string, allowedIn ...string) string {
	t.Helper()
	ctx := context.Background()
	cs := r.srv.Clientset()
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, in := range allowedIn {
		r.grant(t, in, ns, name, group)
	}
	return r.srv.ServiceAccountToken(t, ns, name, time.Hour, audience)
}

// grant lets ServiceAccount ns/name create Events of group in namespace in.
func (r *rig) grant(t testing.TB, in, ns, name, group string) {
	t.Helper()
	ctx := context.Background()
	cs := r.srv.Clientset()
	role := "events-" + ns + "-" + name
	_, err := cs.RbacV1().Roles(in).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{"events"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(in).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// start runs the receiver (gRPC and HTTP on loopback) until the test
// ends, with a k8stokenauth extension of its own (authTTL: its cache's
// allow_ttl; 0: the default).
func (r *rig) start(t testing.TB, mutate func(*Config)) {
	r.startWithAuthTTL(t, mutate, 0)
}

func (r *rig) startWithAuthTTL(t testing.TB, mutate func(*Config), authTTL time.Duration) {
	t.Helper()
	ctx := context.Background()
	authCfg := k8stokenauthextension.NewFactory().CreateDefaultConfig().(*k8stokenauthextension.Config)
	authCfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: r.kubeconfig}
	if authTTL > 0 {
		authCfg.Cache.AllowTTL = authTTL
	}
	ext, err := k8stokenauthextension.NewFactory().Create(ctx, extensiontest.NewNopSettings(authID.Type()), authCfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(ctx)) })
	r.ext = ext

	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: r.kubeconfig}
	grpcCfg := cfg.Protocols.GRPC.GetOrInsertDefault()
	r.grpcAddr = loopback(t)
	grpcCfg.NetAddr.Endpoint = r.grpcAddr
	grpcCfg.Auth = configoptional.Some(configauth.Config{AuthenticatorID: authID})
	httpCfg := cfg.Protocols.HTTP.GetOrInsertDefault()
	httpCfg.NetAddr.Endpoint = loopback(t)
	r.httpURL = "http://" + httpCfg.NetAddr.Endpoint + logsPath
	httpCfg.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
	cfg.ClusterName, cfg.ClusterUID = "east", "uid-east"
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	r.tel = componenttest.NewTelemetry()
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = r.tel.NewTelemetrySettings()
	r.sink = new(consumertest.LogsSink)
	next, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		if r.refuseNext.Add(-1) >= 0 {
			return errors.New("the pipeline is full")
		}
		return r.sink.ConsumeLogs(ctx, ld)
	})
	require.NoError(t, err)
	rcv, err := NewFactory().CreateLogs(ctx, set, cfg, next)
	require.NoError(t, err)
	r.recv = rcv.(*otlpReceiver)
	r.recv.now = r.clock.now
	require.NoError(t, rcv.Start(ctx, host{exts: map[component.ID]component.Component{authID: ext}}))
	tel := r.tel
	t.Cleanup(func() {
		require.NoError(t, rcv.Shutdown(ctx))
		require.NoError(t, tel.Shutdown(ctx))
	})
	conn, err := grpc.NewClient(r.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	r.conn = conn
}

func loopback(t testing.TB) string {
	t.Helper()
	p, err := childproc.FreePort()
	require.NoError(t, err)
	return "127.0.0.1:" + strconv.Itoa(p)
}

// events is a request of one record per namespace given, each about pod
// web in it.
func events(namespaces ...string) plog.Logs {
	ld := plog.NewLogs()
	for i, ns := range namespaces {
		ev := k8sevent.Event{Reason: "Started", Note: "started", Type: k8sevent.TypeNormal, Time: time.Now(),
			Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("web-%d", i), UID: fmt.Sprintf("uid-%d", i)}}
		k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	}
	return ld
}

// exportGRPC sends ld with token ("": none).
func (r *rig) exportGRPC(t testing.TB, token string, ld plog.Logs) (plogotlp.ExportResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if token != "" {
		ctx = grpcmetadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return plogotlp.NewGRPCClient(r.conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
}

// exportHTTP posts ld as protobuf or JSON with token ("": none) and
// answers the status, the decoded response (on 200) and the headers.
func (r *rig) exportHTTP(t testing.TB, token string, ld plog.Logs, json bool) (int, plogotlp.ExportResponse, http.Header) {
	t.Helper()
	req := plogotlp.NewExportRequestFromLogs(ld)
	marshal, contentType := req.MarshalProto, protobufType
	if json {
		marshal, contentType = req.MarshalJSON, jsonType
	}
	body, err := marshal()
	require.NoError(t, err)
	hreq, err := http.NewRequest(http.MethodPost, r.httpURL, bytes.NewReader(body))
	require.NoError(t, err)
	hreq.Header.Set("Content-Type", contentType)
	if token != "" {
		hreq.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := plogotlp.NewExportResponse()
	if resp.StatusCode == http.StatusOK {
		if json {
			require.NoError(t, out.UnmarshalJSON(raw))
		} else {
			require.NoError(t, out.UnmarshalProto(raw))
		}
	}
	return resp.StatusCode, out, resp.Header
}

func (r *rig) counter(name, attr, value string) int64 {
	m, err := r.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value(attribute.Key(attr)); attr == "" || ok && v.AsString() == value {
			n += dp.Value
		}
	}
	return n
}

// received is what reached the sink: each record's namespace, client and
// cluster, as the codec reads them.
func (r *rig) received() []string {
	var out []string
	for _, ld := range r.sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					ev, _, _ := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
					out = append(out, ev.ObjectNamespace()+" "+k8sevent.Client(lr.Attributes())+" "+ev.Cluster.Name+"/"+ev.Cluster.UID)
				}
			}
		}
	}
	return out
}
