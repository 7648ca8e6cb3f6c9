package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/kubehost"
	"github.com/tunbench/tunbench/internal/kubehost/kubetest"
	"github.com/tunbench/tunbench/internal/result"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeMethods are what issue 25 asks of a run between two nodes through
// pods and agents, and the cluster's own pod network beside native.
var kubeMethods = []string{"native", "vxlan", "wireguard-go", "ipsec", "pod-network"}

// kubeScenario writes a scenario for cl's two nodes.
func kubeScenario(t *testing.T, cl *kubetest.Cluster, bin string, methods []string, extra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: kubernetes\nmethods: [%s]\ncongestion_control: [cubic]\nrepetitions: 1\nduration: 2s\nomit: 0s\nlatency: 0s\ntests: [tcp_stream]\n%s",
		strings.Join(methods, ", "), extra)
	fmt.Fprintf(&b, "kubernetes:\n  kubeconfig: %s\n  image: %s\n  binary: %s\n  pairs: [[%s, %s]]\n  nodes:\n", cl.Kubeconfig, cl.Image, bin, cl.Nodes[0].Name, cl.Nodes[1].Name)
	for _, n := range cl.Nodes {
		fmt.Fprintf(&b, "    - {name: %s}\n", n.Name)
	}
	scen := filepath.Join(t.TempDir(), "kube.yaml")
	if err := os.WriteFile(scen, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return scen
}

// TestKubernetesRun: "tunbench run" on testbed kubernetes over a real
// two-node cluster (kubetest): native, vxlan, wireguard-go and ipsec
// between the nodes through the agent pods, and pod-network between
// ordinary pods beside them. Every cell is ok with throughput, the
// pod-network cells record the CNI, and afterwards the cluster holds no
// pod of the run and the nodes no device of it.
func TestKubernetesRun(t *testing.T) {
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, kubeMethods, "families: [ipv4]\n")
	dir := t.TempDir()
	db, export := filepath.Join(dir, "r.db"), filepath.Join(dir, "e.json")
	start := time.Now()
	out, err := exec.Command("ip", "netns", "exec", cl.Control, bin, "run", "-f", scen, "--db", db, "--export", export).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run on testbed kubernetes: %v\n%s", err, out)
	}
	t.Logf("run of %d methods took %s", len(kubeMethods), time.Since(start).Round(time.Millisecond))
	doc := exportOf(t, export)
	if doc.Run.Testbed != "kubernetes" {
		t.Errorf("run recorded testbed %q, want kubernetes", doc.Run.Testbed)
	}
	got := map[string]result.Cell{}
	for _, c := range doc.Cells {
		got[c.Method] = c
	}
	for _, m := range kubeMethods {
		c, ok := got[m]
		switch {
		case !ok:
			t.Errorf("%s: no cell", m)
		case c.Status != result.StatusOK:
			t.Errorf("%s: %s: %s", m, c.Status, c.Error)
		case c.Throughput == nil || c.Throughput.BitsPerSecond <= 0:
			t.Errorf("%s: no throughput measured", m)
		case c.Implementation == "":
			t.Errorf("%s: no implementation recorded", m)
		}
	}
	pn := got["pod-network"]
	if !strings.Contains(pn.Implementation, "CNI ") || !strings.Contains(pn.Meta.Extra["cni.a"], "bridge") {
		t.Errorf("pod-network records no CNI: implementation %q, extra %v", pn.Implementation, pn.Meta.Extra)
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
	noKubeLeftovers(t, cl, db)
}

// noKubeLeftovers fails t when the cluster still has a tunbench pod or a
// node a device of a run stored in db.
func noKubeLeftovers(t *testing.T, cl *kubetest.Cluster, db string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := cl.Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kubehost.LabelApp + "=" + kubehost.AppName})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	for _, p := range pods.Items {
		t.Errorf("pod %s/%s (run %s) left in the cluster", p.Namespace, p.Name, p.Labels[kubehost.LabelRun])
	}
	for _, n := range cl.Nodes {
		out, _ := exec.Command("ip", "-n", n.Netns, "-o", "link").Output()
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 1 && runDevice.MatchString(f[1]) {
				t.Errorf("node %s: device %s left", n.Name, f[1])
			}
		}
		out, _ = exec.Command("ip", "-n", n.Netns, "xfrm", "state").Output()
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("node %s: xfrm state left: %s", n.Name, s)
		}
	}
	_ = storedRuns(t, db)
}
