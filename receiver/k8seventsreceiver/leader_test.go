package k8seventsreceiver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/k8sleaderelector"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

// The receiver's own interface matches the contrib extension's.
var _ leaderElector = (k8sleaderelector.LeaderElection)(nil)

var electorID = component.MustNewID("k8s_leader_elector")

const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// newLeaderElector creates the contrib k8s_leader_elector extension on
// the API server $KUBECONFIG names. It is started apart (startExtension):
// the extension's client construction writes to a transport client-go may
// share between clients, so every one is created before any starts.
func newLeaderElector(t *testing.T) extension.Extension {
	t.Helper()
	f := k8sleaderelector.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"auth_type":       "kubeConfig",
		"lease_name":      "k8sevents",
		"lease_namespace": "default",
		"lease_duration":  leaseDuration.String(),
		"renew_deadline":  renewDeadline.String(),
		"retry_period":    retryPeriod.String(),
	}).Unmarshal(cfg))
	require.NoError(t, cfg.(*k8sleaderelector.Config).Validate())
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	return ext
}

// startExtension starts ext, as a collector starts its extensions before
// its receivers. It stops at the test's end, after the receivers started
// later.
func startExtension(t *testing.T, ext extension.Extension) {
	t.Helper()
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
}

// sharedStorage is one store that both candidates use, as collectors on
// several nodes would share a database. It hands every caller the single
// client file_storage opens for the receiver's ID: file_storage holds an
// exclusive lock on that ID's bbolt file, so a second client for the same
// ID in one process fails (timeout) while the first is open.
type sharedStorage struct {
	storage.Extension
	mu     sync.Mutex
	client storage.Client
	refs   int
}

func (s *sharedStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		c, err := s.Extension.GetClient(ctx, kind, id, name)
		if err != nil {
			return nil, err
		}
		s.client = c
	}
	s.refs++
	return &sharedClient{Client: s.client, s: s}, nil
}

// sharedClient closes the underlying client when its last user closes.
type sharedClient struct {
	storage.Client
	s    *sharedStorage
	once sync.Once
}

func (c *sharedClient) Close(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		if c.s.refs--; c.s.refs == 0 {
			err = c.s.client.Close(ctx)
			c.s.client = nil
		}
	})
	return err
}

// candidate is one collector: its leader elector and its receiver.
type candidate struct {
	name    string
	proxy   *faultproxy.Proxy // between its leader elector and the API server
	elector extension.Extension
	rcv     *k8seventsReceiver
	sink    *consumertest.LogsSink
}

// stop stops the candidate as its collector process would: receivers first,
// then extensions.
func (c *candidate) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, c.rcv.Shutdown(context.Background()))
	require.NoError(t, c.elector.Shutdown(context.Background()))
}

// TestLeaderElectionOneEmitsThenTakesOver: two collectors, each with its
// own k8s_leader_elector and receiver (same ID), one shared checkpoint
// store. Only the leader emits; when it stops, the other takes the lease
// once it expires and resumes from the shared checkpoint: the events made
// while nobody led come from it, and every event is emitted exactly once.
// "While nobody led" is made so, not timed: the follower's elector is cut
// off from the API server (a proxy refuses it) until they are written.
func TestLeaderElectionOneEmitsThenTakesOver(t *testing.T) {
	const ns = "leader"
	r := newRig(t)
	r.namespace(t, ns)
	store := &sharedStorage{Extension: fileStorage(t, t.TempDir())[storageID].(storage.Extension)}

	newCandidate := func(name string) *candidate {
		proxy := newProxy(t, r)
		t.Setenv("KUBECONFIG", proxyKubeconfig(t, proxy)) // the extension has no kubeconfig path setting
		return &candidate{name: name, proxy: proxy, elector: newLeaderElector(t)}
	}
	a, b := newCandidate("a"), newCandidate("b")
	for _, c := range []*candidate{a, b} {
		startExtension(t, c.elector)
		c.rcv, c.sink = r.start(t, host{storageID: store, electorID: c.elector}, func(c *Config) {
			withStorage(ns)(c)
			id := electorID
			c.K8sLeaderElector = &id
		})
	}

	var leader, follower *candidate
	require.Eventually(t, func() bool { return a.rcv.watching() || b.rcv.watching() },
		2*leaseDuration+5*time.Second, 20*time.Millisecond, "one candidate leads and watches")
	leader, follower = a, b
	if b.rcv.watching() {
		leader, follower = b, a
	}
	t.Logf("%s leads", leader.name)

	r.createEvents(t, ns, "led", 20)
	waitReceived(t, leader.sink, 20)
	assert.Len(t, settle(t, leader.sink), 20)
	assert.Empty(t, received(t, follower.sink), "the follower emits nothing")
	assert.False(t, follower.rcv.watching(), "the follower does not watch")

	cutOff := follower.proxy.Add(faultproxy.Rule{Action: faultproxy.Fail, Code: 503})
	leader.stop(t)
	r.createEvents(t, ns, "handover", 10)
	require.False(t, follower.rcv.watching(), "nobody leads: the follower's elector cannot reach the API server")
	stopped := time.Now()
	cutOff.Remove()
	// A bound for a stuck hand-over, not a measure: it takes about one lease.
	require.Eventually(t, follower.rcv.watching, 2*leaseDuration+20*time.Second, 20*time.Millisecond,
		"the follower leads once the lease has expired")
	t.Logf("%s leads %s after its elector could reach the API server again", follower.name, time.Since(stopped).Round(10*time.Millisecond))

	r.createEvents(t, ns, "after", 10)
	waitReceived(t, follower.sink, 20)

	first, second := settle(t, leader.sink), settle(t, follower.sink)
	want := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return out
	}
	assert.ElementsMatch(t, want("led", 20), names(first), "the first leader: its events only")
	assert.ElementsMatch(t, append(want("after", 10), want("handover", 10)...), names(second),
		"the new leader: the hand-over's and its own, resumed from the shared checkpoint")
	seen := map[string]int{}
	for _, n := range names(append(first, second...)) {
		seen[n]++
	}
	for n, c := range seen {
		assert.Equal(t, 1, c, "%s emitted %d times", n, c)
	}
	assert.Len(t, seen, 40, "no gap")
}

// startOnly builds a receiver by the factory and starts it on h; no API
// server is needed (auth_type none builds a client without connecting).
func startOnly(t *testing.T, h host, mutate func(*Config)) error {
	t.Helper()
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "1")
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthNone}
	mutate(cfg)
	require.NoError(t, cfg.Validate())
	set := receivertest.NewNopSettings(metadata.Type)
	rcv, err := NewFactory().CreateLogs(context.Background(), set, cfg, new(consumertest.LogsSink))
	require.NoError(t, err)
	err = rcv.Start(context.Background(), h)
	// A collector shuts down what it started, also after a failed start.
	require.NoError(t, rcv.Shutdown(context.Background()))
	return err
}

func nopExtension(t *testing.T) extension.Extension {
	f := extensiontest.NewNopFactory()
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), f.CreateDefaultConfig())
	require.NoError(t, err)
	return ext
}

func TestStartFailsWithoutLeaderElector(t *testing.T) {
	id := component.MustNewIDWithName("k8s_leader_elector", "missing")
	withElector := func(c *Config) { c.API = k8sevent.APICoreV1; c.K8sLeaderElector = &id }
	for name, h := range map[string]host{
		"missing":                 {electorID: nopExtension(t)},
		"not a leader elector":    {id: nopExtension(t)},
		"storage, not an elector": {id: fileStorage(t, t.TempDir())[storageID]},
	} {
		t.Run(name, func(t *testing.T) {
			err := startOnly(t, h, withElector)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "k8s_leader_elector")
			assert.Contains(t, err.Error(), `"k8s_leader_elector/missing"`)
			assert.Contains(t, err.Error(), "not a leader elector")
		})
	}
}

func TestStartFailsWithoutStorage(t *testing.T) {
	id := component.MustNewIDWithName("file_storage", "other")
	withBadStorage := func(c *Config) { c.API = k8sevent.APICoreV1; c.Storage = &id }
	for name, h := range map[string]host{
		"missing":               {storageID: fileStorage(t, t.TempDir())[storageID]},
		"not a storage":         {id: nopExtension(t)},
		"leader elector, no kv": {id: &fakeElector{Extension: nopExtension(t)}},
	} {
		t.Run(name, func(t *testing.T) {
			err := startOnly(t, h, withBadStorage)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "storage")
			assert.Contains(t, err.Error(), `"file_storage/other"`)
			assert.Contains(t, err.Error(), "not a storage extension")
		})
	}
}

// fakeElector is a leader elector, not a storage.
type fakeElector struct{ extension.Extension }

func (*fakeElector) SetCallBackFuncs(func(context.Context), func()) {}
