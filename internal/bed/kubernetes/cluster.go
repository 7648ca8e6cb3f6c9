package kubernetes

import (
	"net/netip"

	"github.com/tunbench/tunbench/internal/scenario"
)

// SectionKey is the scenario's key of the kubernetes testbed's section.
const SectionKey = "kubernetes"

// pairs are the ordered pairs (sender, receiver) of nodes a scenario on
// the kubernetes testbed measures: its pairs, or every ordered pair.
func pairs(s scenario.Scenario) [][2]string {
	x, err := FromScenario(s)
	if err != nil || x == nil {
		return nil
	}
	var names []string
	for _, n := range x.Nodes {
		names = append(names, n.Name)
	}
	return scenario.OrderedPairs(names, x.Pairs)
}

// FromScenario returns the scenario's kubernetes section, decoded (nil
// when it has none); validation has refused one that does not decode.
func FromScenario(s scenario.Scenario) (*Section, error) {
	sec := s.Section(SectionKey)
	if sec == nil {
		return nil, nil
	}
	var x Section
	if err := sec.Decode(&x); err != nil {
		return nil, err
	}
	return &x, nil
}

// With returns s with x as its kubernetes section (tests build scenarios
// so).
func With(s scenario.Scenario, x *Section) scenario.Scenario {
	out, err := s.WithSection(SectionKey, x)
	if err != nil {
		panic(err) // a Section always encodes
	}
	return out
}

// Section is the scenario's kubernetes section, the testbed of a cluster's nodes: tunbench starts one
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
type Section struct {
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
	// container with Tools "image" (default ssh.DefaultDir).
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

// DefaultImage is the image of tunbench's pods unless the
// scenario names one.
const DefaultImage = "docker.io/library/busybox:1.36"

// Where the kubernetes testbed's tools come from (Section.Tools).
const (
	// ToolsNode runs the agent and every tool from the node's own file
	// system (chroot into the node's root mounted in the agent pod).
	ToolsNode = "node"
	// ToolsImage runs them in the agent pod's container, from its image.
	ToolsImage = "image"
)

// ToolsOrDefault is where the tools come from: ToolsNode or ToolsImage.
func (k *Section) ToolsOrDefault() string {
	if k.Tools == "" {
		return ToolsNode
	}
	return k.Tools
}

// Node returns the node called name.
func (k *Section) Node(name string) (Node, bool) {
	for _, n := range k.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// NamespaceOrDefault is the namespace tunbench's pods go to.
func (k *Section) NamespaceOrDefault() string {
	if k.Namespace == "" {
		return "default"
	}
	return k.Namespace
}

// ImageOrDefault is the image of tunbench's pods.
func (k *Section) ImageOrDefault() string {
	if k.Image == "" {
		return DefaultImage
	}
	return k.Image
}

// ParseAddrOrPrefix reads an address given with or without its prefix
// length: "10.0.0.1" or "10.0.0.1/24".
func ParseAddrOrPrefix(v string) (netip.Addr, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return p.Addr(), nil
	}
	return netip.ParseAddr(v)
}
