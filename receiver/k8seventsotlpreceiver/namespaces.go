package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// namespaces knows which namespaces exist, from a watch of them (list and
// watch on namespaces, as the API server's NamespaceLifecycle admission
// keeps one): a record naming one that does not is refused before any
// SubjectAccessReview, so that naming a fresh random namespace per record
// costs the API server nothing. Until the watch has listed them (or
// without the permission), nothing is refused for it and the reviews
// decide: the API server refuses an Event in a namespace that does not
// exist anyway.
type namespaces struct {
	factory informers.SharedInformerFactory
	synced  cache.InformerSynced
	indexer cache.Indexer
	stop    chan struct{}
	once    sync.Once
}

// watchNamespaces starts the watch in the background; a failure to list
// or watch is logged each time it is retried.
func watchNamespaces(cs kubernetes.Interface, logger *zap.Logger) (*namespaces, error) {
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Namespaces().Informer()
	err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return // a watch that ended: listed again
		}
		logger.Warn("k8seventsotlp: cannot list or watch namespaces (list and watch on namespaces needed): records in a namespace that does not exist are reviewed until it can", zap.Error(err))
	})
	if err != nil {
		return nil, fmt.Errorf("watch namespaces: %w", err)
	}
	n := &namespaces{factory: factory, synced: inf.HasSynced, indexer: inf.GetIndexer(), stop: make(chan struct{})}
	factory.Start(n.stop)
	return n, nil
}

// missing reports whether ns is known not to exist.
func (n *namespaces) missing(ns string) bool {
	if n == nil || !n.synced() {
		return false
	}
	_, exists, err := n.indexer.GetByKey(ns)
	return err == nil && !exists
}

// shutdown stops the watch and waits for its goroutines; again, it does
// nothing.
func (n *namespaces) shutdown() {
	if n != nil {
		n.once.Do(func() {
			close(n.stop)
			n.factory.Shutdown()
		})
	}
}
