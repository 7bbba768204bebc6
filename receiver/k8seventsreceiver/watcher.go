package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/ctxwait"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/retry"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

const (
	// checkpointInterval is how often a watch saves where it is; it also
	// saves at every bookmark and when it stops.
	checkpointInterval = time.Second
	recentSize         = 4096
)

// The retries of a failed list or watch, and of records the pipeline
// refused.
var (
	watchRetry = retry.Policy{Initial: time.Second, Multiplier: 2, Max: 30 * time.Second}
	emitRetry  = retry.Policy{Initial: 100 * time.Millisecond, Multiplier: 2, Max: 30 * time.Second}
)

// checkpointStore keeps the watches' checkpoints across restarts and leaders
// (a storage extension's client).
type checkpointStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte) error
}

// watcher lists and watches the Events of one namespace (or all) and emits
// one record per ADDED or MODIFIED object: no cache of the objects, only
// its bounded checkpoint.
type watcher struct {
	ns            string
	fieldSelector string
	cfg           *Config
	api           eventAPI
	next          consumer.Logs
	logger        *zap.Logger
	telemetry     *metadata.TelemetryBuilder
	store         checkpointStore // nil: no storage
	clock         func() time.Time
	cluster       *clusterIdentity // written on every record's resource; nil: none

	checkpoint *checkpoint
	expired    bool // the resourceVersion is gone (410): list again
	savedAt    time.Time
	open       *atomic.Int64 // the receiver's open watches, for its watches_open gauge
}

func (w *watcher) checkpointKey() string { return "checkpoint/" + w.ns }

// run watches until ctx ends, then saves its checkpoint.
func (w *watcher) run(ctx context.Context) {
	w.checkpoint = newCheckpoint(recentSize)
	w.load(ctx)
	backoff := retry.Backoff{Policy: watchRetry}
	for ctx.Err() == nil {
		err := w.cycle(ctx)
		if err == nil {
			backoff.Reset()
			continue
		}
		if ctx.Err() != nil {
			break
		}
		wait := backoff.Failed(err)
		w.logger.Warn("Watching events failed; retrying", zap.String("namespace", w.ns), zap.Duration("after", wait), zap.Error(err))
		w.count(w.telemetry.ReceiverK8seventsWatchRestarts, 1)
		if ctxwait.Sleep(ctx, wait) != nil {
			break
		}
	}
	w.save(context.WithoutCancel(ctx))
}

// cycle lists when it must, then watches until the watch ends.
func (w *watcher) cycle(ctx context.Context) error {
	if w.checkpoint.ResourceVersion == "" || w.expired || w.checkpoint.Relist != nil { // a relist under way goes on
		if err := w.relist(ctx); err != nil {
			return err
		}
	}
	wi, err := w.api.watch(ctx, w.ns, metav1.ListOptions{
		FieldSelector: w.fieldSelector, ResourceVersion: w.checkpoint.ResourceVersion, AllowWatchBookmarks: true,
	})
	if isExpired(err) {
		w.expired = true
		return nil
	}
	if err != nil {
		return err
	}
	defer wi.Stop()
	w.open.Add(1)
	defer w.open.Add(-1)
	idle := time.NewTimer(w.cfg.WatchIdleTimeout)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-idle.C:
			w.logger.Info("Watch idle; restarting it", zap.String("namespace", w.ns), zap.Duration("idle", w.cfg.WatchIdleTimeout))
			w.count(w.telemetry.ReceiverK8seventsWatchRestarts, 1)
			return nil
		case e, ok := <-wi.ResultChan():
			if !ok {
				w.count(w.telemetry.ReceiverK8seventsWatchRestarts, 1)
				return nil
			}
			idle.Reset(w.cfg.WatchIdleTimeout)
			w.count(w.telemetry.ReceiverK8seventsEventsReceived, 1, attribute.String("type", typeName(e.Type)))
			if done, err := w.handle(ctx, e); done || err != nil {
				return err
			}
		}
	}
}

// handle takes one watch event; done: the watch must end.
func (w *watcher) handle(ctx context.Context, e watch.Event) (done bool, err error) {
	switch e.Type {
	case watch.Added, watch.Modified:
		item, ok := fromWatch(e.Object)
		if !ok {
			return false, nil
		}
		if err := w.emit(ctx, []listed{item}); err != nil {
			return true, err
		}
		w.checkpoint.ResourceVersion = item.resourceVersion
	case watch.Deleted, watch.Bookmark: // an Event's TTL ran out: nothing occurred
		if rv := resourceVersionOf(e.Object); rv != "" {
			w.checkpoint.ResourceVersion = rv
		}
		if e.Type == watch.Bookmark {
			w.save(ctx)
		}
	case watch.Error:
		status := apierrors.FromObject(e.Object)
		if isExpired(status) {
			w.expired = true
			return true, nil
		}
		return true, fmt.Errorf("watch events in %q: %w", w.ns, status)
	}
	if w.clock().Sub(w.savedAt) >= checkpointInterval {
		w.save(ctx)
	}
	return false, nil
}

// relist lists the Events: the first time per the initial setting, after a
// 410 emitting only what the checkpoint has not seen. Every page is
// judged against the state from before the relist (lists come in
// namespace/name order, not in time order); the watermark moves only once
// the last page is in. A relist that fails goes on, in this run or the
// next, without emitting again what it emitted: each page it got through
// moves the position its checkpoint keeps (see checkpoint).
func (w *watcher) relist(ctx context.Context) error {
	fresh := w.checkpoint.ResourceVersion == ""
	opts := metav1.ListOptions{FieldSelector: w.fieldSelector, Limit: w.cfg.ListPageSize}
	if fresh && w.cfg.Initial == initialNone {
		opts.Limit = 1 // only the list's resourceVersion is wanted
		_, rv, _, err := w.api.list(ctx, w.ns, opts)
		if err != nil {
			return err
		}
		w.checkpoint.startAt(rv, w.clock())
		w.expired = false
		w.save(ctx)
		return nil
	}
	if !fresh {
		w.count(w.telemetry.ReceiverK8seventsRelists, 1)
		w.logger.Info("Watch resourceVersion expired; listing again", zap.String("namespace", w.ns))
	}
	w.checkpoint.beginRelist()
	// This attempt's list: the resourceVersion of its first page, which
	// its continued pages read at, and the key its last page ended at.
	var listedAt, last string
	for {
		items, rv, cont, err := w.api.list(ctx, w.ns, opts)
		if err != nil {
			return err
		}
		w.count(w.telemetry.ReceiverK8seventsEventsReceived, int64(len(items)), attribute.String("type", "listed"))
		if listedAt == "" {
			listedAt = rv
		}
		ordered := true
		for _, it := range items {
			ordered = ordered && it.key > last
			last = it.key
		}
		if !ordered && !w.checkpoint.Relist.ByObject {
			w.logger.Warn("A list page is not in namespace/name order; until this relist completes, it remembers what it emitted by object, up to a bound",
				zap.String("namespace", w.ns), zap.Int("bound", maxRelistEmitted))
		}
		w.checkpoint.relistPage(listedAt, ordered)
		out := items[:0]
		for _, it := range items {
			if w.checkpoint.emitAfterRelist(it.ev.UID, it.key, it.resourceVersion, it.ev.Time, fresh) {
				out = append(out, it)
			}
		}
		if err := w.emit(ctx, out); err != nil {
			return err
		}
		if len(items) > 0 {
			w.checkpoint.reach(last, listedAt)
		}
		if cont == "" {
			w.checkpoint.endRelist(rv)
			w.expired = false
			w.save(ctx)
			return nil
		}
		if w.clock().Sub(w.savedAt) >= checkpointInterval {
			w.save(ctx) // what this relist emitted so far survives a crash
		}
		opts.Continue = cont
	}
}

// emit sends one record per item and retries until the pipeline takes
// them (or refuses them for good): the checkpoint moves on only then.
func (w *watcher) emit(ctx context.Context, items []listed) error {
	if len(items) == 0 {
		return nil
	}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	if w.cluster != nil {
		k8sevent.EncodeCluster(rl.Resource().Attributes(), w.cluster.get(ctx))
	}
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	now := w.clock()
	for i := range items {
		lr := sl.LogRecords().AppendEmpty()
		k8sevent.Encode(&items[i].ev, lr)
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(now))
		if !items[i].ev.Time.IsZero() {
			w.telemetry.ReceiverK8seventsEmitLag.Record(ctx, now.Sub(items[i].ev.Time).Seconds())
		}
	}
	backoff := retry.Backoff{Policy: emitRetry}
	for {
		err := w.next.ConsumeLogs(ctx, ld)
		if err == nil {
			break
		}
		if consumererror.IsPermanent(err) {
			w.logger.Error("Pipeline refused event records for good; dropped", zap.Int("records", len(items)), zap.Error(err))
			break
		}
		if ctxwait.Sleep(ctx, backoff.Failed(err)) != nil {
			return fmt.Errorf("emit %d event records: %w", len(items), err)
		}
	}
	for i := range items {
		w.checkpoint.emitted(items[i].ev.UID, items[i].resourceVersion, items[i].ev.Time)
	}
	return nil
}

func (w *watcher) load(ctx context.Context) {
	if w.store == nil {
		return
	}
	b, err := w.store.Get(ctx, w.checkpointKey())
	if err == nil && len(b) > 0 {
		err = w.checkpoint.unmarshal(b)
	}
	if err != nil {
		w.logger.Warn("Cannot read the checkpoint; starting without it", zap.String("namespace", w.ns), zap.Error(err))
	}
}

// save writes the checkpoint: at every bookmark, at most every second
// while events flow or a relist pages, and when the watch stops. The
// checkpoint moves past a record only once the next consumer accepted it
// (emit), so a crash resumes at or before the first record not accepted:
// none is skipped, and those accepted since the last save are emitted
// again. The eventseries processor with storage logs every batch before it
// accepts it (its write-ahead log), so it knows them and counts none twice.
func (w *watcher) save(ctx context.Context) {
	if w.store == nil || !w.checkpoint.started() {
		return
	}
	w.savedAt = w.clock()
	b, err := w.checkpoint.marshal()
	if err == nil {
		err = w.store.Set(ctx, w.checkpointKey(), b)
	}
	if err != nil {
		w.logger.Warn("Cannot save the checkpoint", zap.String("namespace", w.ns), zap.Error(err))
	}
}

func (w *watcher) count(c metric.Int64Counter, n int64, attrs ...attribute.KeyValue) {
	c.Add(context.Background(), n, metric.WithAttributes(attrs...))
}

func isExpired(err error) bool {
	return err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err))
}

func typeName(t watch.EventType) string {
	switch t {
	case watch.Added:
		return "added"
	case watch.Modified:
		return "modified"
	case watch.Deleted:
		return "deleted"
	case watch.Bookmark:
		return "bookmark"
	default:
		return "error"
	}
}
