package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// The SBOM is stored as docker buildx stores its attestations (Docker's
// "Image attestation storage"): an image manifest in the index, platform
// unknown/unknown, annotated with the digest of the image it describes;
// its one layer an in-toto statement whose subject is that image and
// whose predicate the SPDX document. docker buildx imagetools inspect
// and Docker Scout read it; pushing the index pushes it along.
const (
	inTotoMediaType         = types.MediaType("application/vnd.in-toto+json")
	inTotoStatementType     = "https://in-toto.io/Statement/v0.1"
	spdxPredicateType       = "https://spdx.dev/Document"
	annotationPredicateType = "in-toto.io/predicate-type"
	annotationRefType       = "vnd.docker.reference.type"
	annotationRefDigest     = "vnd.docker.reference.digest"
	refTypeAttestation      = "attestation-manifest"
)

// inTotoStatement is an in-toto attestation statement (v0.1, as buildx
// writes it).
type inTotoStatement struct {
	Type          string          `json:"_type"`
	PredicateType string          `json:"predicateType"`
	Subject       []inTotoSubject `json:"subject"`
	Predicate     any             `json:"predicate"`
}

type inTotoSubject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// attestationDescriptor is the index entry of the SBOM of the image whose
// manifest digest is subject.
func attestationDescriptor(subject v1.Hash) v1.Descriptor {
	return v1.Descriptor{
		Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{annotationRefType: refTypeAttestation, annotationRefDigest: subject.String()},
	}
}

// sbomAttestation is the attestation manifest of binary's SBOM, for the
// image of platform whose manifest digest is subject.
func sbomAttestation(s spec, ref name.Tag, binary string, platform v1.Platform, subject v1.Hash) (v1.Image, error) {
	doc, err := sbomDocument(s, ref, binary, platform)
	if err != nil {
		return nil, err
	}
	repo := strings.TrimSuffix(s.Tag, ":"+ref.TagStr())
	stmt, err := json.Marshal(inTotoStatement{
		Type:          inTotoStatementType,
		PredicateType: spdxPredicateType,
		Subject: []inTotoSubject{{
			Name:   "pkg:docker/" + repo + "@" + ref.TagStr() + "?platform=" + url.QueryEscape(platform.String()),
			Digest: map[string]string{subject.Algorithm: subject.Hex},
		}},
		Predicate: doc,
	})
	if err != nil {
		return nil, fmt.Errorf("SBOM of %s: %w", platform, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(stmt, inTotoMediaType),
		Annotations: map[string]string{annotationPredicateType: spdxPredicateType},
	})
	if err != nil {
		return nil, fmt.Errorf("SBOM of %s: %w", platform, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("SBOM of %s: %w", platform, err)
	}
	// The config is there for registries only, as buildx's: no platform,
	// and no filesystem layer (the statement is not one).
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.History, cf.Created = "unknown", "unknown", nil, v1.Time{Time: s.Created}
	cf.RootFS.DiffIDs = []v1.Hash{}
	return mutate.ConfigFile(img, cf)
}

// sbomDocument is the SPDX 2.3 document of binary: the binary itself (its
// SHA-256, the image's version), the Go standard library and every module
// compiled into it, read from its Go build information, each with a purl.
func sbomDocument(s spec, ref name.Tag, binary string, platform v1.Platform) (*spdx.Document, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("SBOM: the Go build information of %s: %w", binary, err)
	}
	sum, err := fileSHA256(binary)
	if err != nil {
		return nil, fmt.Errorf("SBOM: %w", err)
	}
	title := ref.Context().RepositoryStr()[strings.LastIndex(ref.Context().RepositoryStr(), "/")+1:]
	var settings []string
	for _, kv := range bi.Settings {
		settings = append(settings, kv.Key+"="+kv.Value)
	}
	root := &spdx.Package{
		PackageName:             title,
		PackageSPDXIdentifier:   common.ElementID("Package-0-" + spdxID(title)),
		PackageVersion:          ref.TagStr(),
		PackageFileName:         inImage,
		PackageDownloadLocation: "NOASSERTION",
		PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: sum}},
		PackageComment: fmt.Sprintf("%s for %s: Go main module %s, built by %s with %s",
			title, platform, bi.Main.Path, bi.GoVersion, strings.Join(settings, " ")),
		PrimaryPackagePurpose: "APPLICATION",
	}
	pkgs := []*spdx.Package{root, goModule(1, "stdlib", strings.TrimPrefix(bi.GoVersion, "go"), "the Go standard library and runtime")}
	pkgs = append(pkgs, modulePackages(2, bi.Deps)...)
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      title + "-" + ref.TagStr() + "-" + platform.OS + "-" + platform.Architecture,
		DocumentNamespace: "https://github.com/k8sevents/otel-k8sevents/spdx/" + title + "-" + ref.TagStr() + "-" + sum,
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "otel-k8sevents-tools-image"}},
			Created:  s.Created.UTC().Format("2006-01-02T15:04:05Z"),
		},
		Packages: pkgs,
		Relationships: []*spdx.Relationship{{
			RefA:         common.MakeDocElementID("", "DOCUMENT"),
			RefB:         common.MakeDocElementID("", string(root.PackageSPDXIdentifier)),
			Relationship: common.TypeRelationshipDescribe,
		}},
	}
	for _, p := range pkgs[1:] {
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA:         common.MakeDocElementID("", string(root.PackageSPDXIdentifier)),
			RefB:         common.MakeDocElementID("", string(p.PackageSPDXIdentifier)),
			Relationship: common.TypeRelationshipDependsOn,
		})
	}
	return doc, nil
}

// modulePackages are the SPDX packages of the modules compiled in, numbered
// from n: a replaced module is listed as what replaced it; one replaced by
// a local directory with no version (there is no release of it to name).
func modulePackages(n int, deps []*debug.Module) []*spdx.Package {
	var pkgs []*spdx.Package
	for i, m := range deps {
		path, version, comment := m.Path, m.Version, ""
		if r := m.Replace; r != nil && localPath(r.Path) {
			version, comment = "", "built from a local directory (replace "+m.Path+" => "+r.Path+")"
		} else if r != nil {
			path, version, comment = r.Path, r.Version, "replaces "+m.Path+" "+m.Version
		}
		pkgs = append(pkgs, goModule(n+i, path, version, comment))
	}
	return pkgs
}

// localPath tells a replacement by a directory from one by a module: as in
// go.mod, a directory is a path starting with ./ or ../, or an absolute one
// (the build information states its version as "(devel)" or nothing).
func localPath(p string) bool {
	return p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || filepath.IsAbs(p)
}

// goModule is the SPDX package of a Go module (or of the standard library,
// "stdlib", as purl names it) at version; "" for none known.
func goModule(n int, path, version, comment string) *spdx.Package {
	p := &spdx.Package{
		PackageName:             path,
		PackageSPDXIdentifier:   common.ElementID(fmt.Sprintf("Package-%d-%s", n, spdxID(path))),
		PackageVersion:          version,
		PackageDownloadLocation: "NOASSERTION",
		PackageComment:          comment,
		PrimaryPackagePurpose:   "LIBRARY",
	}
	if version != "" {
		p.PackageExternalReferences = []*spdx.PackageExternalReference{{
			Category: common.CategoryPackageManager,
			RefType:  common.TypePackageManagerPURL,
			Locator:  "pkg:golang/" + path + "@" + version,
		}}
	}
	return p
}

// spdxID makes s fit an SPDX identifier's characters (letters, digits,
// '.', '-').
func spdxID(s string) string {
	return regexp.MustCompile(`[^A-Za-z0-9.-]+`).ReplaceAllString(s, "-")
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
