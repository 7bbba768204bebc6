package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// At start, exporterhelper's persistent queue moves the requests a stop
// left in flight back into the queue; a storage write it is refused there
// (a full or read-only volume) drops them. So until the exporter has
// started, the queue's storage calls are done again, with backoff, until
// the storage takes them: the start waits for the volume, as a pod stays
// unready until its collector started, and nothing is dropped. The wait
// ends with the start's context or the exporter's stop. Once started, the
// calls go straight to the storage: the queue makes them under its lock,
// and a refused offer is waited for in ConsumeLogs.

// Start starts exporterhelper's exporter, its queue's storage retried
// until it returns.
func (s stoppingFirst) Start(ctx context.Context, host component.Host) error {
	started := make(chan struct{})
	defer close(started)
	return s.Logs.Start(ctx, s.e.queueHost(ctx, host, started))
}

// queueHost is host, with the persistent queue's storage extension
// handing out clients that retry until started is closed.
func (e *k8seventsExporter) queueHost(start context.Context, host component.Host, started <-chan struct{}) component.Host {
	if !e.cfg.persistentQueue() {
		return host
	}
	id := *e.cfg.Queue.Get().StorageID
	ext, ok := host.GetExtensions()[id].(storage.Extension)
	if !ok {
		return host // exporterhelper's start names what is missing
	}
	exts := map[component.ID]component.Component{}
	for k, v := range host.GetExtensions() {
		exts[k] = v
	}
	exts[id] = startingStorage{Extension: ext, e: e, start: start, started: started}
	return extensionsHost{Host: host, exts: exts}
}

type extensionsHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extensionsHost) GetExtensions() map[component.ID]component.Component { return h.exts }

// startingStorage is a storage extension whose clients retry while the
// exporter starts.
type startingStorage struct {
	storage.Extension
	e       *k8seventsExporter
	start   context.Context
	started <-chan struct{}
}

func (s startingStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := s.Extension.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, fmt.Errorf("open the sending queue's storage: %w", err)
	}
	return startingClient{Client: c, s: s}, nil
}

// startingClient does each call again until the storage takes it, while
// the exporter starts. A batch applies whole or not at all, so doing it
// again is safe.
type startingClient struct {
	storage.Client
	s startingStorage
}

func (c startingClient) Get(ctx context.Context, key string) (v []byte, err error) {
	err = c.retry(ctx, func() error { v, err = c.Client.Get(ctx, key); return err })
	return v, err
}

func (c startingClient) Set(ctx context.Context, key string, value []byte) error {
	return c.retry(ctx, func() error { return c.Client.Set(ctx, key, value) })
}

func (c startingClient) Delete(ctx context.Context, key string) error {
	return c.retry(ctx, func() error { return c.Client.Delete(ctx, key) })
}

func (c startingClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	return c.retry(ctx, func() error { return c.Client.Batch(ctx, ops...) })
}

// retry calls call until it succeeds or, after a failure, the exporter
// started, ctx or the start's context ended, or the exporter stops.
func (c startingClient) retry(ctx context.Context, call func() error) error {
	e, wait := c.s.e, offerRetryFirst
	for {
		err := call()
		if err == nil {
			return nil
		}
		if e.logRate.Allow("queue storage at start", time.Now()) {
			e.logger.Error("The sending queue's storage refuses writes while it starts: waiting for it (logged once a minute)", zap.Error(err))
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
			wait = min(2*wait, offerRetryMax)
			continue
		case <-c.s.started:
		case <-ctx.Done():
		case <-c.s.start.Done():
		case <-e.stop:
		}
		timer.Stop()
		return err
	}
}
