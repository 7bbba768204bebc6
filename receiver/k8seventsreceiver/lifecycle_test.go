package k8seventsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

// capturingElector keeps the callbacks, as the contrib extension does: it
// cannot take them back when the receiver stops.
type capturingElector struct {
	component.Component
	onStart func(context.Context)
	onStop  func()
}

func (e *capturingElector) SetCallBackFuncs(onStart func(context.Context), onStop func()) {
	e.onStart, e.onStop = onStart, onStop
}

// TestLeaderCallbackAfterShutdownDoesNotWatch: a collector stops receivers
// before extensions; winning the lease in between must not start watching.
func TestLeaderCallbackAfterShutdownDoesNotWatch(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	id := component.MustNewID("k8s_leader_elector")
	cfg.K8sLeaderElector = &id
	elector := &capturingElector{}
	rcv, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), host{id: elector}))
	require.NotNil(t, elector.onStart, "callbacks registered")
	require.NoError(t, rcv.Shutdown(context.Background()))

	elector.onStart(context.Background())
	r := rcv.(*k8seventsReceiver)
	assert.False(t, r.watching())
	r.mu.Lock()
	assert.Empty(t, r.watchers)
	r.mu.Unlock()
	elector.onStop()
}
