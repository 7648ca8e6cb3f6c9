package cli

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/kubehost"
	"github.com/tunbench/tunbench/internal/kubehost/kubetest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// kubeMethods are what issue 25 asks of a run between two nodes through
// pods and agents, and the cluster's own pod network beside native.
var kubeMethods = []string{"native", "vxlan", "wireguard-go", "ipsec", "pod-network", "ssh-tunnel", "nebula", "tailscale"}

// kubeScenario writes a scenario for cl's two nodes.
func kubeScenario(t *testing.T, cl *kubetest.Cluster, bin string, methods []string, reps int, duration string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: kubernetes\nmethods: [%s]\nfamilies: [ipv4]\ncongestion_control: [cubic]\nrepetitions: %d\nduration: %s\nomit: 0s\nlatency: 0s\ntests: [tcp_stream]\n",
		strings.Join(methods, ", "), reps, duration)
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

// clusterMu lets one Kubernetes test's cluster run at a time: they run
// beside the other parallel tests, but several clusters at once on this
// 2-core machine once left a pod's iperf3 dead before its first sample.
var clusterMu sync.Mutex

// oneCluster holds clusterMu until t ends.
func oneCluster(t *testing.T) {
	clusterMu.Lock()
	t.Cleanup(clusterMu.Unlock)
}

// TestKubernetesRun: "tunbench run" on testbed kubernetes over a real
// two-node cluster (kubetest): native, vxlan, wireguard-go, ipsec,
// ssh-tunnel, nebula and tailscale (its control server in side a's agent
// pod) between the nodes through the agent pods, and pod-network between
// ordinary pods beside them. Every cell is ok with throughput, the
// pod-network cells record the CNI, and afterwards the cluster holds no
// pod of the run and the nodes no device of it. Each node carries
// networking of its own (testbedtest.Foreign) and is exactly as before
// afterwards, its pods' comings and goings aside.
func TestKubernetesRun(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	// Each node runs networking of its own, as a real node does; the
	// run leaves it exactly as it was.
	var before [][]string
	for _, n := range cl.Nodes {
		testbedtest.NewForeign(t, testbedtest.Foreign{Namespace: n.Netns, Dev: n.Dev, Addr4: n.IP.Addr(),
			Name: fmt.Sprintf("h%08x", crc32.ChecksumIEEE([]byte(n.Netns)))})
		before = append(before, kubeNodeState(t, n))
	}
	scen := kubeScenario(t, cl, bin, kubeMethods, 1, "2s")
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
	for _, c := range doc.Cells {
		if pod, node := c.Meta.Extra["kubernetes.pod.a"], c.Meta.Extra["kubernetes.node.b"]; !strings.HasPrefix(pod, "default/tunbench-") || !strings.Contains(node, "kubelet "+kubetest.Version) {
			t.Errorf("%s: pods and nodes not recorded: pod.a %q node.b %q", c.Method, pod, node)
		}
	}
	if pod := got["pod-network"].Meta.Extra["kubernetes.pod.b"]; !strings.Contains(pod, "-workload-") {
		t.Errorf("pod-network measured from %q, not an ordinary pod", pod)
	}
	pn := got["pod-network"]
	if !strings.Contains(pn.Implementation, "CNI ") || !strings.Contains(pn.Meta.Extra["cni.a"], "bridge") {
		t.Errorf("pod-network records no CNI: implementation %q, extra %v", pn.Implementation, pn.Meta.Extra)
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
	noKubeLeftovers(t, cl, db)
	for i, n := range cl.Nodes {
		if diff := cmp.Diff(before[i], kubeNodeState(t, n)); diff != "" {
			t.Errorf("node %s after the run (-before +after):\n%s", n.Name, diff)
		}
	}
}

// kubeNodeState is a node's network state (testbedtest.State) but for
// what its pods come and go with: the CNI bridge cni0 (made with the
// first pod), the pods' veth ends, and the routes and addresses on them.
func kubeNodeState(t *testing.T, n kubetest.Node) []string {
	t.Helper()
	var lines []string
	for _, l := range testbedtest.State(t, n.Netns, n.Dev) {
		if strings.Contains(l, "cni0") || strings.Contains(l, "veth") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
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

// waitIperf3 waits until an iperf3 server or client runs in network
// namespace ns: a cell is measuring there.
func waitIperf3(t *testing.T, ns string, within time.Duration, exited <-chan struct{}, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if measuringIn(ns) {
			return
		}
		select {
		case <-exited:
			t.Fatalf("the run ended before any cell measured:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("no iperf3 in %s within %s; run output:\n%s", ns, within, out.String())
}

// kubeRun is a "tunbench run" started in the background in the cluster's
// control namespace; ip netns exec execs tunbench, so Process is the
// controller.
type kubeRun struct {
	*exec.Cmd
	out        *syncBuffer
	db, export string
	exited     chan struct{}
	err        error // how the run ended, set before exited is closed
}

// startKubeRun starts "tunbench run -f scen" with a database and export
// of its own.
func startKubeRun(t *testing.T, cl *kubetest.Cluster, bin, scen string) *kubeRun {
	t.Helper()
	dir := t.TempDir()
	r := &kubeRun{out: &syncBuffer{}, db: filepath.Join(dir, "r.db"), export: filepath.Join(dir, "e.json"), exited: make(chan struct{})}
	r.Cmd = exec.Command("ip", "netns", "exec", cl.Control, bin, "run", "-f", scen, "--db", r.db, "--export", r.export)
	r.Stdout, r.Stderr = r.out, r.out
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.Wait(); close(r.exited) }()
	return r
}

// waitMeasuring waits until a cell of the run measures in network
// namespace ns.
func (r *kubeRun) waitMeasuring(t *testing.T, ns string) {
	t.Helper()
	waitIperf3(t, ns, time.Minute, r.exited, r.out)
}

// syncBuffer is a bytes.Buffer safe for a command's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentPod returns the name of the run's agent pod on node.
func agentPod(t *testing.T, cl *kubetest.Cluster, node string) string {
	t.Helper()
	pods, err := cl.Client().CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{
		LabelSelector: kubehost.LabelRole + "=" + kubehost.RoleAgent, FieldSelector: "spec.nodeName=" + node})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("agent pod on %s: %v (%d pods)", node, err, len(pods.Items))
	}
	return pods.Items[0].Name
}

// TestKubernetesPodDeletedMidCell: the receiving node's agent pod is
// deleted while a cell measures. That cell fails naming the node, the
// next cells get a new pod (the node cleaned first) and are ok, and
// nothing of the run is left in the cluster or on the nodes.
func TestKubernetesPodDeletedMidCell(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, []string{"native"}, 3, "4s")
	run := startKubeRun(t, cl, bin, scen)
	receiver := cl.Nodes[1]
	run.waitMeasuring(t, receiver.Netns)
	grace := int64(0)
	pod := agentPod(t, cl, receiver.Name)
	if err := cl.Client().CoreV1().Pods("default").Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %s mid-cell", pod)
	<-run.exited
	cells := exportOf(t, run.export).Cells
	var failed, ok int
	for _, c := range cells {
		switch c.Status {
		case result.StatusOK:
			ok++
		default:
			failed++
			if !strings.Contains(c.Error, receiver.Name) {
				t.Errorf("failed cell %d: error names no node %s: %s", c.Repetition, receiver.Name, c.Error)
			}
		}
	}
	if failed != 1 || ok != 2 || len(cells) != 3 {
		t.Errorf("cells: %d ok, %d failed of %d; want the one cell that lost its pod failed and the other two ok", ok, failed, len(cells))
	}
	if t.Failed() {
		t.Logf("run output:\n%s", run.out.String())
	}
	noKubeLeftovers(t, cl, run.db)
}

// TestKubernetesClean: the controller is killed (SIGKILL) mid-run, which
// leaves the run's pods in the cluster; "tunbench clean --testbed
// kubernetes -f SCENARIO" finds the run by its label, sees its agents
// gone, cleans the nodes through its pods and deletes them.
func TestKubernetesClean(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, []string{"vxlan"}, 2, "4s")
	run := startKubeRun(t, cl, bin, scen)
	run.waitMeasuring(t, cl.Nodes[1].Netns)
	_ = run.Process.Kill()
	<-run.exited
	// The agents see their exec streams end and go (putting their nodes
	// back); until then clean rightly leaves the run alone as alive.
	waitAgentsGone(t, 30*time.Second, cl.Nodes[0].Netns, cl.Nodes[1].Netns)
	pods, err := cl.Client().CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: kubehost.LabelApp + "=" + kubehost.AppName})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the killed run left no pods to clean (%v): the test proves nothing", err)
	}
	cleaned, err := exec.Command("ip", "netns", "exec", cl.Control, bin, "clean", "--testbed", "kubernetes", "-f", scen).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench clean --testbed kubernetes: %v\n%s", err, cleaned)
	}
	if !strings.Contains(string(cleaned), "deleted pod default/") {
		t.Errorf("clean says nothing of the pods it deleted:\n%s", cleaned)
	}
	noKubeLeftovers(t, cl, run.db)
}

// TestKubernetesToolsImage: kubernetes.tools: image on the real cluster,
// the tools image (kubetest.WithToolsImage: busybox, iperf3,
// wireguard-go, ip, ping and their libraries) as the pods' image, and no
// binary given: native, vxlan, wireguard-go and pod-network (its pods
// entered with the image's nsenter) are ok with throughput. The tools
// came from the image: every cell's hosts record the image's
// OS (its /etc/os-release), not the node's, and tunbench was copied into
// the agent containers, not onto the nodes (the run's own kubernetes.dir
// is absent from the nodes' file system, which is this machine's).
func TestKubernetesToolsImage(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	begin := time.Now()
	cl := kubetest.Start(t, kubetest.WithToolsImage())
	t.Logf("cluster with the tools image up in %s", time.Since(begin).Round(time.Millisecond))
	methods := []string{"native", "vxlan", "wireguard-go", "pod-network"}
	dir := t.TempDir()
	nodeDir := "/var/tmp/tunbench-toolsimage-" + filepath.Base(dir)
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: kubernetes\nmethods: [%s]\nfamilies: [ipv4]\ncongestion_control: [cubic]\nrepetitions: 1\nduration: 2s\nomit: 0s\nlatency: 0s\ntests: [tcp_stream]\n", strings.Join(methods, ", "))
	fmt.Fprintf(&b, "kubernetes:\n  kubeconfig: %s\n  tools: image\n  image: %s\n  dir: %s\n  pairs: [[%s, %s]]\n  nodes:\n", cl.Kubeconfig, cl.ToolsImage, nodeDir, cl.Nodes[0].Name, cl.Nodes[1].Name)
	for _, n := range cl.Nodes {
		fmt.Fprintf(&b, "    - {name: %s}\n", n.Name)
	}
	scen := filepath.Join(dir, "kube.yaml")
	if err := os.WriteFile(scen, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	db, export := filepath.Join(dir, "r.db"), filepath.Join(dir, "e.json")
	start := time.Now()
	out, err := exec.Command("ip", "netns", "exec", cl.Control, bin, "run", "-f", scen, "--db", db, "--export", export).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run with tools: image: %v\n%s", err, out)
	}
	t.Logf("run of %d methods took %s", len(methods), time.Since(start).Round(time.Millisecond))
	doc := exportOf(t, export)
	got := map[string]result.Cell{}
	for _, c := range doc.Cells {
		got[c.Method] = c
	}
	for _, m := range methods {
		c, ok := got[m]
		switch {
		case !ok:
			t.Errorf("%s: no cell", m)
		case c.Status != result.StatusOK:
			t.Errorf("%s: %s: %s", m, c.Status, c.Error)
		case c.Throughput == nil || c.Throughput.BitsPerSecond <= 0:
			t.Errorf("%s: no throughput measured", m)
		}
		if len(c.Meta.Hosts) != 2 {
			t.Errorf("%s: %d hosts recorded, want 2", m, len(c.Meta.Hosts))
		}
		for _, h := range c.Meta.Hosts {
			if h.OSRelease != kubetest.ToolsImageOS {
				t.Errorf("%s: site %s recorded OS %q, not the tools image's %q: the agent ran on the node's file system", m, h.Site, h.OSRelease, kubetest.ToolsImageOS)
			}
			if h.Tools["iperf3"] == "" {
				t.Errorf("%s: site %s recorded no iperf3 version: %v", m, h.Site, h.Tools)
			}
		}
	}
	if _, err := os.Stat(nodeDir); !os.IsNotExist(err) {
		t.Errorf("tunbench was copied onto the nodes' file system (%s: %v), not into the agent containers", nodeDir, err)
		_ = os.RemoveAll(nodeDir)
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
	noKubeLeftovers(t, cl, db)
}

// kubeRunPods lists the pods of every tunbench run in the cluster.
func kubeRunPods(t *testing.T, cl *kubetest.Cluster) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := cl.Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kubehost.LabelApp + "=" + kubehost.AppName})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Namespace+"/"+p.Name+" on "+p.Spec.NodeName)
	}
	return names
}

// TestKubernetesNodeLost: node2's kubelet stops while the first cell
// measures (a node that disappears). Every cell of the run needs node2,
// so each fails naming it: the first once the Host sees the kubelet gone,
// the later ones at once (seconds), and the run goes on to its end and
// exits non-zero within a bound. Its pods on node2, which no kubelet
// confirms deleting, are deleted by force after the run says so; no pod
// of the run is left in the API, and node1 is clean. (node2's own
// leftovers wait for its kubelet; kubetest's teardown checks the machine.)
func TestKubernetesNodeLost(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, []string{"native"}, 3, "4s")
	run := startKubeRun(t, cl, bin, scen)
	lost := cl.Nodes[1]
	run.waitMeasuring(t, lost.Netns)
	if err := cl.StopKubelet(lost.Name); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Logf("stopped the kubelet of %s mid-cell", lost.Name)
	const bound = 2 * time.Minute
	select {
	case <-run.exited:
	case <-time.After(bound + 30*time.Second):
		_ = run.Process.Kill()
		<-run.exited
		t.Fatalf("the run did not end within %s of losing %s; output:\n%s", bound+30*time.Second, lost.Name, run.out.String())
	}
	took := time.Since(stopped)
	t.Logf("the run ended %s after the kubelet stopped", took.Round(time.Millisecond))
	if took > bound {
		t.Errorf("the run took %s after losing %s, want under %s", took.Round(time.Second), lost.Name, bound)
	}
	if run.err == nil {
		t.Errorf("the run exited 0 with every cell failed")
	}
	cells := exportOf(t, run.export).Cells
	if len(cells) != 3 {
		t.Errorf("%d cells recorded, want 3", len(cells))
	}
	for _, c := range cells {
		d := c.Finished.Sub(c.Started)
		t.Logf("cell %d: %s in %s: %s", c.Repetition, c.Status, d.Round(time.Millisecond), c.Error)
		if c.Status == result.StatusOK {
			t.Errorf("cell %d is ok though %s was lost", c.Repetition, lost.Name)
			continue
		}
		if !strings.Contains(c.Error, lost.Name) {
			t.Errorf("cell %d: error names no node %s: %s", c.Repetition, lost.Name, c.Error)
		}
		// The first cell ends once the loss is seen (a node check every
		// kubehost.Timings.NodeCheck); later ones must fail fast.
		if c.Started.Before(stopped) {
			if seen := c.Finished.Sub(stopped); seen > 45*time.Second {
				t.Errorf("cell %d ended %s after the kubelet stopped, want the loss seen within 45 s", c.Repetition, seen.Round(time.Millisecond))
			}
			continue
		}
		if limit := 15 * time.Second; d > limit {
			t.Errorf("cell %d took %s to fail on the lost node, want under %s", c.Repetition, d.Round(time.Millisecond), limit)
		}
	}
	for _, l := range strings.Split(run.out.String(), "\n") {
		if strings.Contains(l, "did not confirm") || strings.Contains(l, "not cleaned") {
			t.Logf("run says: %s", l)
		}
	}
	if !strings.Contains(run.out.String(), "did not confirm") {
		t.Errorf("the run does not say that %s did not confirm its pods' deletion", lost.Name)
	}
	for _, p := range kubeRunPods(t, cl) {
		t.Errorf("pod %s left in the API", p)
	}
	outN, _ := exec.Command("ip", "-n", cl.Nodes[0].Netns, "-o", "link").Output()
	for _, l := range strings.Split(string(outN), "\n") {
		if f := strings.Fields(l); len(f) > 1 && runDevice.MatchString(f[1]) {
			t.Errorf("node %s: device %s left", cl.Nodes[0].Name, f[1])
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", run.out.String())
	}
}

// TestKubernetesInterrupted: SIGINT to the controller (Ctrl-C) while a
// vxlan cell measures. The run ends, says it was interrupted, and leaves
// neither a pod in the cluster nor a device on a node, with no "tunbench
// clean" run.
func TestKubernetesInterrupted(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, []string{"vxlan"}, 2, "4s")
	run := startKubeRun(t, cl, bin, scen)
	run.waitMeasuring(t, cl.Nodes[1].Netns)
	if err := run.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case <-run.exited:
	case <-time.After(90 * time.Second):
		_ = run.Process.Kill()
		<-run.exited
		t.Fatalf("the run did not end within 90 s of SIGINT; output:\n%s", run.out.String())
	}
	t.Logf("the run ended %s after SIGINT", time.Since(sent).Round(time.Millisecond))
	if run.err == nil {
		t.Errorf("an interrupted run exited 0")
	}
	if !strings.Contains(run.out.String(), "interrupted") {
		t.Errorf("the run does not report the interruption")
	}
	if runs := storedRuns(t, run.db); len(runs) != 1 {
		t.Errorf("%d runs stored, want the interrupted one", len(runs))
	}
	noKubeLeftovers(t, cl, run.db)
	if t.Failed() {
		t.Logf("run output:\n%s", run.out.String())
	}
}

// TestKubernetesNoAccess: a user without any rights (bob) runs. The run
// is refused before anything is created, with an error listing what the
// user lacks, and no pod ever exists (a watch from before the run sees
// none added).
func TestKubernetesNoAccess(t *testing.T) {
	t.Parallel()
	oneCluster(t)
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, []string{"native"}, 1, "2s")
	data, err := os.ReadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	bob := cl.UserKubeconfig("bob")
	data = bytes.Replace(data, []byte("kubeconfig: "+cl.Kubeconfig), []byte("kubeconfig: "+bob), 1)
	if err := os.WriteFile(scen, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// From the watch cache's state ("0"): with etcd 3.4 (no progress
	// notifications) a watch from the newest version would wait for the
	// cache to reach it, which an idle cache never does.
	w, err := cl.Client().CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: kubehost.LabelApp + "=" + kubehost.AppName, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	dir := t.TempDir()
	start := time.Now()
	out, err := exec.Command("ip", "netns", "exec", cl.Control, bin, "run", "-f", scen, "--db", filepath.Join(dir, "r.db")).CombinedOutput()
	t.Logf("refused in %s", time.Since(start).Round(time.Millisecond))
	if err == nil {
		t.Fatalf("a user without rights ran:\n%s", out)
	}
	for _, want := range []string{"lacks permissions", "create pods", "create pods/exec", "get pods/exec", "get nodes", "delete pods", "get pods/log", "kind: Role", "kind: ClusterRole"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not name %q", want)
		}
	}
	for _, p := range kubeRunPods(t, cl) {
		t.Errorf("pod %s exists after the refusal", p)
	}
	// Every event the watch saw: none may be a pod of the run.
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of the cluster's pods ended")
			}
			if ev.Type == watch.Error {
				t.Fatalf("the watch of the cluster's pods failed: %v", ev.Object)
			}
			p, _ := ev.Object.(*corev1.Pod)
			t.Errorf("the refused run touched a pod: %s %s", ev.Type, p.GetName())
			continue
		case <-time.After(2 * time.Second):
		}
		break
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
}

// TestKubernetesCleanGonePod: mid-cell, node2's agent and the controller
// are killed (SIGKILL: neither cleans) and node2's agent pod is deleted
// by force, which leaves the run's devices on node2 and no pod of the run
// there (as after a forced deletion while node2's kubelet was away).
// "tunbench clean --testbed kubernetes -f SCENARIO --run ID" makes a pod
// of the run on node2 for the cleaning, cleans it, and deletes every pod.
func TestKubernetesCleanGonePod(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	bin := tunbenchBinary(t)
	cl := kubetest.Start(t)
	scen := kubeScenario(t, cl, bin, []string{"vxlan"}, 2, "4s")
	run := startKubeRun(t, cl, bin, scen)
	node2 := cl.Nodes[1]
	run.waitMeasuring(t, node2.Netns)
	pod := agentPod(t, cl, node2.Name)
	pods, err := cl.Client().CoreV1().Pods("default").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runID := pods.Labels[kubehost.LabelRun]
	// The serving agent dies first: killed after its session process,
	// it can see its input end and put node2 back in between.
	killAgents(node2.Netns)
	_ = run.Process.Kill()
	<-run.exited
	grace := int64(0)
	if err := cl.Client().CoreV1().Pods("default").Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	if devs := runDevices(node2.Netns); len(devs) == 0 {
		t.Fatalf("node2 holds no device of the run: the test proves nothing; run output:\n%s", run.out.String())
	} else {
		t.Logf("left on node2: %v", devs)
	}
	start := time.Now()
	cleaned, err := exec.Command("ip", "netns", "exec", cl.Control, bin, "clean", "--testbed", "kubernetes", "-f", scen, "--run", runID).CombinedOutput()
	t.Logf("clean took %s:\n%s", time.Since(start).Round(time.Millisecond), cleaned)
	if err != nil {
		t.Errorf("tunbench clean --testbed kubernetes --run %s: %v", runID, err)
	}
	if !strings.Contains(string(cleaned), "node2: ") || !strings.Contains(string(cleaned), "deleted pod default/") {
		t.Errorf("clean says nothing of node2 or of the pods it deleted")
	}
	noKubeLeftovers(t, cl, run.db)
}

// runDevices lists the run devices in network namespace ns.
func runDevices(ns string) []string {
	var devs []string
	out, _ := exec.Command("ip", "-n", ns, "-o", "link").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 && runDevice.MatchString(f[1]) {
			devs = append(devs, strings.TrimSuffix(f[1], ":"))
		}
	}
	return devs
}
