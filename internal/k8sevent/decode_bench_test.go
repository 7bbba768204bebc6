package k8sevent_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// BenchmarkDecodeSanitize decodes and sanitizes records shaped as the
// contrib k8s_events receiver sends them (the regarding object on the
// resource, 7 attributes; 8 on the record), as the eventseries processor
// does on its hot path. Read ns/record.
func BenchmarkDecodeSanitize(b *testing.B) {
	ld := plog.NewLogs()
	for i := range 100 {
		rl := ld.ResourceLogs().AppendEmpty()
		res := rl.Resource().Attributes()
		res.PutStr(k8sevent.AttrObjectKind, "Pod")
		res.PutStr(k8sevent.AttrObjectName, "web-"+string(rune('a'+i%26)))
		res.PutStr(k8sevent.AttrObjectUID, "uid-web")
		res.PutStr(k8sevent.AttrObjectFieldPath, "spec.containers{app}")
		res.PutStr(k8sevent.AttrObjectAPIVersion, "v1")
		res.PutStr(k8sevent.AttrObjectResourceVer, "")
		res.PutStr(k8sevent.AttrNodeName, "node-1")
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetTimestamp(1_772_000_000_000_000_000)
		lr.Body().SetStr("Back-off restarting failed container app in pod")
		k8sevent.SetType(lr, k8sevent.TypeWarning)
		a := lr.Attributes()
		a.PutStr(k8sevent.AttrReason, "BackOff")
		a.PutStr(k8sevent.AttrAction, "Sync")
		a.PutStr(k8sevent.AttrStartTime, "2026-03-01 12:00:00 +0000 UTC")
		a.PutStr(k8sevent.AttrEventName, "web.17f0a2b3c4d5e6f7")
		a.PutStr(k8sevent.AttrEventUID, "event-uid")
		a.PutStr(k8sevent.AttrNamespace, "ns")
		a.PutStr(k8sevent.AttrReportingController, "kubelet")
		a.PutStr(k8sevent.AttrReportingInstance, "node-1")
	}
	opts := k8sevent.DecodeOptions{SkipTimes: true}
	now := time.Unix(1_772_000_000, 0)
	b.ReportAllocs()
	for range b.N {
		rls := ld.ResourceLogs()
		for i := range rls.Len() {
			rl := rls.At(i)
			var ev k8sevent.Event
			_, _ = k8sevent.DecodeAttributes(rl.Resource().Attributes(), &ev, opts)
			_, _ = k8sevent.DecodeRecord(rl.ScopeLogs().At(0).LogRecords().At(0), &ev, opts)
			if _, fatal := k8sevent.Sanitize(&ev, now); fatal != 0 {
				b.Fatal(fatal)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/record")
}
