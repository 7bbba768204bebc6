package sim

import (
	"encoding/base64"
	"fmt"
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

// appToken is app name's bearer token: shaped as the API server issues
// one (a JWT for the collector's audience, with an exp), since
// k8stokenauth refuses anything else before it asks; the model decides,
// as the API server does, whether it is valid and until when.
func appToken(name string) string {
	enc := base64.RawURLEncoding.EncodeToString
	payload := fmt.Sprintf(`{"iss":"https://apimodel.invalid","aud":[%q],"exp":4102444800,"sub":%q}`, otlpAudience, appUserPrefix+name)
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sim:"+name))
}
