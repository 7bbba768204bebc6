package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"context"

	"go.uber.org/zap"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// namespaces knows which namespaces exist, from a watch of them (list and
// watch on namespaces): a record naming one that does not is refused
// before any SubjectAccessReview, so that naming a fresh random namespace
// per record costs the API server nothing. Until the watch has listed
// them (or without the permission), nothing is refused for it and the
// reviews decide.
type namespaces struct {
	factory informers.SharedInformerFactory
	synced  cache.InformerSynced
	indexer cache.Indexer
	stop    chan struct{}
}

// watchNamespaces starts the watch and waits for its first list until ctx
// ends; it goes on in the background either way.
func watchNamespaces(ctx context.Context, cs kubernetes.Interface, logger *zap.Logger) *namespaces {
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Namespaces().Informer()
	n := &namespaces{factory: factory, synced: inf.HasSynced, indexer: inf.GetIndexer(), stop: make(chan struct{})}
	factory.Start(n.stop)
	if !cache.WaitForCacheSync(ctx.Done(), n.synced) {
		logger.Warn("k8seventsotlp: the namespaces are not listed yet (list and watch on namespaces needed): records naming a namespace that does not exist are reviewed until they are")
	}
	return n
}

// missing reports whether ns is known not to exist.
func (n *namespaces) missing(ns string) bool {
	if n == nil || !n.synced() {
		return false
	}
	_, exists, err := n.indexer.GetByKey(ns)
	return err == nil && !exists
}

func (n *namespaces) shutdown() {
	if n != nil {
		close(n.stop)
		n.factory.Shutdown()
	}
}
