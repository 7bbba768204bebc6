package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
)

// saveInterval bounds what a crash loses: the state of the last seconds.
// Saving is a snapshot under the lock (milliseconds for full caches) and a
// write outside it, and only when something changed.
const saveInterval = 5 * time.Second

// restore opens the storage client and restores the saved state
// (durable.go): the engine from its snapshot, the resend memory, and the
// records waiting for the next consumer, which go out before anything
// else. Then the write-ahead log is replayed (wal.go). No state is a first
// start. A snapshot the engine refuses (corrupt, another version, mode or
// series key) is logged and counted and the processor starts empty: that
// costs what a restart without storage costs, while failing would stop
// the pipeline until someone deletes it. Another version is an upgrade,
// not damage: counted apart. The waiting records are sent even then: they
// were decided and counted; and the log is replayed: its batches were
// accepted. A state that cannot be decoded at all is logged and counted,
// and the processor starts empty without them.
func (p *eventSeriesProcessor) restore(ctx context.Context, host component.Host) error {
	if p.cfg.Storage == nil {
		return nil
	}
	ext, ok := host.GetExtensions()[*p.cfg.Storage].(storage.Extension)
	if !ok {
		return fmt.Errorf("eventseries: storage %q is not a storage extension in this collector", p.cfg.Storage)
	}
	client, err := ext.GetClient(ctx, component.KindProcessor, p.id, "")
	if err != nil {
		return fmt.Errorf("eventseries: storage %q: %w", p.cfg.Storage, err)
	}
	st, found, v8, err := readSaved(ctx, client)
	if err != nil && !found {
		_ = client.Close(ctx)
		return fmt.Errorf("eventseries: read the state from storage %q: %w", p.cfg.Storage, err)
	}
	p.store, p.v8Layout = client, v8
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.logger.Error("Saved state discarded: the processor starts empty", zap.Error(err))
		p.stateError(ctx, "restore")
	}
	p.restorePending(ctx, st.Waiting)
	now := p.clock().UnixNano()
	for _, r := range st.Resends {
		// Each batch is remembered for resendWindow from now at least, as
		// its sender can resend it only from now on.
		p.resends.add(r.Digest, max(r.Until, now+int64(resendWindow)), now)
	}
	var configured *engine.Engine // set while the engine of a state saved under other settings replays the log
	if snap := st.Engine; snap != nil {
		if err := p.engine.Restore(snap); errors.Is(err, engine.ErrSnapshotSettings) {
			configured = p.savedUnder(ctx, snap, err)
		} else if errors.Is(err, engine.ErrSnapshotVersion) {
			p.logger.Warn("Saved state of another snapshot version discarded (another build wrote it): the processor starts empty; "+
				"series open at the upgrade continue in new objects and watched Events count their cumulative counts again",
				zap.Error(err), zap.Int("bytes", len(snap)))
			p.stateEvent(ctx, "restore", "version_refused")
		} else if err != nil {
			p.logger.Error("Saved state discarded: the processor starts empty", zap.Error(err), zap.Int("bytes", len(snap)))
			p.stateError(ctx, "restore")
		} else {
			p.logger.Info("State restored", zap.Int("open_entries", p.engine.Len()), zap.Int("bytes", len(snap)),
				zap.Int("waiting_records", p.pending.records))
		}
	}
	if p.eventTime {
		p.watermark = p.engine.Now()
	}
	err = p.replayLog(ctx, st.LogFrom)
	if configured != nil {
		p.carryOver(ctx, configured)
	}
	if err != nil {
		p.store = nil
		_ = client.Close(ctx)
		return fmt.Errorf("eventseries: storage %q: %w", p.cfg.Storage, err)
	}
	p.armTimer() // deadlines passed while the collector was down are due now
	return nil
}

// savedUnder runs the engine of a state saved under another mode or
// series key (refused by Restore with why) in place of the configured one,
// until carryOver: what was logged after the state replays under the
// settings it was counted under, as before the restart. It returns the
// configured engine; nil when the state cannot be read (the processor
// starts empty). The caller holds p.mu.
func (p *eventSeriesProcessor) savedUnder(ctx context.Context, snap []byte, why error) *engine.Engine {
	saved, err := p.engine.Saved(snap)
	if err != nil {
		p.logger.Error("Saved state discarded: the processor starts empty", zap.Error(err), zap.Int("bytes", len(snap)))
		p.stateError(ctx, "restore")
		return nil
	}
	p.logger.Warn("Saved state made under other settings: its held-back counts are written and its series end; "+
		"the watched Events keep their totals", zap.NamedError("settings", why))
	configured := p.engine
	p.engine = saved
	return configured
}

// carryOver ends the saved state's engine into the configured one (see
// savedUnder): the counts it held back go out first, in the mode they were
// counted in. The caller holds p.mu.
func (p *eventSeriesProcessor) carryOver(ctx context.Context, configured *engine.Engine) {
	ems, err := configured.Carry(p.engine)
	// The metrics follow one engine's counts: what the saved state's engine
	// counted (the replay, the flush) is reported before the configured
	// engine, whose counts start at zero, takes over.
	p.report(ctx, &problemCounts{})
	p.engine, p.reported = configured, reported{}
	if err != nil {
		p.logger.Error("Saved state discarded: the processor starts empty", zap.Error(err))
		p.stateError(ctx, "restore")
		return
	}
	out := newOutput()
	for i := range ems {
		out.emitTimer(&ems[i])
	}
	p.hold(&out, caller{})
}

// restorePending takes the saved records that wait for the next consumer;
// the caller holds p.mu.
func (p *eventSeriesProcessor) restorePending(ctx context.Context, batches [][]byte) {
	if len(batches) == 0 {
		return
	}
	o, err := outboxOf(batches)
	if err != nil {
		p.logger.Error("Saved records waiting for the next consumer discarded", zap.Error(err), zap.Int("batches", len(batches)))
		p.stateError(ctx, "restore")
		return
	}
	p.pending = o
	p.heldSince = p.clock().UnixNano()
	p.wakeUp() // sent first, even before any input
}

// runSaves saves the state every saveInterval while it changes. A save
// that fails is tried again at the next tick; each failure is counted
// (state{operation=save,outcome=error}) and logged at most once a minute,
// so that a volume refusing writes for hours is a handful of lines.
func (p *eventSeriesProcessor) runSaves() {
	defer p.wg.Done()
	tick := time.NewTicker(p.saveEvery)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			if err := p.save(context.Background()); err != nil && p.repeatLog.Allow("save", p.clock()) {
				p.logger.Warn("State not saved; retrying at every save interval (logged once a minute)",
					zap.Duration("save_interval", p.saveEvery), zap.Error(err))
			}
		}
	}
}

// save writes the saved state (durable.go: the engine's snapshot, the
// records waiting for the next consumer, the resend memory, where the log
// starts) to storage, if it changed since the last save. It is taken
// under p.mu, which is never held across a call to the next
// consumer: a blocked one does not hold up saves. The write runs outside
// the lock: records keep flowing meanwhile.
//
// The same batch truncates the write-ahead log by the entries the snapshot
// covers. Saves run one at a time.
func (p *eventSeriesProcessor) save(ctx context.Context) error {
	p.saveMu.Lock()
	defer p.saveMu.Unlock()
	p.mu.Lock()
	if !p.dirty {
		p.mu.Unlock()
		return nil
	}
	st := saved{Engine: p.engine.Snapshot(), Waiting: slices.Clone(p.pending.saved), Resends: p.resends.saved(p.clock().UnixNano())}
	walOps, covered, logBytes := p.walTruncation()
	st.LogFrom = covered
	v8 := p.v8Layout
	p.dirty = false
	p.mu.Unlock()
	if err := p.write(ctx, &st, walOps, v8); err != nil {
		p.mu.Lock()
		p.dirty = true // the next save writes it all again
		p.mu.Unlock()
		p.stateError(ctx, "save")
		return err
	}
	p.mu.Lock()
	p.v8Layout = p.v8Layout && !v8
	p.truncated(covered, logBytes)
	p.mu.Unlock()
	p.stateEvent(ctx, "save", "ok")
	return nil
}

// write stores st with the log's truncation walOps in one storage batch,
// deleting the keys of a version-8 state (v8) in it too.
func (p *eventSeriesProcessor) write(ctx context.Context, st *saved, walOps []*storage.Operation, v8 bool) error {
	b, err := st.encode()
	if err != nil {
		return fmt.Errorf("eventseries: %w", err)
	}
	ops := append([]*storage.Operation{storage.SetOperation(savedKey, b)}, walOps...)
	if v8 {
		for _, k := range v8Keys {
			ops = append(ops, storage.DeleteOperation(k))
		}
	}
	if err := p.store.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("eventseries: save the state (%d bytes) to storage %q: %w", len(b), p.cfg.Storage, err)
	}
	return nil
}

func (p *eventSeriesProcessor) stateError(ctx context.Context, operation string) {
	p.stateEvent(ctx, operation, "error")
}

// stateEvent counts one operation on the state (save, restore, log) by its outcome.
func (p *eventSeriesProcessor) stateEvent(ctx context.Context, operation, outcome string) {
	p.telemetry.ProcessorEventseriesState.Add(ctx, 1, metric.WithAttributes(
		attribute.String("operation", operation), attribute.String("outcome", outcome)))
}
