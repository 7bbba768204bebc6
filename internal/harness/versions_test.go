package harness

import (
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestVersionsAgree: one version names a release (docs/versioning.md): the
// distribution's (builder-config.yaml dist.version, which make image tags
// the image with), the chart's appVersion and image.tag, and the image of
// every manifest of deploy/ and deploy/operator are the same; those images
// carry a digest too, never the tag alone.
func TestVersionsAgree(t *testing.T) {
	root := repoRoot(t)
	var builder struct {
		Dist struct {
			Version string `json:"version"`
		} `json:"dist"`
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Tag string `json:"tag"`
		} `json:"image"`
	}
	for file, into := range map[string]any{
		"builder-config.yaml":                    &builder,
		"deploy/helm/otel-k8sevents/Chart.yaml":  &chart,
		"deploy/helm/otel-k8sevents/values.yaml": &values,
	} {
		if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(root, file))), into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	version := builder.Dist.Version
	semver := regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	if !semver.MatchString(version) {
		t.Fatalf("builder-config.yaml dist.version %q is not a semantic version X.Y.Z", version)
	}
	if !semver.MatchString(chart.Version) {
		t.Errorf("Chart.yaml version %q is not a semantic version", chart.Version)
	}
	if chart.AppVersion != version || values.Image.Tag != version {
		t.Errorf("Chart.yaml appVersion %q and values.yaml image.tag %q, want the distribution's %q", chart.AppVersion, values.Image.Tag, version)
	}
	manifests, err := filepath.Glob(filepath.Join(root, "deploy", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	operator, err := filepath.Glob(filepath.Join(root, "deploy", "operator", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	image := regexp.MustCompile(`(?m)^\s*image: *(\S+)`)
	pinned := regexp.MustCompile(`^otelcol-k8sevents:` + regexp.QuoteMeta(version) + `@sha256:[0-9a-f]{64}$`)
	images := 0
	for _, f := range append(manifests, operator...) {
		for _, m := range image.FindAllStringSubmatch(readFile(t, f), -1) {
			images++
			if !pinned.MatchString(m[1]) {
				t.Errorf("%s: image %s, want otelcol-k8sevents:%s@sha256:<64 hex>", f, m[1], version)
			}
		}
	}
	if images < 4 {
		t.Errorf("found %d images in deploy/: the check would pass vacuously", images)
	}
}
