package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// errCrashed answers every call of a process that crashed: its memory is
// gone, and nothing it still runs may reach the world outside it.
var errCrashed = errors.New("sim: the process crashed")

// disk is what one process keeps across crashes and restarts: a storage
// extension's keys per client, as file_storage keeps a bbolt file per
// component. A batch is applied whole or not at all (bbolt's transaction).
type disk struct {
	mu      sync.Mutex
	files   map[string]map[string][]byte
	failing bool // a storage fault: every write is refused
}

// errStorageFault is a disk that refuses writes (full, read-only, gone).
var errStorageFault = errors.New("sim: storage refuses writes")

func (d *disk) fault(string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failing {
		return errStorageFault
	}
	return nil
}

func (d *disk) setFailing(failing bool) {
	d.mu.Lock()
	d.failing = failing
	d.mu.Unlock()
}

func newDisk() *disk { return &disk{files: map[string]map[string][]byte{}} }

// snapshot copies every file, for an upgrade fixture or a report.
func (d *disk) snapshot() map[string]map[string][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]map[string][]byte, len(d.files))
	for name, kv := range d.files {
		out[name] = maps.Clone(kv)
	}
	return out
}

// restore replaces every file (an upgrade fixture).
func (d *disk) restore(files map[string]map[string][]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files = map[string]map[string][]byte{}
	for name, kv := range files {
		d.files[name] = maps.Clone(kv)
	}
}

// storageExtension is a storage extension over a disk, for one incarnation
// of a process: once that incarnation crashes, its clients refuse every call.
type storageExtension struct {
	disk  *disk
	alive *lifeline
}

func (s *storageExtension) Start(context.Context, component.Host) error { return nil }
func (s *storageExtension) Shutdown(context.Context) error              { return nil }

func (s *storageExtension) GetClient(_ context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	file := fmt.Sprintf("%s_%s_%s", kind.String(), id.String(), name)
	return &storageClient{disk: s.disk, file: file, alive: s.alive}, nil
}

type storageClient struct {
	disk  *disk
	file  string
	alive *lifeline
}

func (c *storageClient) Get(ctx context.Context, key string) ([]byte, error) {
	op := storage.GetOperation(key)
	err := c.Batch(ctx, op)
	return op.Value, err
}

func (c *storageClient) Set(ctx context.Context, key string, value []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, value))
}

func (c *storageClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

func (c *storageClient) Batch(_ context.Context, ops ...*storage.Operation) error {
	writes := false
	for _, op := range ops {
		writes = writes || op.Type != storage.Get
	}
	if !writes {
		if !c.alive.ok() {
			return errCrashed
		}
		c.apply(ops)
		return nil
	}
	n, alive := c.alive.before(effectStorage)
	if !alive {
		return errCrashed
	}
	if err := c.disk.fault(c.file); err != nil {
		return err
	}
	c.apply(ops)
	if !c.alive.after(effectStorage, n) {
		return errCrashed
	}
	return nil
}

// apply runs ops as one transaction.
func (c *storageClient) apply(ops []*storage.Operation) {
	c.disk.mu.Lock()
	defer c.disk.mu.Unlock()
	kv := c.disk.files[c.file]
	if kv == nil {
		kv = map[string][]byte{}
		c.disk.files[c.file] = kv
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = nil
			if v, ok := kv[op.Key]; ok {
				op.Value = append([]byte(nil), v...)
			}
		case storage.Set:
			kv[op.Key] = append([]byte(nil), op.Value...)
		case storage.Delete:
			delete(kv, op.Key)
		}
	}
}

func (c *storageClient) Close(context.Context) error { return nil }
