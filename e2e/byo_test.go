package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

// TestBringYourOwnDistribution builds testdata/byo/builder-config.yaml with
// ocb: a user's own distribution (contrib components plus this project's four
// entries, the module replaced by this checkout). Then every ready
// configuration is validated with it: each validates when the distribution
// has every component type it names; otherwise validation fails naming a
// missing one. What each ready configuration needs beyond that user's set is
// in docs/distribution.md ("Bring your own distribution").
func TestBringYourOwnDistribution(t *testing.T) {
	parallel(t)
	ocb := filepath.Join(filepath.Dir(binary(t)), "builder")
	if _, err := os.Stat(ocb); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ocb (make otelcol installs it): %v", err)
		}
		t.Skipf("ocb (make otelcol installs it): %v", err)
	}
	root, err := childproc.ModuleRoot()
	require.NoError(t, err)
	spec, err := os.ReadFile("../testdata/byo/builder-config.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	spec = []byte(strings.ReplaceAll(string(spec), "REPO_ROOT", root))
	config := filepath.Join(dir, "builder-config.yaml")
	require.NoError(t, os.WriteFile(config, spec, 0o600))
	build := exec.Command(ocb, "--config", config)
	build.Dir = dir
	out, err := build.CombinedOutput()
	require.NoError(t, err, "ocb: %s", out)
	bin := filepath.Join(dir, "otelcol-byo", "otelcol-byo")

	has := distributionTypes(t, bin)
	for _, kind := range []string{"receivers", "processors", "exporters", "connectors"} {
		require.Subset(t, has[kind], map[string][]string{
			"receivers": {"k8sevents"}, "processors": {"eventseries"},
			"exporters": {"k8sevents"}, "connectors": {"eventsum"},
		}[kind], "this project's %s in the user's distribution", kind)
	}

	files, err := filepath.Glob("../testdata/config/*.yaml")
	require.NoError(t, err)
	validated := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			missing := missingTypes(t, f, has)
			out, err := exec.Command(bin, "validate", "--config", f).CombinedOutput()
			if len(missing) == 0 {
				assert.NoError(t, err, "%s", out)
				validated++
				return
			}
			require.Error(t, err, "needs %v, which the distribution lacks", missing)
			assert.True(t, slices.ContainsFunc(missing, func(typ string) bool { return strings.Contains(string(out), `"`+typ+`"`) }),
				"the error names a missing component %v: %s", missing, out)
			t.Logf("needs %v beyond the user's distribution", missing)
		})
	}
	assert.Positive(t, validated, "some ready configuration needs nothing beyond the user's distribution")
}

// distributionTypes lists a collector's component types by kind, from its
// `components` command.
func distributionTypes(t *testing.T, bin string) map[string][]string {
	t.Helper()
	out, err := exec.Command(bin, "components").Output()
	require.NoError(t, err)
	var listed map[string]any
	require.NoError(t, yaml.Unmarshal(out, &listed))
	types := map[string][]string{}
	for kind, v := range listed {
		items, _ := v.([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				name, _ := m["name"].(string)
				types[kind] = append(types[kind], name)
			}
		}
	}
	return types
}

// missingTypes: the component types (type/name → type) a configuration
// names that the distribution does not have.
func missingTypes(t *testing.T, file string, has map[string][]string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	var missing []string
	for _, kind := range []string{"receivers", "processors", "exporters", "connectors", "extensions"} {
		section, _ := cfg[kind].(map[string]any)
		for id := range section {
			typ, _, _ := strings.Cut(id, "/")
			if !slices.Contains(has[kind], typ) && !slices.Contains(missing, typ) {
				missing = append(missing, typ)
			}
		}
	}
	slices.Sort(missing)
	return missing
}
