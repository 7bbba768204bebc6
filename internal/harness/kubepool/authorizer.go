package kubepool

import (
	"context"
	"errors"
	"fmt"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The sentinel grants a user no test uses one permission through a Role and
// RoleBinding and another through a ClusterRole and ClusterRoleBinding.
const (
	sentinelName = "kubepool-sentinel"
	sentinelUser = "kubepool:sentinel"
)

// waitForAuthorizer waits until the API server's RBAC authorizer has seen the
// reset's deletes. It decides from informers of its own, which follow the
// deletes a moment later than the lists reset reads: a test whose
// ServiceAccount has the name of an earlier test's could otherwise be
// allowed by that test's binding. An informer applies its resource's
// changes in order, so once a SubjectAccessReview is allowed by sentinel
// objects of all four kinds, made after the deletes, the deletes are
// applied. The sentinels are deleted again.
func waitForAuthorizer(ctx context.Context, cs kubernetes.Interface) error {
	if err := createSentinels(ctx, cs); err != nil {
		return err
	}
	for {
		allowed, err := sentinelAllowed(ctx, cs)
		if err != nil {
			return err
		}
		if allowed {
			return deleteSentinels(ctx, cs)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the RBAC authorizer did not allow the sentinel: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func createSentinels(ctx context.Context, cs kubernetes.Interface) error {
	meta := metav1.ObjectMeta{Name: sentinelName}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: sentinelUser}}
	rbac := cs.RbacV1()
	_, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{sentinelName}},
	}}, metav1.CreateOptions{})
	if err == nil {
		_, err = rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sentinelName}}, metav1.CreateOptions{})
	}
	if err == nil {
		_, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{sentinelName}},
		}}, metav1.CreateOptions{})
	}
	if err == nil {
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sentinelName}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("create RBAC sentinel: %w", err)
	}
	return nil
}

// sentinelAllowed asks whether the sentinel user has both permissions.
func sentinelAllowed(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	for _, attrs := range []authzv1.ResourceAttributes{
		{Namespace: "default", Verb: "get", Resource: "configmaps", Name: sentinelName},
		{Verb: "get", Resource: "namespaces", Name: sentinelName},
	} {
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: sentinelUser, ResourceAttributes: &attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("review the RBAC sentinel: %w", err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

func deleteSentinels(ctx context.Context, cs kubernetes.Interface) error {
	rbac := cs.RbacV1()
	var errs []error
	for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{
		rbac.RoleBindings("default").Delete, rbac.Roles("default").Delete,
		rbac.ClusterRoleBindings().Delete, rbac.ClusterRoles().Delete,
	} {
		if err := del(ctx, sentinelName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete RBAC sentinel: %w", err)
	}
	return nil
}
