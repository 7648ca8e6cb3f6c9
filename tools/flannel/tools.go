//go:build tools

// Package flannel pins flanneld, the Flannel daemon the kubernetes test
// cluster (internal/kubehost/kubetest) runs on its nodes with the kube
// subnet manager: github.com/flannel-io/flannel at the version go.mod
// requires. Its main package imports every backend, the Tencent Cloud
// one included, whose SDK module version flannel requires
// (tencentcloud/vpc v1.3.188) the Go module proxy refuses; go.mod
// replaces it with the nearest version the proxy serves. The test
// cluster uses the vxlan, host-gw and wireguard backends only.
package flannel

import _ "github.com/flannel-io/flannel"
