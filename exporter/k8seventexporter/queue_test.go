package k8seventexporter

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/apimodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/memstorage"
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
		store := memstorage.New()
		cfg := loadConfig(t, "k8sevents/queued") // a persistent queue on file_storage
		cfg.InProcess = func() *rest.Config { return srv.RESTConfig("admin-token") }
		cfg.ReportingController = ""
		exp, err := createLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Start(context.Background(), flakyHost{*cfg.Queue.Get().StorageID: store}))

		store.SetFailing(true)
		answered := make(chan error, 1)
		go func() { answered <- exp.ConsumeLogs(context.Background(), oneEvent("web-1.a")) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, answered, "answered while the storage refuses writes")
		store.SetFailing(false)
		require.NoError(t, <-answered)
		time.Sleep(time.Minute)
		synctest.Wait()
		cs := kubernetes.NewForConfigOrDie(srv.RESTConfig("admin-token"))
		evs, err := cs.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, evs.Items, 1, "the batch the storage took at last is written")

		store.SetFailing(true)
		go func() { answered <- exp.ConsumeLogs(context.Background(), oneEvent("web-1.b")) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, answered)
		require.NoError(t, exp.Shutdown(context.Background()))
		assert.ErrorIs(t, <-answered, memstorage.ErrRefused, "at the stop, the storage's refusal")
	})
}

func oneEvent(name string) plog.Logs {
	ev := record(name, k8sevent.StateSingleton, 1, t0)
	ld := plog.NewLogs()
	k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	return ld
}

// flakyHost is a host whose extensions are the map.
type flakyHost map[component.ID]component.Component

func (h flakyHost) GetExtensions() map[component.ID]component.Component { return h }
