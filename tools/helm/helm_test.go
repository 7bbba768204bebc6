package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const root = "../.."

func TestMain(m *testing.M) {
	quietSymlinks()
	os.Exit(m.Run())
}

// TestHelmDeployIsGenerated: deploy/ is the chart rendered with
// deploy-values.yaml, byte for byte (make deploy writes it), and holds
// nothing else but kustomization.yaml. A change to a template, to
// values.yaml or to a configuration of testdata/config that deploy/ does
// not have yet fails here.
func TestHelmDeployIsGenerated(t *testing.T) {
	files, err := deployManifests(root, nil)
	require.NoError(t, err)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, deployDir, name))
		require.NoError(t, err)
		if !bytes.Equal(want, got) {
			t.Errorf("deploy/%s is not what the chart renders (run make deploy): %s", name, firstDiff(want, got))
		}
	}
	onDisk, err := filepath.Glob(filepath.Join(root, deployDir, "*.yaml"))
	require.NoError(t, err)
	monitoring, err := filepath.Glob(filepath.Join(root, deployDir, "monitoring", "*.yaml"))
	require.NoError(t, err)
	for _, f := range append(onDisk, monitoring...) {
		name, err := filepath.Rel(filepath.Join(root, deployDir), f)
		require.NoError(t, err)
		if name != "kustomization.yaml" && files[name] == nil {
			t.Errorf("deploy/%s does not come from the chart: add it to the chart (and deployFiles)", name)
		}
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(w), len(g)) {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			return fmt.Sprintf("line %d: the chart has %s, deploy/ %s", i+1, lineAt(w, i), lineAt(g, i))
		}
	}
	return "no line differs"
}

func lineAt(lines []string, i int) string {
	if i >= len(lines) {
		return "the end of the file"
	}
	return strconv.Quote(lines[i])
}

// TestHelmImageByDigest: the chart refuses to render without a digest
// (image.requireDigest, the default) and refuses a digest that is not
// sha256:<64 hex> (its schema, and its template where the schema is
// skipped); with one, every workload runs repository:tag@digest;
// image.requireDigest=false runs by tag.
func TestHelmImageByDigest(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	both := map[string]any{"otlp": map[string]any{"enabled": true}}

	_, err = render(ch, both, "otel-k8sevents")
	require.ErrorContains(t, err, "image.digest is required")
	for _, bad := range []string{"latest", "sha256:abc", "sha512:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("A", 64)} {
		_, err = render(ch, merge(both, image(bad, true)), "otel-k8sevents")
		assert.ErrorContains(t, err, "at '/image/digest': '"+bad+"' does not match pattern", "values.schema.json")
		_, err = renderUnchecked(ch, merge(both, image(bad, true)), "otel-k8sevents")
		assert.ErrorContains(t, err, "is not sha256:<64 hex digits>", "the template, with --skip-schema-validation: %s", bad)
	}

	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{merge(both, image(digest, true)), "otelcol-k8sevents:0.1.0@" + digest},
		{merge(both, image(digest, false)), "otelcol-k8sevents:0.1.0@" + digest},
		{merge(both, image("", false)), "otelcol-k8sevents:0.1.0"},
	} {
		out, err := render(ch, c.vals, "otel-k8sevents")
		require.NoError(t, err)
		images := workloadImages(t, out)
		assert.Len(t, images, 3, "the mirror, tier 1 and tier 2")
		for name, img := range images {
			assert.Equal(t, c.want, img, name)
		}
	}
}

// TestHelmDeployPinsTheImage: deploy/ as rendered names the image by a
// digest of zeros (which no image has), never by its tag alone; make deploy
// IMAGE=... DIGEST=... runs every workload on that image by its digest,
// the chart's version as the tag when IMAGE has none, and changes no line
// but the header's and the images'; a digest the chart refuses, a
// reference with a digest in it, or one of the two alone renders nothing.
func TestHelmDeployPinsTheImage(t *testing.T) {
	committed, err := deployManifests(root, nil)
	require.NoError(t, err)
	images := deployImages(t, committed)
	assert.Len(t, images, 3, "the mirror, tier 1 and tier 2")
	for name, img := range images {
		assert.Equal(t, "otelcol-k8sevents:0.1.0@sha256:"+strings.Repeat("0", 64), img, name)
	}

	const repo = "registry.example.com:5000/team/otelcol-k8sevents"
	for ref, want := range map[string]string{
		repo + ":0.1.0-rc.1": repo + ":0.1.0-rc.1@" + digest,
		repo:                 repo + ":0.1.0@" + digest,
	} {
		pinned, err := deployManifests(root, &pinnedImage{ref: ref, digest: digest})
		require.NoError(t, err, ref)
		images := deployImages(t, pinned)
		assert.Len(t, images, 3, ref)
		for name, img := range images {
			assert.Equal(t, want, img, "IMAGE=%s: %s", ref, name)
		}
		require.Len(t, pinned, len(committed))
		for name, b := range committed {
			assert.Equal(t, linesButImage(b), linesButImage(pinned[name]), "IMAGE=%s: deploy/%s", ref, name)
			assert.Contains(t, string(pinned[name]), "DIGEST="+digest, "deploy/%s says what it is pinned to", name)
		}
	}

	for _, c := range []struct {
		pin     pinnedImage
		problem string
	}{
		{pinnedImage{ref: repo + ":0.1.0", digest: "sha256:abc"}, "at '/image/digest': 'sha256:abc' does not match pattern"},
		{pinnedImage{ref: repo + ":0.1.0@" + digest, digest: digest}, "give the digest apart"},
		{pinnedImage{ref: repo + ":0.1.0"}, "needs both"},
		{pinnedImage{digest: digest}, "needs both"},
	} {
		_, err := deployManifests(root, &c.pin)
		assert.ErrorContains(t, err, c.problem, "%+v", c.pin)
	}
}

// deployImages is workloadImages of the files of deploy/.
func deployImages(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	rendered := map[string]string{}
	for name, b := range files {
		rendered[name] = string(b)
	}
	return workloadImages(t, rendered)
}

// linesButImage is a file of deploy/ without its header (up to the first
// blank line) and its image lines.
func linesButImage(b []byte) []string {
	_, body, _ := strings.Cut(string(b), "\n\n")
	var out []string
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "image: ") {
			out = append(out, line)
		}
	}
	return out
}

// TestHelmTier2Ring: tier 1 routes to one tier-2 pod per replica, by its
// stable name, but the otlp.tier2.draining last ones, which keep running;
// draining every pod is refused.
func TestHelmTier2Ring(t *testing.T) {
	ch, err := loadChart(root)
	require.NoError(t, err)
	tier2 := func(replicas, draining int) map[string]any {
		return merge(image("", false), map[string]any{"otlp": map[string]any{"enabled": true,
			"tier2": map[string]any{"replicas": replicas, "draining": draining}}})
	}
	for _, c := range []struct{ replicas, draining, routed int }{{3, 0, 3}, {1, 0, 1}, {5, 0, 5}, {4, 1, 3}, {4, 3, 1}} {
		out, err := render(ch, tier2(c.replicas, c.draining), "otel-k8sevents")
		require.NoError(t, err)
		var want []string
		for i := range c.routed {
			want = append(want, fmt.Sprintf("otelcol-tier2-%d.otelcol-tier2:4317", i))
		}
		var tier1 appsv1.Deployment
		var ss appsv1.StatefulSet
		for _, doc := range documents(out) {
			if strings.Contains(doc, "\nkind: Deployment\n") {
				require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &tier1))
			}
			if strings.Contains(doc, "\nkind: StatefulSet\n") && strings.Contains(doc, "\n  name: otelcol-tier2\n") {
				require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &ss))
			}
		}
		var ring []string
		require.NoError(t, yaml.Unmarshal([]byte(envOf(tier1.Spec.Template.Spec.Containers[0].Env, "TIER2_ENDPOINTS")), &ring))
		assert.Equal(t, want, ring, "%d replicas, %d draining", c.replicas, c.draining)
		assert.EqualValues(t, c.replicas, *ss.Spec.Replicas)
	}
	_, err = render(ch, tier2(2, 2), "otel-k8sevents")
	assert.ErrorContains(t, err, "otlp.tier2.draining (2) must be less than otlp.tier2.replicas (2)")
}

// TestHelmLint: helm lint --strict has nothing to say of the chart (but
// information, such as that it has no icon), for both shapes and with
// every toggle on.
func TestHelmLint(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, vals := range []map[string]any{image(digest, true), merge(image(digest, true), map[string]any{"otlp": map[string]any{"enabled": true}}), everything()} {
		l := lint.RunAll(filepath.Join(root, chartDir), vals, "otel-k8sevents")
		for _, m := range l.Messages {
			assert.LessOrEqual(t, m.Severity, support.InfoSev, "%s", m)
		}
	}
}

func image(digest string, required bool) map[string]any {
	return map[string]any{"image": map[string]any{"digest": digest, "requireDigest": required}}
}

// merge is a over b, one level deep (what these tests need).
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range []map[string]any{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// workloadImages is the image of each StatefulSet's and Deployment's
// container in rendered, by workload name.
func workloadImages(t *testing.T, rendered map[string]string) map[string]string {
	t.Helper()
	images := map[string]string{}
	for _, doc := range documents(rendered) {
		var head struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		var name string
		var pod corev1.PodTemplateSpec
		switch head.Kind {
		case "StatefulSet":
			var s appsv1.StatefulSet
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &s))
			name, pod = s.Name, s.Spec.Template
		case "Deployment":
			var d appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &d))
			name, pod = d.Name, d.Spec.Template
		default:
			continue
		}
		require.Len(t, pod.Spec.Containers, 1, name)
		images[name] = pod.Spec.Containers[0].Image
	}
	return images
}

// documents splits rendered templates into their YAML documents, in the
// order of the templates' names.
func documents(rendered map[string]string) []string {
	var names []string
	for name := range rendered {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var docs []string
	for _, name := range names {
		for doc := range strings.SplitSeq(rendered[name], "\n---\n") {
			if strings.TrimSpace(doc) != "" {
				docs = append(docs, doc)
			}
		}
	}
	return docs
}
