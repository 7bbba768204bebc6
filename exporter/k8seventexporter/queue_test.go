package k8seventexporter

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/apimodel"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestQueueWaitsForItsStorage: while the persistent queue's storage
// refuses writes, a batch is neither refused (its sender would send it
// again to every consumer of a fanout, on every retry) nor lost: the push
// waits, and once the storage takes writes the batch is queued and its
// Event written. At the stop, a push still waiting is answered with the
// storage's error.
func TestQueueWaitsForItsStorage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := apimodel.New(apimodel.Options{})
		srv.AddUser("admin-token", "admin", "system:masters")
		srv.CreateNamespace("shop")
		store := &flakyStorage{kv: map[string][]byte{}}
		cfg := loadConfig(t, "k8sevents/queued") // a persistent queue on file_storage
		cfg.InProcess = func() *rest.Config { return srv.RESTConfig("admin-token") }
		cfg.ReportingController = ""
		exp, err := createLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Start(context.Background(), flakyHost{*cfg.Queue.Get().StorageID: store}))

		store.setFailing(true)
		answered := make(chan error, 1)
		go func() { answered <- exp.ConsumeLogs(context.Background(), oneEvent("web-1.a")) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, answered, "answered while the storage refuses writes")
		store.setFailing(false)
		require.NoError(t, <-answered)
		time.Sleep(time.Minute)
		synctest.Wait()
		cs := kubernetes.NewForConfigOrDie(srv.RESTConfig("admin-token"))
		evs, err := cs.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, evs.Items, 1, "the batch the storage took at last is written")

		store.setFailing(true)
		go func() { answered <- exp.ConsumeLogs(context.Background(), oneEvent("web-1.b")) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, answered)
		require.NoError(t, exp.Shutdown(context.Background()))
		assert.ErrorIs(t, <-answered, errStorageRefuses, "at the stop, the storage's refusal")
	})
}

func oneEvent(name string) plog.Logs {
	ev := record(name, k8sevent.StateSingleton, 1, t0)
	ld := plog.NewLogs()
	k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	return ld
}

var errStorageRefuses = errors.New("storage refuses writes")

// flakyStorage is a storage extension over a map whose writes fail while
// failing (a full or read-only disk); a batch applies whole or not at all.
type flakyStorage struct {
	mu      sync.Mutex
	kv      map[string][]byte
	failing bool
}

func (s *flakyStorage) setFailing(f bool) { s.mu.Lock(); s.failing = f; s.mu.Unlock() }

func (s *flakyStorage) Start(context.Context, component.Host) error { return nil }
func (s *flakyStorage) Shutdown(context.Context) error              { return nil }
func (s *flakyStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return s, nil
}
func (s *flakyStorage) Close(context.Context) error { return nil }

func (s *flakyStorage) Get(ctx context.Context, key string) ([]byte, error) {
	op := storage.GetOperation(key)
	err := s.Batch(ctx, op) // before op.Value is read: a return's operands have no set order
	return op.Value, err
}

func (s *flakyStorage) Set(ctx context.Context, key string, value []byte) error {
	return s.Batch(ctx, storage.SetOperation(key, value))
}

func (s *flakyStorage) Delete(ctx context.Context, key string) error {
	return s.Batch(ctx, storage.DeleteOperation(key))
}

func (s *flakyStorage) Batch(_ context.Context, ops ...*storage.Operation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Type != storage.Get && s.failing {
			return errStorageRefuses
		}
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = append([]byte(nil), s.kv[op.Key]...)
			if _, ok := s.kv[op.Key]; !ok {
				op.Value = nil
			}
		case storage.Set:
			s.kv[op.Key] = append([]byte(nil), op.Value...)
		case storage.Delete:
			delete(s.kv, op.Key)
		}
	}
	return nil
}

type flakyHost map[component.ID]component.Component

func (h flakyHost) GetExtensions() map[component.ID]component.Component { return h }
