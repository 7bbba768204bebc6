package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// Where the chart and deploy/ are, from the repository's root.
const (
	chartDir        = "deploy/helm/otel-k8sevents"
	deployValues    = "deploy/helm/deploy-values.yaml"
	deployDir       = "deploy"
	deployRelease   = "otel-k8sevents"
	deployNamespace = "otel-k8sevents"
)

// deployFiles are the files of deploy/, each made of the chart's templates
// in this order. The Namespace comes first in both files that can be
// applied alone (the mirror, and tier 2 with tier 1). monitoring/ holds the
// objects of the Prometheus Operator's CRDs, which kubectl apply -k deploy/
// leaves out.
var deployFiles = []struct {
	name      string
	templates []string
}{
	{"collector.yaml", []string{"namespace.yaml", "collector.yaml"}},
	{"rbac-receiver.yaml", []string{"rbac-receiver.yaml"}},
	{"rbac-exporter.yaml", []string{"rbac-exporter.yaml"}},
	{"otlp-tier1.yaml", []string{"otlp-tier1.yaml"}},
	{"otlp-tier2.yaml", []string{"namespace.yaml", "otlp-tier2.yaml"}},
	{"admission-policy.yaml", []string{"admission-policy.yaml"}},
	{"monitoring/servicemonitor.yaml", []string{"servicemonitor.yaml"}},
	{"monitoring/prometheusrule.yaml", []string{"prometheusrule.yaml"}},
}

// loadChart loads the chart of the repository at root.
func loadChart(root string) (*chart.Chart, error) {
	ch, err := loader.Load(filepath.Join(root, chartDir))
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	return ch, nil
}

// render renders the chart's templates with vals over its values.yaml, as
// helm template does, into the release namespace ns: each template's
// output by its path under templates/ (collector.yaml, tests/..., ...),
// before Helm sorts the objects by kind. Strict, unlike helm template: a template that names a
// value values.yaml does not have fails rather than rendering it empty.
func render(ch *chart.Chart, vals map[string]any, ns string) (map[string]string, error) {
	return renderRelease(ch, vals, deployRelease, ns, false)
}

// renderUnchecked is render without values.schema.json, as
// helm install --skip-schema-validation.
func renderUnchecked(ch *chart.Chart, vals map[string]any, ns string) (map[string]string, error) {
	return renderRelease(ch, vals, deployRelease, ns, true)
}

// renderRelease is render of the release name.
func renderRelease(ch *chart.Chart, vals map[string]any, name, ns string, skipSchema bool) (map[string]string, error) {
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{Name: name, Namespace: ns, IsInstall: true}, nil, skipSchema)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out, err := engine.Engine{Strict: true}.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	byFile := map[string]string{}
	for name, text := range out {
		byFile[strings.TrimPrefix(name, ch.Name()+"/templates/")] = text
	}
	return byFile, nil
}

// pinnedImage is an operator's pushed image: repository[:tag] as
// make push-image took it, and the digest it printed.
type pinnedImage struct {
	ref, digest string
}

// values are the chart's image values for p, over deploy-values.yaml's:
// the repository, the tag when ref has one, the digest. The chart checks
// the digest (sha256:<64 hex>) and requires it.
func (p pinnedImage) values() (map[string]any, error) {
	if p.ref == "" || p.digest == "" {
		return nil, errors.New("an image to pin needs both a reference (IMAGE=registry/repository[:tag]) and its digest (DIGEST=sha256:...)")
	}
	if strings.Contains(p.ref, "@") {
		return nil, fmt.Errorf("image %q: give the digest apart (DIGEST=sha256:...), not in the reference", p.ref)
	}
	img := map[string]any{"repository": p.ref, "digest": p.digest, "requireDigest": true}
	// A colon after the last slash starts the tag; one before it is a
	// registry's port.
	if i := strings.LastIndex(p.ref, ":"); i > strings.LastIndex(p.ref, "/") {
		img["repository"], img["tag"] = p.ref[:i], p.ref[i+1:]
	}
	return map[string]any{"image": img}, nil
}

// deployManifests renders the chart at root with deploy-values.yaml into
// the files of deploy/ (name -> content). Every template of the chart
// that renders something with deploy-values.yaml must be in deployFiles,
// so that deploy/ holds all of it, but the helm test hooks (tests/).
// With pin, the workloads run that image instead of deploy-values.yaml's
// placeholder, and nothing else changes.
func deployManifests(root string, pin *pinnedImage) (map[string][]byte, error) {
	ch, err := loadChart(root)
	if err != nil {
		return nil, err
	}
	vals, err := common.ReadValuesFile(filepath.Join(root, deployValues))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", deployValues, err)
	}
	if pin != nil {
		over, err := pin.values()
		if err != nil {
			return nil, err
		}
		vals = util.MergeTables(over, vals)
	}
	rendered, err := render(ch, vals, deployNamespace)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	files := map[string][]byte{}
	for _, f := range deployFiles {
		var docs []string
		for _, tpl := range f.templates {
			used[tpl] = true
			doc := strings.TrimSpace(rendered[tpl])
			if doc == "" {
				return nil, fmt.Errorf("template %s renders nothing with %s", tpl, deployValues)
			}
			docs = append(docs, doc)
		}
		files[f.name] = []byte(header(f.templates, pin) + strings.Join(docs, "\n---\n") + "\n")
	}
	for name, text := range rendered {
		if !used[name] && strings.TrimSpace(text) != "" && name != "NOTES.txt" && !strings.HasPrefix(name, "tests/") {
			return nil, fmt.Errorf("template %s is in no file of deploy/: add it to deployFiles", name)
		}
	}
	return files, nil
}

// header says where a file of deploy/ comes from.
func header(templates []string, pin *pinnedImage) string {
	with := deployValues
	if pin != nil {
		with = fmt.Sprintf("%s and\n# IMAGE=%s DIGEST=%s", deployValues, pin.ref, pin.digest)
	}
	return fmt.Sprintf("# Generated by `make deploy` from the Helm chart %s\n"+
		"# (templates/%s) with %s:\n# edit those, not this file.\n\n",
		chartDir, strings.Join(templates, ", templates/"), with)
}

// writeDeploy writes the files of deploy/ under root.
func writeDeploy(root string, files map[string][]byte) error {
	for name, b := range files {
		path := filepath.Join(root, deployDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// quietSymlinks keeps Helm's loader from logging, at every load, that the
// chart's config/ files are symbolic links (to testdata/config: on purpose,
// so that the chart embeds the ready configurations themselves).
func quietSymlinks() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}
