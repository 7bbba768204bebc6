// The paths that are not resources: discovery of what the model serves
// (legacy, unaggregated documents), /version, and the health checks.

package apimodel

import (
	"net/http"
	"runtime"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// servedGroupVersion is a group version discovery lists, and the
// resources only the review registries serve.
type servedGroupVersion struct {
	gv      schema.GroupVersion
	reviews []string // create-only cluster-scoped resources
}

var servedGroupVersions = []servedGroupVersion{
	{gv: schema.GroupVersion{Version: "v1"}},
	{gv: schema.GroupVersion{Group: "authentication.k8s.io", Version: "v1"}, reviews: []string{"tokenreviews"}},
	{gv: schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, reviews: []string{"selfsubjectaccessreviews", "subjectaccessreviews"}},
	{gv: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}},
	{gv: schema.GroupVersion{Group: "events.k8s.io", Version: "v1"}},
}

// KubernetesVersion is the version /version answers.
const KubernetesVersion = "v1.36.4"

func (s *Server) servePath(info requestInfo) response {
	if info.verb != "get" {
		return errorResponse(apierrors.NewMethodNotSupported(schema.GroupResource{}, info.verb))
	}
	p := strings.TrimSuffix(info.path, "/")
	switch p {
	case "/version":
		return jsonResponse(http.StatusOK, &version.Info{
			Major: "1", Minor: "36", GitVersion: KubernetesVersion, GitTreeState: "clean",
			GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
		})
	case "/healthz", "/livez":
		return textResponse(http.StatusOK, "ok")
	case "/readyz":
		s.mu.Lock()
		ready := s.ready && !s.roleBindingsUnsynced
		s.mu.Unlock()
		if !ready {
			return textResponse(http.StatusInternalServerError,
				"[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed\n")
		}
		return textResponse(http.StatusOK, "ok")
	case "/api":
		return jsonResponse(http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1:6443"}},
		})
	case "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, sg := range servedGroupVersions[1:] {
			list.Groups = append(list.Groups, apiGroup(sg.gv))
		}
		return jsonResponse(http.StatusOK, list)
	}
	for _, sg := range servedGroupVersions {
		base := "/apis/" + sg.gv.Group
		if sg.gv.Group == "" {
			base = "/api"
		} else if p == base {
			g := apiGroup(sg.gv)
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			return jsonResponse(http.StatusOK, &g)
		}
		if p == base+"/"+sg.gv.Version {
			return jsonResponse(http.StatusOK, resourceList(sg))
		}
	}
	return textResponse(http.StatusNotFound, "404 page not found")
}

// notFound answers a resource the model does not serve: a Status in a
// served group version, the mux's plain 404 elsewhere.
func notFound(info requestInfo) response {
	for _, sg := range servedGroupVersions {
		if sg.gv.Group == info.group && sg.gv.Version == info.version {
			return errorResponse(apierrors.NewGenericServerResponse(http.StatusNotFound, info.verb, schema.GroupResource{}, "",
				"the server could not find the requested resource", 0, false))
		}
	}
	return textResponse(http.StatusNotFound, "404 page not found")
}

func apiGroup(gv schema.GroupVersion) metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	return metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

// resourceList is the discovery document of one served group version.
func resourceList(sg servedGroupVersion) *metav1.APIResourceList {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: sg.gv.String()}
	for _, rt := range resourceTypes {
		if rt.gv != sg.gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: rt.resource, SingularName: rt.singular, Namespaced: rt.namespaced, Kind: rt.kind,
			Verbs: slices.Clone(rt.verbs), ShortNames: rt.shortNames,
		})
	}
	for _, r := range sg.reviews {
		kind := map[string]string{"tokenreviews": "TokenReview", "subjectaccessreviews": "SubjectAccessReview",
			"selfsubjectaccessreviews": "SelfSubjectAccessReview"}[r]
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r, SingularName: strings.ToLower(kind), Kind: kind, Verbs: []string{"create"},
		})
	}
	return list
}
