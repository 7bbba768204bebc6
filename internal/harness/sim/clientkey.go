package sim

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// appUserPrefix is the username of an app's ServiceAccount without its
// name (World.app).
const appUserPrefix = "system:serviceaccount:default:"

// recordController is the controller the ledger knows a record by where a
// processor takes it: for a record an app sent over OTLP, the app's (the
// k8seventsotlp receiver stamps the client and writes no controller: an
// app's series are its own), else the record's own.
func recordController(lr plog.LogRecord, ev *k8sevent.Event) string {
	client := k8sevent.Client(lr.Attributes())
	if client == "" {
		return ev.ReportingController
	}
	if name, ok := strings.CutPrefix(client, appUserPrefix); ok {
		return "example.com/" + name // appEvent's controller
	}
	return client
}
