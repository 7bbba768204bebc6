package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// What the processor keeps across a crash (docs/design.md): one saved
// state under savedKey, written whole by every save in the same storage
// batch as the log's truncation, and the write-ahead log's entries
// (wal.go). The state is the gob encoding of saved; the engine's snapshot
// inside it carries its own version (engine.SnapshotVersion) and reads the
// versions before it. Record batches are pdata's protobuf wherever they
// are kept. A state that builds of snapshot version 8 saved, under four
// keys of their own, is read by readV8 and replaced by the first save.
const savedKey = "state"

// saved is the saved state. Its fields are the format: a field renamed is
// lost from the states saved before.
type saved struct {
	Engine  []byte        // engine.Snapshot; nil: nothing to restore
	Waiting [][]byte      // the outbox, oldest batch first, each a plog.Logs as protobuf
	Resends []savedResend // the resend memory, oldest first
	LogFrom uint64        // the first log entry Engine does not cover
}

// savedResend is a batch remembered for its sender's resend (resend.go).
type savedResend struct {
	Digest batchDigest // SHA-256 of the batch as logged
	Until  int64       // processing clock, ns: remembered until then
}

func (s *saved) encode() ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(s); err != nil {
		return nil, fmt.Errorf("encode the saved state: %w", err)
	}
	return b.Bytes(), nil
}

func decodeSaved(b []byte) (saved, error) {
	var s saved
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return saved{}, fmt.Errorf("decode the saved state (%d bytes): %w", len(b), err)
	}
	return s, nil
}

// The keys of a state saved by a build of snapshot version 8: the
// snapshot, the outbox (each batch a uvarint length and its protobuf), the
// first log entry not covered (8 bytes, big endian) and the resend memory
// (each digest followed by its time, 8 bytes big endian).
const (
	v8EngineKey  = "engine"
	v8PendingKey = "pending"
	v8FromKey    = "wal.from"
	v8ResendsKey = "wal.resends"
)

var v8Keys = []string{v8EngineKey, v8PendingKey, v8FromKey, v8ResendsKey}

// readSaved reads the saved state: found is false when there is none (a
// first start); v8 is true when it was read from a version-8 layout, whose
// keys the next save deletes. A state that cannot be read is an error.
func readSaved(ctx context.Context, client storage.Client) (s saved, found, v8 bool, err error) {
	ops := []*storage.Operation{storage.GetOperation(savedKey)}
	for _, k := range v8Keys {
		ops = append(ops, storage.GetOperation(k))
	}
	if err := client.Batch(ctx, ops...); err != nil {
		return saved{}, false, false, err
	}
	if ops[0].Value != nil {
		s, err = decodeSaved(ops[0].Value)
		return s, true, false, err
	}
	old := map[string][]byte{}
	for i, k := range v8Keys {
		if v := ops[i+1].Value; v != nil {
			old[k] = v
		}
	}
	if len(old) == 0 {
		return saved{}, false, false, nil
	}
	s, err = fromV8(old)
	return s, true, true, err
}

// fromV8 is the saved state of a version-8 layout's values by key.
func fromV8(old map[string][]byte) (saved, error) {
	s := saved{Engine: old[v8EngineKey]}
	for b := old[v8PendingKey]; len(b) > 0; {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return saved{}, errors.New("version 8 outbox: truncated batch")
		}
		s.Waiting = append(s.Waiting, b[w:w+int(n)])
		b = b[w+int(n):]
	}
	if from := old[v8FromKey]; len(from) == 8 {
		s.LogFrom = binary.BigEndian.Uint64(from)
	}
	const size = sha256.Size + 8
	b := old[v8ResendsKey]
	if len(b)%size != 0 {
		return saved{}, errors.New("version 8 resend memory: truncated")
	}
	for ; len(b) > 0; b = b[size:] {
		s.Resends = append(s.Resends, savedResend{Digest: batchDigest(b[:sha256.Size]), Until: int64(binary.BigEndian.Uint64(b[sha256.Size:size]))})
	}
	return s, nil
}
