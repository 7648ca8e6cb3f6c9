package kubernetes_test

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed/kubernetes"
	"github.com/tunbench/tunbench/internal/bed/registry"
	methods "github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
)

// catalog is the scenario's validation as the command line runs it:
// every method and every testbed.
var catalog = registry.Catalog(methods.Builtin())

const kubeYAML = `
testbed: kubernetes
methods: [native, vxlan]
kubernetes:
  namespace: bench
  nodes:
    - {name: worker-1}
    - {name: worker-2, dev: ens5, ipv4: 10.0.0.12/24}
    - {name: worker-3.example, ipv4: 10.0.0.13}
`

func TestKubernetesScenario(t *testing.T) {
	s, err := scenario.Parse([]byte(kubeYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog); err != nil {
		t.Fatal(err)
	}
	if !s.Remote() {
		t.Error("testbed kubernetes is remote: this machine only controls")
	}
	if got := len(s.SitePairs(catalog.(scenario.BedCatalog))); got != 6 {
		t.Errorf("every ordered pair of 3 nodes: got %d, want 6", got)
	}
	k := clusterOf(t, s)
	k.Pairs = [][]string{{"worker-2", "worker-1"}}
	s = kubernetes.With(s, k)
	if got := s.SitePairs(catalog.(scenario.BedCatalog)); len(got) != 1 || got[0] != [2]string{"worker-2", "worker-1"} {
		t.Errorf("chosen pairs: %v", got)
	}
	if got := s.CongestionControls(); len(got) != 1 || got[0] != "" {
		t.Errorf("congestion control on a cluster: %q, want each node's own default", got)
	}
	if k := clusterOf(t, s); k.NamespaceOrDefault() != "bench" || k.ImageOrDefault() != kubernetes.DefaultImage {
		t.Errorf("namespace %q, image %q", k.NamespaceOrDefault(), k.ImageOrDefault())
	}
}

// TestKubernetesScenarioRefusals: each bad kubernetes scenario is refused
// naming the field and the fix, before anything reaches a cluster.
func TestKubernetesScenarioRefusals(t *testing.T) {
	two := `nodes: [{name: n1}, {name: n2}]`
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"one node", "testbed: kubernetes\nkubernetes: {nodes: [{name: n1}]}", "kubernetes.nodes: testbed kubernetes needs at least two nodes"},
		{"no section", "testbed: kubernetes", "kubernetes.nodes: testbed kubernetes needs at least two nodes"},
		{"bad node name", "testbed: kubernetes\nkubernetes: {nodes: [{name: N_1}, {name: n2}]}", `kubernetes.nodes[0].name: "N_1": give the node's name as the cluster knows it`},
		{"duplicate node", "testbed: kubernetes\nkubernetes: {nodes: [{name: n1}, {name: n1}]}", `kubernetes.nodes[1].name: "n1" is listed twice`},
		{"bad address", "testbed: kubernetes\nkubernetes: {nodes: [{name: n1, ipv4: 2001:db8::1}, {name: n2}]}", `kubernetes.nodes[0].ipv4: "2001:db8::1": give an ipv4 address of the node`},
		{"bad namespace", "testbed: kubernetes\nkubernetes: {namespace: Bench, " + two + "}", `kubernetes.namespace: "Bench": a namespace name is`},
		{"unknown pair node", "testbed: kubernetes\nkubernetes: {pairs: [[n1, n3]], " + two + "}", `kubernetes.pairs[0]: unknown node "n3": nodes are n1, n2`},
		{"offloads", "testbed: kubernetes\noffloads: [off]\nkubernetes: {" + two + "}", `offloads: "off": testbed kubernetes leaves the nodes' NIC settings as they are`},
		{"pin", "testbed: kubernetes\npin: true\nkubernetes: {" + two + "}", "pin: pinning splits one machine's CPUs"},
		{"section on local", "testbed: local\nkubernetes: {" + two + "}", "kubernetes: a cluster is only used by testbed kubernetes"},
		{"pod-network on local", "testbed: local\nmethods: [native, pod-network]", "methods: pod-network measures a Kubernetes cluster's pod network between two nodes, on testbed kubernetes only: set testbed: kubernetes or drop it"},
		{"unknown field", "testbed: kubernetes\nkubernetes: {nodez: []}", "nodez"},
		{"unknown tools", "testbed: kubernetes\nkubernetes: {tools: host, " + two + "}", `kubernetes.tools: "host": give node (the nodes' own tools, through their root file system) or image`},
		{"tools image without image", "testbed: kubernetes\nkubernetes: {tools: image, " + two + "}", "kubernetes.tools: image runs every tool from kubernetes.image, and the default image (" + kubernetes.DefaultImage + ") has no iperf3"},
		{"binary relative in image", "testbed: kubernetes\nkubernetes: {tools: image, image: tools:1, binary: bin/tunbench, " + two + "}", `kubernetes.binary: "bin/tunbench": give the absolute path of tunbench in the image`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc + "\n"
			if !strings.Contains(doc, "methods:") {
				doc += "methods: [native]\n"
			}
			s, err := scenario.Parse([]byte(doc))
			if err == nil {
				err = s.Validate(catalog)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestKubernetesTools: tools defaults to node; tools: image with an
// image is accepted.
func TestKubernetesTools(t *testing.T) {
	s, err := scenario.Parse([]byte(kubeYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got := clusterOf(t, s).ToolsOrDefault(); got != kubernetes.ToolsNode {
		t.Errorf("default tools %q, want %q", got, kubernetes.ToolsNode)
	}
	s, err = scenario.Parse([]byte(kubeYAML + "  tools: image\n  image: registry.example/tunbench-tools:1\n  dir: /opt/tunbench\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog); err != nil {
		t.Fatal(err)
	}
	if got := clusterOf(t, s).ToolsOrDefault(); got != kubernetes.ToolsImage {
		t.Errorf("tools %q, want %q", got, kubernetes.ToolsImage)
	}
}

// TestRecoverOnKubernetes: recover would cut a node off its cluster.
func TestRecoverOnKubernetes(t *testing.T) {
	s, err := scenario.Parse([]byte(kubeYAML + "tests: [recover]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(catalog)
	want := "tests: recover takes the underlay device down, which on a cluster node cuts the node off its cluster: drop recover, or run it on testbed local, vm or ssh"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("recover on a cluster: %v, want %q", err, want)
	}
}

// clusterOf is the kubernetes section of s.
func clusterOf(t *testing.T, s scenario.Scenario) *kubernetes.Section {
	t.Helper()
	k, err := kubernetes.FromScenario(s)
	if err != nil || k == nil {
		t.Fatalf("kubernetes section: %v %v", k, err)
	}
	return k
}
