// TokenReview and SubjectAccessReview: the API server answering for its
// authenticator (the tokens the Server knows) and its authorizer (the
// Allow rules), as the registries of authentication.k8s.io/v1 and
// authorization.k8s.io/v1 do.

package apimodel

import (
	"net/http"
	"slices"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// tokenReview answers whether spec.token is valid for spec.audiences (none:
// the API's), and for whom. A token for other audiences, expired or
// unknown is not authenticated.
func (s *Server) tokenReview(body []byte) response {
	var tr authnv1.TokenReview
	if err := decodeInto(body, &tr); err != nil {
		return errorResponse(err)
	}
	if tr.Spec.Token == "" {
		return errorResponse(apierrors.NewBadRequest("token is required for TokenReview in authentication"))
	}
	auds := tr.Spec.Audiences
	if len(auds) == 0 {
		auds = []string{APIAudience}
	}
	s.mu.Lock()
	who, known := s.tokens[tr.Spec.Token]
	s.mu.Unlock()
	tr.Status = authnv1.TokenReviewStatus{}
	switch {
	case !known:
		tr.Status.Error = "[invalid bearer token, unknown]"
	case !who.validFor(auds, s.opts.Now()):
		tr.Status.Error = "[invalid bearer token, token not valid for the audiences or expired]"
	default:
		tr.Status.Authenticated = true
		tr.Status.User = authnv1.UserInfo{Username: who.name, UID: who.uid, Groups: slices.Clone(who.groups)}
		if len(who.extra) > 0 {
			tr.Status.User.Extra = map[string]authnv1.ExtraValue{}
			for k, v := range who.extra {
				tr.Status.User.Extra[k] = slices.Clone(v)
			}
		}
		tr.Status.Audiences = commonAudiences(auds, who.audiences)
	}
	tr.TypeMeta = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}
	return jsonResponse(http.StatusCreated, &tr)
}

// commonAudiences is what the authenticator answers: the asked audiences
// the token holds (a static token holds the API's).
func commonAudiences(asked, held []string) []string {
	if held == nil {
		held = []string{APIAudience}
	}
	var out []string
	for _, a := range asked {
		if slices.Contains(held, a) {
			out = append(out, a)
		}
	}
	return out
}

// selfSubjectAccessReview answers whether the caller may do what it asks,
// as subjectAccessReview does for a named user.
func (s *Server) selfSubjectAccessReview(body []byte, who identity) response {
	var ssar authzv1.SelfSubjectAccessReview
	if err := decodeInto(body, &ssar); err != nil {
		return errorResponse(err)
	}
	spec := ssar.Spec
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		// The API server names the kind of the decoded object, which is empty.
		return errorResponse(apierrors.NewInvalid(schema.GroupKind{Group: "authorization.k8s.io"}, "",
			field.ErrorList{field.Invalid(field.NewPath("spec", "resourceAttributes"), spec.NonResourceAttributes,
				"exactly one of nonResourceAttributes or resourceAttributes must be specified")}))
	}
	info := requestInfo{}
	if a := spec.ResourceAttributes; a != nil {
		info = requestInfo{resourceRequest: true, verb: a.Verb, group: a.Group, version: a.Version, resource: a.Resource,
			subresource: a.Subresource, name: a.Name, ns: a.Namespace}
	} else {
		info = requestInfo{verb: spec.NonResourceAttributes.Verb, path: spec.NonResourceAttributes.Path}
	}
	allowed := slices.Contains(who.groups, "system:masters")
	if !allowed {
		s.mu.Lock()
		allowed = s.ready && s.allowedLocked(who.name, who.groups, info)
		s.mu.Unlock()
	}
	ssar.Status = authzv1.SubjectAccessReviewStatus{Allowed: allowed}
	ssar.TypeMeta = metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"}
	return jsonResponse(http.StatusCreated, &ssar)
}

// subjectAccessReview answers whether spec's user may do what it asks, by
// the Allow rules (system:masters: always).
func (s *Server) subjectAccessReview(body []byte) response {
	var sar authzv1.SubjectAccessReview
	if err := decodeInto(body, &sar); err != nil {
		return errorResponse(err)
	}
	spec := sar.Spec
	var errs field.ErrorList
	path := field.NewPath("spec")
	if spec.ResourceAttributes != nil && spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(path.Child("nonResourceAttributes"), spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	}
	if spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil {
		errs = append(errs, field.Invalid(path.Child("resourceAttributes"), spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	if len(errs) > 0 {
		// The API server names the kind of the decoded object, which is empty.
		return errorResponse(apierrors.NewInvalid(schema.GroupKind{Group: "authorization.k8s.io"}, "", errs))
	}
	info := requestInfo{}
	if a := spec.ResourceAttributes; a != nil {
		info = requestInfo{resourceRequest: true, verb: a.Verb, group: a.Group, version: a.Version, resource: a.Resource,
			subresource: a.Subresource, name: a.Name, ns: a.Namespace}
	} else {
		info = requestInfo{verb: spec.NonResourceAttributes.Verb, path: spec.NonResourceAttributes.Path}
	}
	allowed := slices.Contains(spec.Groups, "system:masters")
	if !allowed {
		s.mu.Lock()
		allowed = s.ready && s.allowedLocked(spec.User, spec.Groups, info)
		s.mu.Unlock()
	}
	sar.Status = authzv1.SubjectAccessReviewStatus{Allowed: allowed}
	sar.TypeMeta = metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"}
	return jsonResponse(http.StatusCreated, &sar)
}
