package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// checkSBOM checks the index entry d is the SBOM attestation of platform
// p's image, as docker buildx stores one: platform unknown/unknown, the
// image's digest in its annotations, one in-toto layer whose statement
// names the image and holds an SPDX 2.3 document of binary (its SHA-256,
// its Go version, the image's version).
func checkSBOM(t *testing.T, idx v1.ImageIndex, d v1.Descriptor, binary string, p builtPlatform) {
	t.Helper()
	if d.Digest != p.SBOM || d.Platform == nil || d.Platform.String() != "unknown/unknown" ||
		d.Annotations[annotationRefType] != refTypeAttestation || d.Annotations[annotationRefDigest] != p.Manifest.String() {
		t.Errorf("%s: SBOM entry %+v, want %s (unknown/unknown) naming %s", p.Platform, d, p.SBOM, p.Manifest)
		return
	}
	att, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(att); err != nil {
		t.Errorf("%s: SBOM manifest: %v", p.Platform, err)
	}
	m, err := att.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != inTotoMediaType || m.Layers[0].Annotations[annotationPredicateType] != spdxPredicateType {
		t.Fatalf("%s: SBOM layers %+v, want one in-toto statement of an SPDX document", p.Platform, m.Layers)
	}
	layers, err := att.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var stmt struct {
		Type          string          `json:"_type"`
		PredicateType string          `json:"predicateType"`
		Subject       []inTotoSubject `json:"subject"`
		Predicate     spdx.Document   `json:"predicate"`
	}
	if err := json.NewDecoder(rc).Decode(&stmt); err != nil {
		t.Fatalf("%s: SBOM statement: %v", p.Platform, err)
	}
	if stmt.Type != inTotoStatementType || stmt.PredicateType != spdxPredicateType || len(stmt.Subject) != 1 ||
		stmt.Subject[0].Digest["sha256"] != p.Manifest.Hex || !strings.HasSuffix(stmt.Subject[0].Name, "?platform="+strings.ReplaceAll(p.Platform, "/", "%2F")) {
		t.Errorf("%s: statement %s %s %+v, want the image %s", p.Platform, stmt.Type, stmt.PredicateType, stmt.Subject, p.Manifest)
	}
	doc := stmt.Predicate
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || len(doc.Packages) < 2 {
		t.Fatalf("%s: SPDX document %s %s with %d packages", p.Platform, doc.SPDXVersion, doc.DataLicense, len(doc.Packages))
	}
	bin := doc.Packages[0]
	if len(bin.PackageChecksums) != 1 || bin.PackageChecksums[0].Value != sha256File(t, binary) || bin.PackageVersion != "0.1.0" {
		t.Errorf("%s: the binary's package %+v, want its SHA-256 and version 0.1.0", p.Platform, bin)
	}
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if std := doc.Packages[1]; std.PackageName != "stdlib" || "go"+std.PackageVersion != bi.GoVersion {
		t.Errorf("%s: %s %s, want stdlib %s", p.Platform, std.PackageName, std.PackageVersion, bi.GoVersion)
	}
	if len(doc.Relationships) == 0 || doc.Relationships[0].Relationship != "DESCRIBES" ||
		doc.Relationships[0].RefB.ElementRefID != bin.PackageSPDXIdentifier {
		t.Errorf("%s: the document does not describe the binary: %+v", p.Platform, doc.Relationships)
	}
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSBOMListsEveryModule: the SBOM of this test's own binary (which has
// modules, unlike the hello binaries) lists every module its build
// information has, at its version, with its purl, each package depended on
// by the binary's, under identifiers SPDX allows, none twice.
func TestSBOMListsEveryModule(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok || len(bi.Deps) < 5 {
		t.Fatalf("this test binary has no module list to check against (%v)", ok)
	}
	s := testSpec(t, exe)
	ref := mustTag(t, s.Tag)
	doc, err := sbomDocument(s, ref, exe, v1.Platform{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*spdx.Package{}
	ids := map[string]bool{}
	valid := regexp.MustCompile(`^[A-Za-z0-9.-]+$`)
	for _, p := range doc.Packages {
		byName[p.PackageName] = p
		id := string(p.PackageSPDXIdentifier)
		if ids[id] || !valid.MatchString(id) {
			t.Errorf("SPDX identifier %q: given twice or not allowed", id)
		}
		ids[id] = true
	}
	for _, m := range bi.Deps {
		path, version := m.Path, m.Version
		if m.Replace != nil {
			path, version = m.Replace.Path, m.Replace.Version
		}
		p := byName[path]
		if p == nil || p.PackageVersion != version || len(p.PackageExternalReferences) != 1 ||
			p.PackageExternalReferences[0].Locator != "pkg:golang/"+path+"@"+version {
			t.Errorf("module %s %s: SBOM package %+v", path, version, p)
		}
	}
	if got, want := len(doc.Relationships), 1+1+len(bi.Deps); got != want {
		t.Errorf("%d relationships, want DESCRIBES and a DEPENDS_ON per module and the standard library (%d)", got, want)
	}
}

// TestSBOMReplacedModules: a module replaced by another is listed as the
// replacement; one replaced by a local directory without a version or a
// purl (no release of it exists to name).
func TestSBOMReplacedModules(t *testing.T) {
	pkgs := modulePackages(2, []*debug.Module{
		{Path: "example.com/a", Version: "v1.0.0"},
		{Path: "example.com/b", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork/b", Version: "v1.0.1"}},
		{Path: "github.com/k8sevents/otel-k8sevents", Version: "v0.0.0", Replace: &debug.Module{Path: "../", Version: "(devel)"}},
		{Path: "example.com/c", Version: "v0.0.0", Replace: &debug.Module{Path: "/src/c"}},
	})
	type row struct{ name, version, purl, id string }
	var got []row
	for _, p := range pkgs {
		r := row{p.PackageName, p.PackageVersion, "", string(p.PackageSPDXIdentifier)}
		if len(p.PackageExternalReferences) > 0 {
			r.purl = p.PackageExternalReferences[0].Locator
		}
		got = append(got, r)
	}
	want := []row{
		{"example.com/a", "v1.0.0", "pkg:golang/example.com/a@v1.0.0", "Package-2-example.com-a"},
		{"example.com/fork/b", "v1.0.1", "pkg:golang/example.com/fork/b@v1.0.1", "Package-3-example.com-fork-b"},
		{"github.com/k8sevents/otel-k8sevents", "", "", "Package-4-github.com-k8sevents-otel-k8sevents"},
		{"example.com/c", "", "", "Package-5-example.com-c"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d packages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("package %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	ref, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
