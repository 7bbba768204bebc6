package e2e

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spdxPackage is the part of an SPDX 2.3 package the test reads.
type spdxPackage struct {
	Name      string `json:"name"`
	Version   string `json:"versionInfo"`
	Checksums []struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	} `json:"checksums"`
	ExternalRefs []struct {
		Type    string `json:"referenceType"`
		Locator string `json:"referenceLocator"`
	} `json:"externalRefs"`
}

// checkImageSBOM reads the SBOM attestation d of the image whose manifest
// digest is image, as docker buildx stores one (one in-toto statement
// layer), and checks its SPDX document against bin, the binary taken out
// of that image: the same SHA-256, and every module its Go build
// information lists, at its version, with a purl where there is a version.
func checkImageSBOM(t *testing.T, files map[string][]byte, d ociDescriptor, image, bin string) {
	t.Helper()
	require.NotEmpty(t, d.Digest, "no SBOM names image %s", image)
	var m ociManifest
	require.NoError(t, json.Unmarshal(blob(t, files, d), &m))
	require.Len(t, m.Layers, 1, "the SBOM manifest: one statement")
	assert.Equal(t, "application/vnd.in-toto+json", m.Layers[0].MediaType)
	assert.Equal(t, "https://spdx.dev/Document", m.Layers[0].Annotations["in-toto.io/predicate-type"])
	var stmt struct {
		Type          string `json:"_type"`
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		Predicate struct {
			SPDXVersion string        `json:"spdxVersion"`
			Packages    []spdxPackage `json:"packages"`
		} `json:"predicate"`
	}
	require.NoError(t, json.Unmarshal(blob(t, files, m.Layers[0]), &stmt))
	assert.Equal(t, "https://in-toto.io/Statement/v0.1", stmt.Type)
	assert.Equal(t, "https://spdx.dev/Document", stmt.PredicateType)
	require.Len(t, stmt.Subject, 1)
	assert.Equal(t, strings.TrimPrefix(image, "sha256:"), stmt.Subject[0].Digest["sha256"], "the statement's subject is the image")
	assert.Equal(t, "SPDX-2.3", stmt.Predicate.SPDXVersion)

	pkgs := stmt.Predicate.Packages
	require.GreaterOrEqual(t, len(pkgs), 2)
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	require.Len(t, pkgs[0].Checksums, 1)
	assert.Equal(t, "SHA256", pkgs[0].Checksums[0].Algorithm)
	assert.Equal(t, hex.EncodeToString(sum[:]), pkgs[0].Checksums[0].Value, "the SBOM's first package is the image's binary")
	assert.Equal(t, "0.1.0", pkgs[0].Version)

	bi, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	byName := map[string]spdxPackage{}
	for _, p := range pkgs {
		byName[p.Name] = p
	}
	assert.Equal(t, strings.TrimPrefix(bi.GoVersion, "go"), byName["stdlib"].Version)
	require.Greater(t, len(bi.Deps), 100, "the distribution's modules")
	for _, mod := range bi.Deps {
		path, version := mod.Path, mod.Version
		if r := mod.Replace; r != nil && strings.HasPrefix(r.Path, ".") {
			version = "" // a local directory: this repository's module in make otelcol's build
		} else if r != nil {
			path, version = r.Path, r.Version
		}
		p, ok := byName[path]
		if !assert.True(t, ok, "module %s is not in the SBOM", path) {
			continue
		}
		assert.Equal(t, version, p.Version, path)
		if version == "" {
			assert.Empty(t, p.ExternalRefs, "%s: a purl names a release", path)
		}
		if version != "" && assert.Len(t, p.ExternalRefs, 1, path) {
			assert.Equal(t, "pkg:golang/"+path+"@"+version, p.ExternalRefs[0].Locator)
		}
	}
	_, ok := byName["github.com/k8sevents/otel-k8sevents"]
	assert.True(t, ok, "the components' module is in the SBOM")
}
