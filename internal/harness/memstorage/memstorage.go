// Package memstorage is a storage extension over a map, for tests that
// need a collector's storage without a disk: its one map is the disk
// every client writes (and that outlives a component's restarts), a batch
// applies whole or not at all, as bbolt's transaction does, and the disk
// can be made to refuse writes (a full or read-only volume).
package memstorage

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// ErrRefused is what a write answers while the storage refuses writes.
var ErrRefused = errors.New("storage refuses writes")

// Storage is the extension, and the client it hands out to everyone.
type Storage struct {
	mu      sync.Mutex
	kv      map[string][]byte
	failing bool
}

// New is an empty storage that takes writes.
func New() *Storage { return &Storage{kv: map[string][]byte{}} }

// SetFailing makes every batch that writes fail with ErrRefused (reads
// still answer), or ends that.
func (s *Storage) SetFailing(failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = failing
}

func (s *Storage) Start(context.Context, component.Host) error { return nil }
func (s *Storage) Shutdown(context.Context) error              { return nil }

// GetClient hands out the storage itself: every client shares the map.
func (s *Storage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return s, nil
}

func (s *Storage) Close(context.Context) error { return nil }

func (s *Storage) Get(ctx context.Context, key string) ([]byte, error) {
	op := storage.GetOperation(key)
	err := s.Batch(ctx, op) // before op.Value is read: a return's operands have no set order
	return op.Value, err
}

func (s *Storage) Set(ctx context.Context, key string, value []byte) error {
	return s.Batch(ctx, storage.SetOperation(key, value))
}

func (s *Storage) Delete(ctx context.Context, key string) error {
	return s.Batch(ctx, storage.DeleteOperation(key))
}

// Batch applies ops whole, or, while failing and one of them writes, not
// at all.
func (s *Storage) Batch(_ context.Context, ops ...*storage.Operation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Type != storage.Get && s.failing {
			return ErrRefused
		}
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = nil
			if v, ok := s.kv[op.Key]; ok {
				op.Value = append([]byte(nil), v...)
			}
		case storage.Set:
			s.kv[op.Key] = append([]byte(nil), op.Value...)
		case storage.Delete:
			delete(s.kv, op.Key)
		}
	}
	return nil
}
