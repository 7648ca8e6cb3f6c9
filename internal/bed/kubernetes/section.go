package kubernetes

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/scenario"
)

// nodeName is what tunbench accepts as a node name: a DNS label or
// subdomain (RFC 1123) of at most 63 bytes, which also names the node's
// directory and journal on the host.
var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// k8sNamespace is a Kubernetes namespace name (RFC 1123 label).
var k8sNamespace = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// stray refuses a kubernetes section on another testbed.
func stray(s scenario.Scenario) error {
	if s.Section(SectionKey) == nil {
		return nil
	}
	return errors.New("kubernetes: a cluster is only used by testbed kubernetes: set testbed: kubernetes or drop the kubernetes section")
}

// checkRecover refuses the recover test: it takes the underlay device
// down, which on a cluster node cuts the node off its cluster.
func checkRecover(scenario.Scenario) []error {
	return []error{errors.New("tests: recover takes the underlay device down, which on a cluster node cuts the node off its cluster: drop recover, or run it on testbed local, vm or ssh")}
}

// check returns the problems of scenario s on the kubernetes testbed: its
// kubernetes section, and what the testbed cannot do (pin, wan, offloads
// other than on).
func check(s scenario.Scenario, _ scenario.Catalog) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	k, err := FromScenario(s)
	if err != nil {
		return []error{err}
	}
	if k == nil || len(k.Nodes) < 2 {
		bad("kubernetes.nodes", "testbed kubernetes needs at least two nodes, each named as the cluster names it (kubectl get nodes; see docs/kubernetes.md)")
		return errs
	}
	if s.Pin {
		bad("pin", "pinning splits one machine's CPUs between the sides; on testbed kubernetes each side is its own node: drop pin")
	}
	if len(s.WAN) > 0 {
		bad("wan", "testbed kubernetes measures the real network between the nodes and emulates none: drop wan")
	}
	for _, o := range s.Offloads {
		if o != "on" {
			bad("offloads", "%q: testbed kubernetes leaves the nodes' NIC settings as they are: use offloads: [on]", o)
			break
		}
	}
	if k.Namespace != "" && !k8sNamespace.MatchString(k.Namespace) {
		bad("kubernetes.namespace", "%q: a namespace name is 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit", k.Namespace)
	}
	if k.Image != "" && strings.ContainsAny(k.Image, " \t\n") {
		bad("kubernetes.image", "%q: give an image reference such as busybox:1.36", k.Image)
	}
	switch k.Tools {
	case "", ToolsNode:
	case ToolsImage:
		if k.Image == "" {
			bad("kubernetes.tools", "image runs every tool from kubernetes.image, and the default image (%s) has no iperf3 nor the methods' tools: name an image that holds them in kubernetes.image, or use tools: node (docs/kubernetes.md)", DefaultImage)
		}
	default:
		bad("kubernetes.tools", "%q: give node (the nodes' own tools, through their root file system) or image (the tools of kubernetes.image)", k.Tools)
	}
	where := "on the nodes"
	if k.Tools == ToolsImage {
		where = "in the image"
	}
	if k.Binary != "" && !strings.HasPrefix(k.Binary, "/") {
		bad("kubernetes.binary", "%q: give the absolute path of tunbench %s, or leave it out to copy this one", k.Binary, where)
	}
	if k.Dir != "" && !strings.HasPrefix(k.Dir, "/") {
		bad("kubernetes.dir", "%q: give an absolute directory %s", k.Dir, where)
	}
	names := map[string]bool{}
	for i, n := range k.Nodes {
		f := fmt.Sprintf("kubernetes.nodes[%d]", i)
		if !nodeName.MatchString(n.Name) {
			bad(f+".name", "%q: give the node's name as the cluster knows it (kubectl get nodes), at most 63 lowercase letters, digits, '.' or '-'", n.Name)
		}
		if names[n.Name] {
			bad(f+".name", "%q is listed twice: name each node once", n.Name)
		}
		names[n.Name] = true
		if n.Dev != "" && (len(n.Dev) > 15 || strings.ContainsAny(n.Dev, "/ \t\n")) {
			bad(f+".dev", "%q: name a network device of the node (at most 15 bytes), or leave it out for the one carrying the address", n.Dev)
		}
		for _, fam := range []string{"ipv4", "ipv6"} {
			v := n.IPv4
			if fam == "ipv6" {
				v = n.IPv6
			}
			if v == "" {
				continue
			}
			a, err := ParseAddrOrPrefix(v)
			if err != nil || (fam == "ipv4") != a.Is4() {
				bad(f+"."+fam, "%q: give an %s address of the node (a prefix length may follow), or leave it out for its InternalIP", v, fam)
			}
		}
	}
	for i, p := range k.Pairs {
		if len(p) != 2 || p[0] == p[1] {
			bad(fmt.Sprintf("kubernetes.pairs[%d]", i), "%v: a pair is two different nodes, [sender, receiver]", p)
			continue
		}
		for _, n := range p {
			if !names[n] {
				bad(fmt.Sprintf("kubernetes.pairs[%d]", i), "unknown node %q: nodes are %s", n, strings.Join(sortedKeys(names), ", "))
			}
		}
	}
	return errs
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
