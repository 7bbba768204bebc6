//go:build tools

// Package kube pins the versions of kube-apiserver and etcd that
// internal/harness/kubetest runs. Build them with build.sh.
package kube

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
