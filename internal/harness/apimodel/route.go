// A request's way in: what it asks (the API server's request info), who
// asks (bearer token authentication, anonymous without one), whether they
// may (RBAC as the Allow rules say), and which handler answers.

package apimodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what a request asks, as the API server's
// RequestInfoFactory reads it from the method and path.
type requestInfo struct {
	resourceRequest                    bool
	verb                               string // get list watch create update patch delete; a path's: the lowercase method
	path                               string
	group, version, resource, name, ns string
	subresource                        string
}

func parseRequest(method, path string, query url.Values) requestInfo {
	info := requestInfo{path: path, verb: strings.ToLower(method)}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.group, info.version, parts = parts[1], parts[2], parts[3:]
	default:
		return info // a path: discovery, /version, /readyz...
	}
	info.resourceRequest = true
	if parts[0] == "namespaces" && len(parts) >= 3 {
		info.ns, parts = parts[1], parts[2:]
	} else if parts[0] == "namespaces" && len(parts) == 2 {
		info.ns = parts[1] // the namespace itself
	}
	info.resource = parts[0]
	if len(parts) > 1 {
		info.name = parts[1]
	}
	if len(parts) > 2 {
		info.subresource = parts[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case query.Get("watch") == "true" || query.Get("watch") == "1":
			info.verb = "watch"
		case info.name == "":
			info.verb = "list"
		default:
			info.verb = "get"
		}
	case http.MethodPost:
		info.verb = "create"
	case http.MethodPut:
		info.verb = "update"
	case http.MethodPatch:
		info.verb = "patch"
	case http.MethodDelete:
		info.verb = "delete"
		if info.name == "" {
			info.verb = "deletecollection"
		}
	}
	return info
}

// response is an answer: a body, or a stream (a watch).
type response struct {
	code   int
	header http.Header
	body   []byte
	stream io.ReadCloser
}

// serve answers one request.
func (s *Server) serve(req *http.Request, body []byte) response {
	info := parseRequest(req.Method, req.URL.Path, req.URL.Query())
	who, err := s.authenticate(req)
	if err != nil {
		return errorResponse(err)
	}
	if err := s.authorize(who, info); err != nil {
		return errorResponse(err)
	}
	if !info.resourceRequest {
		return s.servePath(info)
	}
	if info.subresource != "" {
		return errorResponse(apierrors.NewNotFound(schema.GroupResource{Group: info.group, Resource: info.resource + "/" + info.subresource}, info.name))
	}
	switch {
	case info.group == "authentication.k8s.io" && info.resource == "tokenreviews" && info.verb == "create":
		return s.tokenReview(body)
	case info.group == "authorization.k8s.io" && info.resource == "subjectaccessreviews" && info.verb == "create":
		return s.subjectAccessReview(body)
	case info.group == "authorization.k8s.io" && info.resource == "selfsubjectaccessreviews" && info.verb == "create":
		return s.selfSubjectAccessReview(body, who)
	}
	rt := lookupResource(info.group, info.version, info.resource)
	if rt == nil {
		return notFound(info)
	}
	if !slices.Contains(rt.serves, info.verb) {
		return errorResponse(apierrors.NewMethodNotSupported(rt.groupResource(), info.verb))
	}
	r := &call{s: s, rt: rt, info: info, body: body, query: req.URL.Query(), req: req}
	switch info.verb {
	case "get":
		return r.get()
	case "list":
		return r.list()
	case "watch":
		return r.watch()
	case "create":
		return r.create()
	case "update":
		return r.update()
	case "patch":
		return r.patch(req.Header.Get("Content-Type"))
	case "delete":
		return r.delete()
	}
	return errorResponse(apierrors.NewMethodNotSupported(rt.groupResource(), info.verb))
}

// authenticate finds who sends req: the bearer token's user, anonymous
// without a token, 401 for a token the model does not know, or one expired
// or not issued for the model's audience.
func (s *Server) authenticate(req *http.Request) (identity, error) {
	h := req.Header.Get("Authorization")
	if h == "" {
		return identity{name: "system:anonymous", groups: []string{"system:unauthenticated"}}, nil
	}
	token, ok := strings.CutPrefix(h, "Bearer ")
	s.mu.Lock()
	who, known := s.tokens[strings.TrimSpace(token)]
	s.mu.Unlock()
	if !ok || !known || !who.validFor(nil, s.opts.Now()) {
		return identity{}, apierrors.NewUnauthorized("Unauthorized")
	}
	return who, nil
}

// validFor says whether the token is valid at now for one of audiences
// (nil: the API's).
func (id identity) validFor(audiences []string, now time.Time) bool {
	if audiences == nil {
		audiences = []string{APIAudience}
	}
	if !id.expires.IsZero() && !now.Before(id.expires) {
		return false
	}
	if id.audiences == nil {
		return slices.Contains(audiences, APIAudience) // a static token: the API's audience only
	}
	return slices.ContainsFunc(audiences, func(a string) bool { return slices.Contains(id.audiences, a) })
}

// authorize answers 403 unless who may make the request: system:masters
// always (before RBAC), else an Allow rule (none while not ready), and
// the paths every user (or anyone) may read.
func (s *Server) authorize(who identity, info requestInfo) error {
	if slices.Contains(who.groups, "system:masters") {
		return nil
	}
	s.mu.Lock()
	ready := s.ready
	allowed := ready && s.allowedLocked(who.name, who.groups, info)
	s.mu.Unlock()
	if allowed {
		return nil
	}
	return forbidden(who.name, info)
}

// publicPaths are what system:public-info-viewer lets anyone read;
// system:discovery lets any authenticated user read these and /api,
// /apis and below.
var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}

func (s *Server) allowedLocked(user string, groups []string, info requestInfo) bool {
	if !info.resourceRequest {
		if info.verb != "get" {
			return false
		}
		if slices.Contains(publicPaths, info.path) {
			return true
		}
		discovery := info.path == "/api" || info.path == "/apis" ||
			strings.HasPrefix(info.path, "/api/") || strings.HasPrefix(info.path, "/apis/")
		return discovery && slices.Contains(groups, "system:authenticated")
	}
	if info.group == "authorization.k8s.io" && info.resource == "selfsubjectaccessreviews" && info.verb == "create" {
		return slices.Contains(groups, "system:authenticated") // system:basic-user
	}
	for _, r := range s.rules {
		if s.roleBindingsUnsynced && r.namespace != "" {
			continue
		}
		if r.user == user && r.matches(info.verb, info.group, info.resource, info.ns) {
			return true
		}
	}
	return false
}

func (r rule) matches(verb, group, resource, namespace string) bool {
	match := func(set []string, v string) bool { return slices.Contains(set, "*") || slices.Contains(set, v) }
	return match(r.verbs, verb) && match([]string{r.group}, group) && match([]string{r.resource}, resource) &&
		(r.namespace == "" || r.namespace == namespace)
}

// forbidden is the API server's 403 (responsewriters.ForbiddenStatusError).
func forbidden(user string, info requestInfo) error {
	if !info.resourceRequest {
		return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("User %q cannot %s path %q", user, info.verb, info.path))
	}
	resource := info.resource
	if info.subresource != "" {
		resource += "/" + info.subresource
	}
	scope := "at the cluster scope"
	if info.ns != "" {
		scope = fmt.Sprintf("in the namespace %q", info.ns)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: info.group, Resource: info.resource}, info.name,
		fmt.Errorf("User %q cannot %s resource %q in API group %q %s", user, info.verb, resource, info.group, scope))
}

// errorResponse is err as the API server answers it: a Status.
func errorResponse(err error) response {
	var status metav1.Status
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		status = se.Status()
	} else {
		// What is not a Status error: a 500 with its text (ErrorToAPIStatus).
		status = metav1.Status{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Status = metav1.StatusFailure
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return jsonResponse(code, &status)
}

// jsonResponse is obj as a JSON answer.
func jsonResponse(code int, obj any) response {
	b, err := json.Marshal(obj)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
	}
	return response{code: code, header: http.Header{"Content-Type": {"application/json"}}, body: b}
}

// textResponse is a plain text answer (/healthz, /readyz).
func textResponse(code int, text string) response {
	return response{code: code, header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, body: []byte(text)}
}
