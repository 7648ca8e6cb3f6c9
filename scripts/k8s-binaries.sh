#!/bin/bash
# Build the Kubernetes binaries (kube-apiserver, kube-controller-manager,
# kubelet of the version internal/kubehost/kubetest pins, from the wrapper
# module tools/k8s) into their cache directory when they are missing, and
# print that directory. The kubernetes tests build them the same way (one
# Go function, kubetest.Binaries, under a file lock); running this first
# keeps the ~12 minute cold build out of a test's timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./internal/kubehost/kubetest/k8sbin
