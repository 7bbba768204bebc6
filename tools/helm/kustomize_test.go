package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/kustomize/v5/commands/edit"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// TestHelmDeployKustomizeSetImage: kustomize edit set image, as
// docs/deploy.md "Images by digest" gives it, pins the workloads kubectl
// apply -k deploy/ applies: run on a copy of deploy/'s kustomization and
// its resources, then built as kubectl builds it, every workload runs the
// pushed image by its digest instead of the placeholder.
func TestHelmDeployKustomizeSetImage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, deployDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &k))
	fs := filesys.MakeFsInMemory()
	require.NoError(t, fs.WriteFile("/kustomization.yaml", raw))
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(root, deployDir, r))
		require.NoError(t, err)
		require.NoError(t, fs.WriteFile("/"+r, b))
	}

	const pushed = "registry.example.com/otelcol-k8sevents:0.1.0"
	dp := provider.NewDefaultDepProvider()
	cmd := edit.NewCmdEdit(fs, dp.GetFieldValidator(), dp.GetResourceFactory(), io.Discard)
	cmd.SetArgs([]string{"set", "image", "otelcol-k8sevents=" + pushed + "@" + digest})
	cmd.SetOut(io.Discard)
	require.NoError(t, cmd.Execute())

	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/")
	require.NoError(t, err)
	out, err := m.AsYaml()
	require.NoError(t, err)
	images := workloadImages(t, map[string]string{"kustomized.yaml": string(out)})
	assert.Equal(t, map[string]string{"otel-k8sevents": pushed + "@" + digest}, images, "the mirror's StatefulSet")
}
