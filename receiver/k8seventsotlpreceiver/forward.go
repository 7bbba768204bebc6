package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// forward writes rec's Event into lr, as the contract defines it and
// nothing else a client sent (no other attribute, resource or scope, no
// body but the note), bound to who sent it:
//
//   - it is written in the namespace it was authorized for, stated
//     (k8s.event.namespace), not left to be derived again;
//   - its reporter is its client: no reporting controller or source (the
//     exporter writes its own) and, as reporting instance, the client's
//     username and the namespace (reporter). The eventseries processor
//     keys its series, compressed events, aggregates and spam buckets by
//     the reporter, so records of two clients, or of one client in two
//     namespaces, never share one, and a client cannot get a fresh spam
//     bucket by naming another reporter;
//   - the uid it names is scoped to its client and namespace (scopedUID):
//     the processor's totals know an Event by its uid, and a client naming
//     another's must not make that client's records count as repeats;
//   - its origin is the client and this receiver's cluster (PutOrigin);
//   - it has a time: one that came without any is stamped with when its
//     request was received. The processor takes a batch identical to one
//     counted before for its sender's resend, so two requests of the same
//     timeless record would count once; stamped, each counts (and a resend
//     of such a request counts again: only a sender's time can tell it).
func (r *otlpReceiver) forward(rec *record, client string, received time.Time, lr plog.LogRecord) {
	ev := rec.ev
	if ev.Time.IsZero() {
		ev.Time = received
	}
	ev.Namespace = rec.ns
	ev.ReportingController, ev.SourceComponent, ev.SourceHost = "", "", ""
	ev.ReportingInstance = reporter(client, rec.ns)
	if ev.UID != "" {
		ev.UID = scopedUID(client, rec.ns, ev.UID)
	}
	ev.Cluster = k8sevent.Cluster{}
	k8sevent.Encode(&ev, lr)
	k8sevent.PutOrigin(lr.Attributes(), client, r.cluster)
}

// reporter is the reporting instance of a client's records in namespace
// ns: "<username>@<namespace>" (a namespace holds no "@", so the last one
// splits it), and, when that is longer than a reporting instance may be,
// its start and a hash of the whole.
func reporter(client, ns string) string {
	s := client + "@" + ns
	if len(s) <= k8sevent.MaxFieldBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:12])
	return k8sevent.Truncate(s, k8sevent.MaxFieldBytes-len(h)-1) + "~" + h
}

// scopedUID is an Event uid a client named, made its own: the same for
// the same client, namespace and uid, another for any other.
func scopedUID(client, ns, uid string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + ns + "\x00" + uid))
	return hex.EncodeToString(sum[:16])
}
