package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// clusterIdentity is the cluster the receiver watches, as the semantic
// conventions identify it: the configured name, and the uid of the
// kube-system namespace, read once (again at most once a minute while
// reading it fails: no RBAC, the API server not up yet).
type clusterIdentity struct {
	client kubernetes.Interface
	logger *zap.Logger

	mu      sync.Mutex
	cluster k8sevent.Cluster
	known   bool      // the uid was read
	tried   time.Time // the last failed read
}

// clusterRetry is how long a failed read of the uid is not tried again.
const clusterRetry = time.Minute

func newClusterIdentity(name string, client kubernetes.Interface, logger *zap.Logger) *clusterIdentity {
	return &clusterIdentity{client: client, logger: logger, cluster: k8sevent.Cluster{Name: name}}
}

// get is the identity to write on records: the name, and the uid once read.
func (c *clusterIdentity) get(ctx context.Context) k8sevent.Cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known || (!c.tried.IsZero() && time.Since(c.tried) < clusterRetry) {
		return c.cluster
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		c.tried = time.Now()
		c.logger.Warn("Cannot read the kube-system namespace's uid for k8s.cluster.uid (needs get on namespaces/kube-system); records go without it, read again in a minute",
			zap.Error(err))
		return c.cluster
	}
	c.cluster.UID, c.known = string(ns.UID), true
	return c.cluster
}
