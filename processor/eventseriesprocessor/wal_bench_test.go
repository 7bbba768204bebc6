package eventseriesprocessor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// BenchmarkWriteAheadLog is the log's cost per record on file_storage
// (bbolt): off (storage, saves only), on, and on with the extension's
// fsync: true, for requests of 1 and 100 records in the OTLP shape (one
// occurrence per record, 100 pods). logged-B/record is what the log
// entries hold; written-B/record what the process passed to write
// syscalls (bbolt's pages and meta pages included; Linux only).
func BenchmarkWriteAheadLog(b *testing.B) {
	for _, records := range []int{1, 100} {
		for _, mode := range []string{"off", "on", "on+fsync"} {
			b.Run(fmt.Sprintf("records=%d/log=%s", records, mode), func(b *testing.B) {
				benchmarkLog(b, records, mode)
			})
		}
	}
}

func benchmarkLog(b *testing.B, records int, mode string) {
	h, stop := fileStorage(b, b.TempDir(), func(cfg *filestorage.Config) { cfg.FSync = mode == "on+fsync" })
	defer stop()
	cfg := createDefaultConfig()
	id := storageID
	cfg.Storage, cfg.WriteAheadLog.Enabled = &id, mode != "off"
	p, err := newProcessor(processortest.NewNopSettings(processortest.NopType), cfg, &faultSink{}, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background(), h); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()

	batches := make([]plog.Logs, 64)
	for i := range batches {
		batches[i] = benchOTLPBatch(i, records)
	}
	var logged int
	for _, ld := range batches {
		entry, err := walEntry(0, ld)
		if err != nil {
			b.Fatal(err)
		}
		logged += len(entry)
	}
	in := plog.NewLogs()
	written := syscallWrites()
	b.ResetTimer()
	for i := range b.N {
		batches[i%len(batches)].CopyTo(in)
		if err := p.ConsumeLogs(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N * records)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/record")
	if w := syscallWrites(); w >= 0 && written >= 0 {
		b.ReportMetric(float64(w-written)/n, "written-B/record")
	}
	if mode != "off" {
		b.ReportMetric(float64(logged)/float64(len(batches)*records), "logged-B/record")
	}
}

// benchOTLPBatch is request i of records records, one occurrence each.
func benchOTLPBatch(i, records int) plog.Logs {
	var evs []k8sevent.Event
	for j := range records {
		ev := podEvent("pod-"+strconv.Itoa((i*records+j)%100), "BackOff", "Back-off restarting failed container app in pod")
		ev.Time = time.Now()
		evs = append(evs, ev)
	}
	return logsOf(evs...)
}

// syscallWrites is the bytes this process passed to write syscalls so
// far; -1 where /proc/self/io is not there.
func syscallWrites() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}
