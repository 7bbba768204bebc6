package harness

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/k8sevents/otel-k8sevents"

// TestShippedCodeImportsNoHarness lists what the four components compile
// into the collector binary and fails if any of it is test or demo support.
func TestShippedCodeImportsNoHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps",
		module+"/receiver/k8seventsreceiver",
		module+"/processor/eventseriesprocessor",
		module+"/exporter/k8seventexporter",
		module+"/connector/eventsumconnector",
		module+"/receiver/k8seventsotlpreceiver",
		module+"/extension/k8stokenauthextension",
	).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var ours []string
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, module+"/") {
			continue
		}
		ours = append(ours, strings.TrimPrefix(pkg, module+"/"))
		if strings.HasPrefix(pkg, module+"/internal/harness") {
			t.Errorf("the collector binary would contain %s", pkg)
		}
	}
	if len(ours) < 6 {
		t.Fatalf("go list found only %v: the check would pass vacuously", ours)
	}
	t.Logf("shipped packages of this module: %s", strings.Join(ours, " "))
}
