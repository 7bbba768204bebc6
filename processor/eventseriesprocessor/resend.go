package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"crypto/sha256"
	"slices"
	"time"

	"go.opentelemetry.io/collector/client"
)

// Resends. A sender that gets no answer sends its batch again (an OTLP
// client after its deadline, or after the connection broke), byte for byte
// the same, and so does an app whose request tier 1 split over several
// tier-2 collectors when another part failed. A batch counted again would
// be counted twice. With the write-ahead log the processor remembers, by a
// SHA-256 digest of the batch as logged, the batches a sender may send
// again: those the log replays at start (the collector died after logging
// them, perhaps before answering), those whose caller's context had ended
// by the time they were counted, and every batch of a network sender (an
// OTLP receiver's request: the caller's context names its address). For resendWindow after
// such a batch was counted, and after every start of the processor while
// it is remembered, a batch identical to it is answered nil and not
// counted again, as often as it comes. The memory is saved with the state,
// so a second crash keeps it. The window is counted from when the
// processor can take the resend, not from the count: a sender that retries
// without end (tier 1) resends once the processor is back, however long it
// was down, and a restart in CrashLoopBackOff or after a volume moved
// comes minutes later.
//
// A false positive needs a batch identical to one of those, records,
// timestamps (nanoseconds) and resources alike, that is not a resend:
// distinct occurrences carry distinct times.

const (
	// resendWindow is how long a sender is expected to take to send a batch
	// again once the processor can take it: a sender's backoff is far
	// shorter (exporterhelper's is at most 30 s), this covers a sender
	// cut off from a running processor for a while too.
	resendWindow = time.Hour
	// maxResends bounds the memory (some 3 MB); past it the oldest go first.
	maxResends = 1 << 16
)

type batchDigest = [sha256.Size]byte

// resendMemory is the batches remembered, oldest first; guarded by p.mu.
type resendMemory struct {
	fifo  []savedResend // as saved
	until map[batchDigest]int64
}

// add remembers d until until, if that is after now.
func (m *resendMemory) add(d batchDigest, until, now int64) {
	if until <= now {
		return
	}
	if m.until == nil {
		m.until = map[batchDigest]int64{}
	}
	m.fifo = append(m.fifo, savedResend{Digest: d, Until: until})
	m.until[d] = max(m.until[d], until)
	m.prune(now)
}

// prune forgets what expired by now, and the oldest past maxResends.
func (m *resendMemory) prune(now int64) {
	n := 0
	for n < len(m.fifo) && (m.fifo[n].Until <= now || len(m.fifo)-n > maxResends) {
		if r := m.fifo[n]; m.until[r.Digest] == r.Until {
			delete(m.until, r.Digest)
		}
		n++
	}
	m.fifo = m.fifo[n:] // the array is let go when append outgrows it
	if len(m.fifo) == 0 {
		m.fifo = nil
	}
}

func (m *resendMemory) match(d batchDigest, now int64) bool {
	until, ok := m.until[d]
	return ok && now < until
}

// saved is the memory as a save keeps it at now, oldest first.
func (m *resendMemory) saved(now int64) []savedResend {
	m.prune(now)
	return slices.Clone(m.fifo)
}

// isResend reports whether entry (walEntryOf; nil: not logged) repeats a
// batch remembered at wall: its sender is answered and it is not counted
// again. The digest is taken only while something is remembered.
func (p *eventSeriesProcessor) isResend(entry []byte, wall int64) bool {
	if entry == nil {
		return false
	}
	p.mu.Lock()
	p.resends.prune(wall)
	empty := len(p.resends.fifo) == 0
	p.mu.Unlock()
	if empty {
		return false
	}
	d := sha256.Sum256(entry[walClockBytes:])
	p.mu.Lock()
	resent := p.resends.match(d, wall)
	p.mu.Unlock()
	if !resent {
		return false
	}
	p.telemetry.ProcessorEventseriesResentBatches.Add(context.Background(), 1)
	if p.repeatLog.Allow("resend", p.clock()) {
		p.logger.Info("A batch counted before came again (its answer may have been lost to a crash or the sender's deadline): answered, not counted again (logged once a minute)")
	}
	return true
}

// remember keeps entry's batch, counted at wall, for its sender's resend.
// Without the log (entry nil) there is nothing to know it by.
func (p *eventSeriesProcessor) remember(entry []byte, wall int64) {
	if entry == nil {
		return
	}
	d := sha256.Sum256(entry[walClockBytes:])
	p.mu.Lock()
	p.resends.add(d, wall+int64(resendWindow), wall)
	p.dirty = true
	p.mu.Unlock()
}

// fromNetwork reports whether ctx is a network sender's request: an OTLP
// receiver puts the client's address into the context it passes on.
func fromNetwork(ctx context.Context) bool {
	return client.FromContext(ctx).Addr != nil
}
