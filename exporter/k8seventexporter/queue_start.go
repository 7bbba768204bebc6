package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/internal/retry"
)

// At start, exporterhelper's persistent queue moves the requests a stop
// left in flight back into the queue: it reads them, deletes them, then
// writes each again at the queue's end. So that none is lost there:
//
//   - until the exporter has started, the queue's storage calls are done
//     again, with storageRetry, until the storage takes them (a full or
//     read-only volume): the start waits for the volume, as a pod stays
//     unready until its collector started. The wait ends with the start's
//     context or the exporter's stop. Once started, the calls go straight
//     to the storage: the queue makes them under its lock, and a refused
//     offer is waited for in ConsumeLogs; a refused dispatch is read
//     alone (readsOnly);
//   - the deletes of the start are made only once it returned, every
//     request written again: a crash before then finds them still listed
//     as in flight, and the next start moves them again. Written twice, a
//     request's records are written to the API server again, which the
//     exporter's writes take as the repeats they are (slots, counts never
//     lowered).

// Start starts exporterhelper's exporter, its queue's storage retried
// until it returns.
func (s stoppingFirst) Start(ctx context.Context, host component.Host) error {
	starting, started := context.WithCancel(ctx) // ends the retries when Start returns
	deletes := &heldDeletes{}
	err := s.Logs.Start(ctx, s.e.queueHost(starting, host, deletes))
	started()
	if err == nil {
		deletes.apply(ctx, s.e.logger)
	}
	return err
}

// heldDeletes are the delete batches the queue made while it started.
type heldDeletes struct {
	mu      sync.Mutex
	batches []heldBatch
	applied bool // the start returned: deletes go straight to the storage
}

type heldBatch struct {
	client storage.Client
	ops    []*storage.Operation
}

// hold keeps ops for apply when each deletes and apply has not run; it
// reports whether it did.
func (h *heldDeletes) hold(client storage.Client, ops []*storage.Operation) bool {
	for _, op := range ops {
		if op.Type != storage.Delete {
			return false
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.applied {
		return false
	}
	h.batches = append(h.batches, heldBatch{client: client, ops: ops})
	return true
}

// apply makes the deletes held. One that fails leaves a request stored
// that nothing lists any more: space, not a record, is what is lost.
func (h *heldDeletes) apply(ctx context.Context, logger *zap.Logger) {
	h.mu.Lock()
	batches := h.batches
	h.batches, h.applied = nil, true
	h.mu.Unlock()
	for _, b := range batches {
		if err := b.client.Batch(ctx, b.ops...); err != nil {
			logger.Warn("The sending queue could not delete what it moved at start", zap.Int("keys", len(b.ops)), zap.Error(err))
		}
	}
}

// queueHost is host, with the persistent queue's storage extension
// handing out clients that retry, and hold their deletes, until starting
// ends.
func (e *k8seventsExporter) queueHost(starting context.Context, host component.Host, deletes *heldDeletes) component.Host {
	id, ext, ok := e.queueStorage(host)
	if !ok {
		return host
	}
	exts := maps.Clone(host.GetExtensions())
	exts[id] = startingStorage{Extension: ext, e: e, starting: starting, deletes: deletes}
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
	e        *k8seventsExporter
	starting context.Context // ends when the exporter's Start returns
	deletes  *heldDeletes
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
	return c.Batch(ctx, storage.DeleteOperation(key))
}

func (c startingClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	if c.s.deletes.hold(c.Client, ops) {
		return nil
	}
	err := c.retry(ctx, func() error { return c.Client.Batch(ctx, ops...) })
	if err != nil && readsOnly(ctx, c.Client, ops) {
		return nil
	}
	return err
}

// readsOnly makes the reads of a refused batch alone, and reports whether
// there were some and the storage answered them. The queue hands a
// request to its consumers in one batch that records the dispatch and
// reads the request; when the storage refuses that write (full or
// read-only), exporterhelper has already moved its read index past the
// request and would drop it. Read alone, the request is written all the
// same; the dispatch is not on the storage, so a crash before the next
// write that works hands the request out again, and the exporter's writes
// take its records as the repeats they are.
func readsOnly(ctx context.Context, c storage.Client, ops []*storage.Operation) bool {
	var reads []*storage.Operation
	for _, op := range ops {
		if op.Type == storage.Get {
			reads = append(reads, op)
		}
	}
	return len(reads) > 0 && c.Batch(ctx, reads...) == nil
}

// retry calls call until it succeeds or, after a failure, the exporter
// started, ctx or the start's context ended, or the exporter stops.
func (c startingClient) retry(ctx context.Context, call func() error) error {
	b := retry.Backoff{Policy: storageRetry}
	for {
		err := call()
		if err == nil {
			return nil
		}
		if c.s.e.logRate.Allow("queue storage at start", time.Now()) {
			c.s.e.logger.Error("The sending queue's storage refuses writes while it starts: waiting for it (logged once a minute)", zap.Error(err))
		}
		if c.s.e.storageWait(ctx, b.Failed(err), c.s.starting.Done()) != nil {
			return err
		}
	}
}
