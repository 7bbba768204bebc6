package kubetest

import (
	"context"
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// GrantRole reads the ClusterRole in manifest (a file of deploy/) and grants
// its rules to user: cluster-wide with a ClusterRoleBinding when namespace is
// empty, else as a Role and RoleBinding of that namespace only. The binding
// is named after the user. It returns the role as read.
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
	return role
}
