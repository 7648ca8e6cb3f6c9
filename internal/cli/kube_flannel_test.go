package cli

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/kubehost/kubetest"
	"github.com/tunbench/tunbench/internal/result"
)

// flannelMethods are what issue 43 measures side by side between the same
// two nodes: the cluster's pod network over Flannel's VXLAN, and
// tunbench's own vxlan and wireguard-go, beside native.
var flannelMethods = []string{"native", "pod-network", "vxlan", "wireguard-go"}

// TestKubernetesFlannel: "tunbench run" on testbed kubernetes over a real
// two-node cluster whose CNI is Flannel (vxlan backend): every repetition
// of every method is ok, the pod-network cells name the CNI and its
// backend, device, MTU and encryption (label "pod-network (flannel
// vxlan)"), and tunbench's own tunnels between the nodes leave Flannel's
// device, routes, neighbours and forwarding entries and firewall rules on
// each node exactly as they were.
func TestKubernetesFlannel(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t, kubetest.WithCNI(kubetest.CNIFlannel, "vxlan"))
	var before [][]string
	for _, n := range cl.Nodes {
		before = append(before, flannelNodeState(t, n))
	}
	const reps = 2
	scen := kubeScenario(t, cl, bin, flannelMethods, reps, "2s")
	dir := t.TempDir()
	db, export := filepath.Join(dir, "r.db"), filepath.Join(dir, "e.json")
	start := time.Now()
	out, err := exec.Command("ip", "netns", "exec", cl.Control, bin, "run", "-f", scen, "--db", db, "--export", export).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run on a Flannel cluster: %v\n%s", err, out)
	}
	t.Logf("run of %d methods took %s", len(flannelMethods), time.Since(start).Round(time.Millisecond))
	doc := exportOf(t, export)
	n := map[string]int{}
	for _, c := range doc.Cells {
		n[c.Method]++
		switch {
		case c.Status != result.StatusOK:
			t.Errorf("%s repetition %d: %s: %s", c.Method, c.Repetition, c.Status, c.Error)
		case c.Throughput == nil || c.Throughput.BitsPerSecond <= 0:
			t.Errorf("%s repetition %d: no throughput measured", c.Method, c.Repetition)
		}
		if c.Method != "pod-network" {
			continue
		}
		if c.Meta.Datapath != "flannel vxlan" {
			t.Errorf("pod-network repetition %d: data path %q, want flannel vxlan", c.Repetition, c.Meta.Datapath)
		}
		for _, side := range []string{"a", "b"} {
			if f := c.Meta.Extra["cni.flannel."+side]; !strings.Contains(f, "flannel vxlan (device flannel.1 vxlan id 1 port 8472 mtu 1450, pod MTU 1450, encryption none") {
				t.Errorf("pod-network repetition %d: cni.flannel.%s %q", c.Repetition, side, f)
			}
		}
		if !strings.Contains(c.Implementation, "flannel vxlan") {
			t.Errorf("pod-network repetition %d: implementation %q names no Flannel", c.Repetition, c.Implementation)
		}
	}
	for _, m := range flannelMethods {
		if n[m] != reps {
			t.Errorf("%s: %d cells, want %d", m, n[m], reps)
		}
	}
	if !strings.Contains(string(out), "pod-network (flannel vxlan)") {
		t.Errorf("the table does not name pod-network (flannel vxlan)")
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	} else {
		t.Logf("table:\n%s", out)
	}
	noKubeLeftovers(t, cl, db)
	for i, n := range cl.Nodes {
		if diff := cmp.Diff(before[i], flannelNodeState(t, n)); diff != "" {
			t.Errorf("node %s's Flannel state after the run (-before +after):\n%s", n.Name, diff)
		}
	}
}

// nftCounter is the part of a firewall rule that changes with traffic.
var nftCounter = regexp.MustCompile(`counter packets \d+ bytes \d+`)

// flannelNodeState is a Flannel node's state: the node's network state
// (testbedtest.State, less its pods' comings and goings as
// kubeNodeState) with the firewall's counters blanked, and flannel.1's
// neighbours and forwarding entries, which Flannel programs per node.
func flannelNodeState(t *testing.T, n kubetest.Node) []string {
	t.Helper()
	var lines []string
	for _, l := range kubeNodeState(t, n) {
		lines = append(lines, nftCounter.ReplaceAllString(l, "counter"))
	}
	for _, argv := range [][]string{
		{"ip", "-n", n.Netns, "neigh", "show", "dev", "flannel.1"},
		{"bridge", "-n", n.Netns, "fdb", "show", "dev", "flannel.1"},
	} {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				lines = append(lines, argv[3]+": "+l)
			}
		}
	}
	slices.Sort(lines) // again: the counters were part of the order
	if !strings.Contains(strings.Join(lines, "\n"), "flannel.1") {
		t.Fatalf("node %s has no flannel.1 in its state:\n%s", n.Name, strings.Join(lines, "\n"))
	}
	return lines
}
