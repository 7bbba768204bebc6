package kubetest

import (
	"context"
	"os"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// GrantRole reads the ClusterRole in manifest (a file of deploy/) and grants
// its rules to user: cluster-wide with a ClusterRoleBinding when namespace is
// empty, else as a Role and RoleBinding of that namespace only. The binding
// is named after the user. It returns the role as read, once the API
// server's authorizer honours the grant: RBAC reads bindings through an
// informer, so a request right after the create may still be refused.
func (s *Server) GrantRole(t testing.TB, manifest, user, namespace string) rbacv1.ClusterRole {
	t.Helper()
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatalf("kubetest: role: %v", err)
	}
	defer f.Close()
	var role rbacv1.ClusterRole
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&role); err != nil {
		t.Fatalf("kubetest: role %s: %v", manifest, err)
	}
	ctx := context.Background()
	rbac := s.Clientset().RbacV1()
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if namespace == "" {
		_, err = rbac.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
		if err == nil {
			_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects:   subjects,
			}, metav1.CreateOptions{})
		}
	} else {
		nsRole := rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: namespace}, Rules: role.Rules}
		_, err = rbac.Roles(namespace).Create(ctx, &nsRole, metav1.CreateOptions{})
		if err == nil {
			_, err = rbac.RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
				Subjects:   subjects,
			}, metav1.CreateOptions{})
		}
	}
	if err != nil {
		t.Fatalf("kubetest: grant %s to %s: %v", role.Name, user, err)
	}
	s.awaitAllowed(t, user, namespace, role)
	return role
}

// awaitAllowed asks the authorizer (SubjectAccessReview) whether user may
// do what the first resource rule of role allows, until it says yes.
func (s *Server) awaitAllowed(t testing.TB, user, namespace string, role rbacv1.ClusterRole) {
	t.Helper()
	var attrs *authorizationv1.ResourceAttributes
	for _, r := range role.Rules {
		if len(r.Verbs) > 0 && len(r.APIGroups) > 0 && len(r.Resources) > 0 {
			attrs = &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
			if len(r.ResourceNames) > 0 {
				attrs.Name = r.ResourceNames[0]
			}
			break
		}
	}
	if attrs == nil {
		return // no resource rule to ask about
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := s.Clientset().AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubetest: %s granted to %s, and not allowed %+v a minute later (%v)", role.Name, user, *attrs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
