//go:build tools

// Package k8s pins the Kubernetes binaries the kubernetes test cluster
// (internal/kubehost/kubetest) builds: kube-apiserver, kubelet and
// kube-controller-manager from k8s.io/kubernetes, its staging modules
// replaced by their published versions.
package k8s

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
