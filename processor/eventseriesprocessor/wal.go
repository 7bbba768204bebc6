package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
)

// The write-ahead log. With storage, each input batch is written to the
// storage (one entry: the processing clock it is counted at, and the batch
// as protobuf) before it is counted, so ConsumeLogs answers success only
// for a batch that a crash cannot lose. Entries are numbered in the order
// they are counted, under keys walKey(n); the saved state holds the first number
// its snapshot does not cover. A save writes the state and the deletion of the entries it covers in one storage
// batch, so an entry is replayed once or, if the save committed, never. At
// start the snapshot is restored and the entries from walFromKey on are
// counted again, in order, each at the clock it was counted at: the engine
// decides the same (series names are derived from the occurrence times),
// so the records they make are the ones emitted before the crash, made
// again (README "Write-ahead log": what a non-API sink then gets twice).

const walPrefix = "wal/"

// walKey is the storage key of entry n: fixed width, so that entries sort
// in their order and each one is appended at the end of bbolt's tree.
func walKey(n uint64) string {
	return fmt.Sprintf("%s%016x", walPrefix, n)
}

// walState is the log's bookkeeping; guarded by p.mu.
type walState struct {
	enabled  bool
	maxBytes int64
	next     uint64 // number of the next entry
	from     uint64 // first entry the saved snapshot does not cover
	bytes    int64  // bytes of the entries from..next-1
}

// walEntry is one log entry: the processing clock in ns, then the batch.
func walEntry(wall int64, ld plog.Logs) ([]byte, error) {
	b, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	if err != nil {
		return nil, fmt.Errorf("marshal %d records: %w", ld.LogRecordCount(), err)
	}
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, walClockBytes+len(b)), uint64(wall)), b...), nil
}

// walClockBytes is the size of an entry's clock, before the batch.
const walClockBytes = 8

func readWALEntry(b []byte) (wall int64, ld plog.Logs, err error) {
	if len(b) < walClockBytes {
		return 0, plog.Logs{}, errors.New("entry shorter than its clock")
	}
	ld, err = (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b[walClockBytes:])
	return int64(binary.BigEndian.Uint64(b)), ld, err
}

// walEntryOf is the log entry of ld, to be counted at wall; nil when the
// batch is not logged (no storage, no log, or no record).
func (p *eventSeriesProcessor) walEntryOf(ld plog.Logs, wall int64) ([]byte, error) {
	if p.store == nil || !p.wal.enabled || ld.LogRecordCount() == 0 {
		return nil, nil
	}
	return walEntry(wall, ld)
}

// logBatch writes entry (walEntryOf; nil: nothing to log) to the log
// before its batch is counted. The caller holds the turn (entries are
// numbered in the order they are counted) and not p.mu. A log over
// write_ahead_log.max_bytes is truncated first by a save. On error nothing
// is counted: the batch is refused and the sender's retry counts it once.
func (p *eventSeriesProcessor) logBatch(ctx context.Context, entry []byte) error {
	if entry == nil {
		return nil
	}
	p.mu.Lock()
	full, limit := p.wal.bytes > 0 && p.wal.bytes+int64(len(entry)) > p.wal.maxBytes, p.wal.maxBytes
	p.mu.Unlock()
	if full {
		if err := p.save(ctx); err != nil {
			return fmt.Errorf("the write-ahead log is full (write_ahead_log.max_bytes %d): %w", limit, err)
		}
	}
	p.mu.Lock()
	n := p.wal.next
	p.mu.Unlock()
	if err := p.store.Set(ctx, walKey(n), entry); err != nil {
		p.stateError(ctx, "log")
		return fmt.Errorf("write %d bytes to the write-ahead log in storage %q: %w", len(entry), p.cfg.Storage, err)
	}
	return nil
}

// logged marks the entry logBatch wrote (size bytes, 0: none) counted: the caller
// holds p.mu, in the same hold as it counts the batch, so a snapshot
// covers both or neither.
func (p *eventSeriesProcessor) logged(size int) {
	if size == 0 {
		return
	}
	p.wal.next++
	p.wal.bytes += int64(size)
}

// walTruncation is what a save writes with the snapshot it took under p.mu
// (the caller holds it): the deletion of the entries it covers, and the
// first one it does not (saved.LogFrom).
func (p *eventSeriesProcessor) walTruncation() (ops []*storage.Operation, covered uint64, bytes int64) {
	w := &p.wal
	for n := w.from; n < w.next; n++ {
		ops = append(ops, storage.DeleteOperation(walKey(n)))
	}
	return ops, w.next, w.bytes
}

// truncated records a committed save that covered the entries before
// covered, then holding bytes; the caller holds p.mu.
func (p *eventSeriesProcessor) truncated(covered uint64, bytes int64) {
	p.wal.from = max(p.wal.from, covered)
	p.wal.bytes = max(p.wal.bytes-bytes, 0)
}

// replayLog counts again the entries after the restored snapshot, in
// order, each at its clock; their records join what waits for the next
// consumer. The caller holds p.mu. An unreadable entry is logged, counted
// as a restore error and skipped.
func (p *eventSeriesProcessor) replayLog(ctx context.Context, from uint64) error {
	p.wal.from, p.wal.next = from, from
	now := p.clock().UnixNano()
	var records int
	for {
		get := storage.GetOperation(walKey(p.wal.next))
		if err := p.store.Batch(ctx, get); err != nil {
			return fmt.Errorf("read entry %d of the write-ahead log: %w", p.wal.next, err)
		}
		if get.Value == nil {
			break
		}
		p.wal.next++
		p.wal.bytes += int64(len(get.Value))
		wall, ld, err := readWALEntry(get.Value)
		if err != nil {
			p.logger.Error("Write-ahead log entry discarded", zap.Uint64("entry", p.wal.next-1), zap.Error(err))
			p.stateError(ctx, "restore")
			continue
		}
		// The collector died after logging the batch, maybe before its
		// sender had the answer: it may come again, from now on.
		p.resends.add(sha256.Sum256(get.Value[walClockBytes:]), now+int64(resendWindow), now)
		records += ld.LogRecordCount()
		out := p.observe(ctx, ld, wall)
		p.hold(&out, caller{}) // its caller was of the process that logged it
	}
	if p.wal.next > p.wal.from {
		p.logger.Info("Write-ahead log replayed", zap.Uint64("entries", p.wal.next-p.wal.from),
			zap.Int("records", records), zap.Int64("bytes", p.wal.bytes))
		p.wakeUp()
	}
	return nil
}
