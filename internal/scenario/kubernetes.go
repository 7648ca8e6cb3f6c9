package scenario

import (
	"net/netip"
)

// Kubernetes is the testbed of a cluster's nodes: tunbench starts one
// privileged pod per node (host network, pinned to the node) and runs its
// agent there, so methods and load run between the nodes' own network
// stacks as on ssh hosts; the method pod-network measures the cluster's
// pod network between ordinary pods on the same nodes.
//
//	testbed: kubernetes
//	kubernetes:
//	  kubeconfig: ~/.kube/config   # default: $KUBECONFIG, then ~/.kube/config
//	  context: prod                # default: the kubeconfig's current context
//	  namespace: tunbench          # where the pods go (default: default)
//	  image: busybox:1.36          # the pods' image: sh, sleep, chroot
//	  tools: node                  # node (default) or image: where tools come from
//	  nodes:
//	    - name: worker-1           # the node's name in the cluster
//	      dev: eth0                # default: the device carrying the address
//	      ipv4: 10.0.0.11          # default: the node's InternalIP
//	    - name: worker-2
//	  pairs: [[worker-1, worker-2]]   # empty: every ordered pair
type Kubernetes struct {
	Kubeconfig string `yaml:"kubeconfig,omitempty" json:"kubeconfig,omitempty"`
	Context    string `yaml:"context,omitempty" json:"context,omitempty"`
	Namespace  string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Image is the image of tunbench's pods. With Tools "node" it needs
	// only a shell, sleep and chroot: the agent and every tool run from
	// the node's own file system (mounted into the agent pod), as on an
	// ssh host. With Tools "image" it holds every tool the run calls.
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Tools says where the agent and the tools run from: ToolsNode (the
	// default) the node's own file system, ToolsImage the agent pod's
	// container, whose image (Image, which must then be given) holds
	// them; the pod keeps the node's network and pids either way.
	Tools string `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Binary is the path of tunbench already installed on every node
	// (with Tools "image": in the image); empty copies this tunbench to
	// Dir on each node (into the agent container).
	Binary string `yaml:"binary,omitempty" json:"binary,omitempty"`
	// Dir is where tunbench is copied on the nodes, or in the agent
	// container with Tools "image" (default DefaultSSHDir).
	Dir   string     `yaml:"dir,omitempty" json:"dir,omitempty"`
	Nodes []Node     `yaml:"nodes" json:"nodes"`
	Pairs [][]string `yaml:"pairs,omitempty" json:"pairs,omitempty"`
}

// Node is one node of the kubernetes testbed.
type Node struct {
	Name string `yaml:"name" json:"name"`
	// Dev is the underlay device; empty: the device that carries the
	// address.
	Dev string `yaml:"dev,omitempty" json:"dev,omitempty"`
	// IPv4 and IPv6 are the node's underlay addresses (a prefix length
	// may be given; it is read from the device otherwise). Empty: the
	// node's InternalIP of that family.
	IPv4 string `yaml:"ipv4,omitempty" json:"ipv4,omitempty"`
	IPv6 string `yaml:"ipv6,omitempty" json:"ipv6,omitempty"`
}

// DefaultKubernetesImage is the image of tunbench's pods unless the
// scenario names one.
const DefaultKubernetesImage = "docker.io/library/busybox:1.36"

// Where the kubernetes testbed's tools come from (Kubernetes.Tools).
const (
	// ToolsNode runs the agent and every tool from the node's own file
	// system (chroot into the node's root mounted in the agent pod).
	ToolsNode = "node"
	// ToolsImage runs them in the agent pod's container, from its image.
	ToolsImage = "image"
)

// ToolsOrDefault is where the tools come from: ToolsNode or ToolsImage.
func (k *Kubernetes) ToolsOrDefault() string {
	if k.Tools == "" {
		return ToolsNode
	}
	return k.Tools
}

// Node returns the node called name.
func (k *Kubernetes) Node(name string) (Node, bool) {
	for _, n := range k.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// NamespaceOrDefault is the namespace tunbench's pods go to.
func (k *Kubernetes) NamespaceOrDefault() string {
	if k.Namespace == "" {
		return "default"
	}
	return k.Namespace
}

// ImageOrDefault is the image of tunbench's pods.
func (k *Kubernetes) ImageOrDefault() string {
	if k.Image == "" {
		return DefaultKubernetesImage
	}
	return k.Image
}

// Remote reports whether the run's endpoints are other machines, driven
// through tunbench agents: the scenario has a section naming them (ssh
// hosts, kubernetes nodes; validation keeps each to its own testbed), and
// this machine is then only the controller.
func (s Scenario) Remote() bool { return s.SSH != nil || s.Kubernetes != nil }

// ParseAddrOrPrefix reads an address given with or without its prefix
// length: "10.0.0.1" or "10.0.0.1/24".
func ParseAddrOrPrefix(v string) (netip.Addr, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return p.Addr(), nil
	}
	return netip.ParseAddr(v)
}
