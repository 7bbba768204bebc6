package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/internal/retry"
)

// A queue that refuses a batch makes the processor send it again, to every
// consumer of a fanout, on every retry. The sending queue blocks when full
// (block_on_overflow must be true), so with a storage it refuses only when
// its storage refuses the write. Then the exporter waits, as a full queue
// makes its caller wait, until the storage takes a write of its own (a
// probe key in a client of its own), and offers the batch again. A failed
// offer leaves nothing in the queue but its size, which exporterhelper
// counts until the queue is next empty: offering only once the storage
// works again keeps that to one batch per outage, not one per retry.

// storageRetry is how often the queue's storage is tried again while it
// refuses writes.
var storageRetry = retry.Policy{Initial: 100 * time.Millisecond, Multiplier: 2, Max: 5 * time.Second}

// ConsumeLogs hands ld to exporterhelper's queue, waiting while its storage
// refuses it.
func (s stoppingFirst) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	for {
		err := s.Logs.ConsumeLogs(ctx, ld)
		if err == nil || s.e.probe == nil {
			return err
		}
		if s.e.logRate.Allow("queue storage", time.Now()) {
			s.e.logger.Error("The sending queue cannot keep a batch (its storage refuses writes): waiting for it (logged once a minute)",
				zap.Error(err))
		}
		if werr := s.e.waitForStorage(ctx); werr != nil {
			return fmt.Errorf("offer to the sending queue: %w (%w)", err, werr)
		}
	}
}

// waitForStorage returns once the queue's storage takes a write again, or
// with an error once ctx ends or the exporter stops.
func (e *k8seventsExporter) waitForStorage(ctx context.Context) error {
	b := retry.Backoff{Policy: storageRetry}
	for {
		if err := e.storageWait(ctx, b.Failed(nil), nil); err != nil {
			return err
		}
		if e.probe.Set(ctx, "probe", []byte{1}) == nil {
			return nil
		}
	}
}

// storageWait waits d before the storage is tried again; an error when
// ctx ends, the exporter stops or cut (nil: never) closes first.
func (e *k8seventsExporter) storageWait(ctx context.Context, d time.Duration, cut <-chan struct{}) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.stop:
		return errors.New("the exporter stops")
	case <-cut:
		return errors.New("the wait was cut short")
	}
}

// queueStorage is the persistent queue's storage extension in host, and
// its ID; false without a persistent queue or when host has no such
// storage extension (exporterhelper's start then names what is missing).
func (e *k8seventsExporter) queueStorage(host component.Host) (component.ID, storage.Extension, bool) {
	if !e.cfg.persistentQueue() {
		return component.ID{}, nil, false
	}
	id := *e.cfg.Queue.Get().StorageID
	ext, ok := host.GetExtensions()[id].(storage.Extension)
	return id, ext, ok
}

// openProbe opens the client waitForStorage writes to, on the persistent
// queue's storage extension.
func (e *k8seventsExporter) openProbe(ctx context.Context, host component.Host) error {
	_, ext, ok := e.queueStorage(host)
	if !ok {
		return nil
	}
	probe, err := ext.GetClient(ctx, component.KindExporter, e.id, "storage_probe")
	if err != nil {
		return fmt.Errorf("open the sending queue's storage: %w", err)
	}
	e.probe = probe
	return nil
}
