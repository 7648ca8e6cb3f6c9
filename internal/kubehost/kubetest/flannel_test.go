package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tunbench/tunbench/internal/method/podnet"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// flannelVXLANPort is the UDP port of Flannel's VXLAN device (the Linux
// default, not IANA's 4789).
const flannelVXLANPort = 8472

func init() {
	wire.RegisterUDP(flannelVXLANPort, func(f *wire.Frame) error {
		f.Encap = wire.EncapVXLAN
		var vx layers.VXLAN
		if err := vx.DecodeFromBytes(f.Payload, gopacket.NilDecodeFeedback); err != nil {
			return fmt.Errorf("vxlan: %w", err)
		}
		f.VNI = vx.VNI
		return wire.DecodeInner(f, wire.EtherTypeTEB, vx.Payload)
	})
}

func TestCNIChoice(t *testing.T) {
	for _, c := range []struct {
		cni, backend, err string
	}{
		{"", "", ""},
		{CNIBridge, "", ""},
		{CNIFlannel, "vxlan", ""},
		{CNIFlannel, "host-gw", ""},
		{CNIFlannel, "wireguard", ""},
		{CNIBridge, "vxlan", "CNI bridge takes no backend"},
		{CNIFlannel, "", `Flannel backend "": want one of vxlan, host-gw, wireguard`},
		{CNIFlannel, "udp", `Flannel backend "udp"`},
		{"calico", "", `CNI "calico": want bridge or flannel`},
	} {
		err := checkCNI(c.cni, c.backend)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("checkCNI(%q, %q) = %v, want %q", c.cni, c.backend, err, c.err)
		}
	}
}

// TestClusterFlannel: a two-node cluster with Flannel's vxlan backend
// (flanneld with the kube subnet manager, node CIDRs from the controller
// manager): each node has Flannel's lease file and its VXLAN device,
// pods on the two nodes reach each other, the traffic between the nodes
// is VXLAN on Flannel's port carrying the pods' packets, and nothing of
// the cluster (Flannel's devices, routes and rules are in the nodes'
// namespaces) is left after teardown.
func TestClusterFlannel(t *testing.T) {
	var c *Cluster
	hostLinks := flannelLinks(t, "")
	t.Cleanup(func() { // registered first, so it runs after the cluster's own cleanup
		if c == nil {
			return
		}
		if left := Leftovers(c.id); len(left) > 0 {
			t.Errorf("left behind after cleanup: %v", left)
		}
		if after := flannelLinks(t, ""); !slices.Equal(after, hostLinks) {
			t.Errorf("the machine's Flannel-named links were %v before the cluster, %v after", hostLinks, after)
		}
	})
	begin := time.Now()
	c = Start(t, WithCNI(CNIFlannel, "vxlan"))
	t.Logf("cluster with flannel vxlan up in %v", time.Since(begin).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client()

	for _, n := range c.Nodes {
		if !FlannelNetwork.Contains(n.PodCIDR.Addr()) || n.PodCIDR.Bits() != 24 {
			t.Errorf("%s: pod CIDR %s, want a /24 of %s", n.Name, n.PodCIDR, FlannelNetwork)
		}
		env, err := c.OnNode(ctx, n.Name, "cat", FlannelSubnetFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"FLANNEL_NETWORK=" + FlannelNetwork.String(), "FLANNEL_SUBNET=" + n.PodCIDR.Addr().Next().String() + "/24", "FLANNEL_MTU=1450"} {
			if !strings.Contains(string(env), want+"\n") {
				t.Errorf("%s: %s lacks %s:\n%s", n.Name, FlannelSubnetFile, want, env)
			}
		}
		out, err := c.OnNode(ctx, n.Name, "ip", "-d", "-j", "link", "show", "flannel.1")
		if err != nil {
			t.Fatal(err)
		}
		var links []struct {
			MTU      int `json:"mtu"`
			LinkInfo struct {
				Kind string `json:"info_kind"`
				Data struct {
					ID   int `json:"id"`
					Port int `json:"port"`
				} `json:"info_data"`
			} `json:"linkinfo"`
		}
		if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
			t.Fatalf("%s: ip -d -j link show flannel.1: %v: %s", n.Name, err, out)
		}
		l := links[0]
		if l.LinkInfo.Kind != "vxlan" || l.LinkInfo.Data.ID != 1 || l.LinkInfo.Data.Port != flannelVXLANPort || l.MTU != 1450 {
			t.Errorf("%s: flannel.1 is %+v, want vxlan id 1 port %d mtu 1450", n.Name, l, flannelVXLANPort)
		}
	}

	// What pod-network reads on a Flannel node names the backend, the
	// device, the MTU and the encryption. TUNBENCH_FLANNEL_SAVE=DIR saves
	// the script's output (podnet's testdata comes from here).
	out, err := c.OnNode(ctx, "node1", "sh", "-c", podnet.FlannelScript)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("TUNBENCH_FLANNEL_SAVE"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "flannel-vxlan.txt"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fl, ok, err := podnet.ParseFlannel(string(out))
	if err != nil || !ok {
		t.Fatalf("podnet.ParseFlannel: ok %v, %v:\n%s", ok, err, out)
	}
	if fl.Label() != "flannel vxlan" || fl.Device != "flannel.1" || fl.MTU != 1450 || fl.Encryption != "none" || fl.Port != flannelVXLANPort {
		t.Errorf("pod-network reads %s on node1, want flannel vxlan, device flannel.1 port %d, MTU 1450, no encryption", fl, flannelVXLANPort)
	}
	t.Logf("pod-network reads on node1: %s", fl)

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if bt := n.Annotations["flannel.alpha.coreos.com/backend-type"]; bt != "vxlan" {
			t.Errorf("node %s: Flannel's backend-type annotation %q, want vxlan", n.Name, bt)
		}
	}

	pods := []*corev1.Pod{busyboxPod(c, "bb-node1", "node1"), busyboxPod(c, "bb-node2", "node2")}
	running := runPods(ctx, t, c, pods)
	src, dst := running["bb-node1"].Status.PodIP, running["bb-node2"].Status.PodIP
	if !c.Nodes[1].PodCIDR.Contains(mustAddr(t, dst)) {
		t.Errorf("pod on node2 has IP %s outside node2's pod CIDR %s", dst, c.Nodes[1].PodCIDR)
	}

	// Capture on node1's underlay while its pod pings node2's.
	h, err := netns.GetFromName(c.Nodes[0].Netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	capture, err := wire.Start(&testbed.Endpoint{Side: "node1", Namespace: c.Nodes[0].Netns, NS: h}, c.Nodes[0].Dev)
	if err != nil {
		t.Fatal(err)
	}
	pout, stderr, err := execIn(ctx, c.RestConfig(), cs, "default", "bb-node1", "ping", "-c", "3", "-W", "2", dst)
	pkts, cerr := capture.Stop()
	if err != nil {
		t.Fatalf("ping %s from node1's pod: %v: %s%s", dst, err, pout, stderr)
	}
	if !strings.Contains(pout, "3 packets received") {
		t.Errorf("ping %s from node1's pod:\n%s", dst, pout)
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	vx := wire.Filter(frames, func(f wire.Frame) bool {
		return f.Encap == wire.EncapVXLAN && f.Inner != nil && f.Inner.Src.String() == src && f.Inner.Dst.String() == dst
	})
	if len(vx) < 3 {
		var all []string
		for _, f := range frames {
			all = append(all, f.String())
		}
		t.Fatalf("%d VXLAN frames carrying %s > %s on node1's %s, want the 3 pings; captured:\n%s", len(vx), src, dst, c.Nodes[0].Dev, strings.Join(all, "\n"))
	}
	f := vx[0]
	if f.Src != c.Nodes[0].IP.Addr() || f.Dst != c.Nodes[1].IP.Addr() || f.DstPort != flannelVXLANPort || f.VNI != 1 {
		t.Errorf("pod traffic on the wire: %s, want VXLAN VNI 1 from %s to %s:%d", f, c.Nodes[0].IP.Addr(), c.Nodes[1].IP.Addr(), flannelVXLANPort)
	}
	t.Logf("on the wire: %s", f)
}

// flannelLinks lists the links of namespace ns ("" the machine's own)
// whose names are Flannel's or its CNI bridge's.
func flannelLinks(t *testing.T, ns string) []string {
	t.Helper()
	args := []string{"-br", "link"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (strings.HasPrefix(f[0], "flannel") || f[0] == "cni0") {
			names = append(names, f[0])
		}
	}
	return names
}

// busyboxPod is an ordinary pod on node that sleeps.
func busyboxPod(c *Cluster, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "bb", Image: c.Image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
			}},
		},
	}
}

// runPods creates pods and waits until they run.
func runPods(ctx context.Context, t *testing.T, c *Cluster, pods []*corev1.Pod) map[string]*corev1.Pod {
	t.Helper()
	cs := c.Client()
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	running, last := map[string]*corev1.Pod{}, map[string]*corev1.Pod{}
	deadline := time.Now().Add(time.Minute)
	for len(running) < len(pods) {
		for _, p := range pods {
			if running[p.Name] != nil {
				continue
			}
			got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase == corev1.PodRunning {
				running[p.Name] = got
			}
			last[p.Name] = got
		}
		if time.Now().After(deadline) {
			var why []string
			for name, p := range last {
				if running[name] == nil {
					why = append(why, fmt.Sprintf("%s: %s %v", name, p.Status.Phase, p.Status.Conditions))
				}
			}
			for _, n := range c.nodes {
				why = append(why, n.Name+" kubelet: "+n.kubelet.tail())
			}
			t.Fatalf("pods not Running after a minute:\n%s", strings.Join(why, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return running
}

// TestClusterFlannelHostGW: with Flannel's host-gw backend each node
// routes the other's pod CIDR to it over the underlay (no overlay
// device), pods on the two nodes reach each other, and pod-network reads
// "flannel host-gw" with no device and no encryption.
func TestClusterFlannelHostGW(t *testing.T) {
	c := Start(t, WithCNI(CNIFlannel, "host-gw"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, n := range c.Nodes {
		other := c.Nodes[1-i]
		out, err := c.OnNode(ctx, n.Name, "ip", "route", "show", other.PodCIDR.String())
		if err != nil {
			t.Fatal(err)
		}
		if want := other.PodCIDR.String() + " via " + other.IP.Addr().String() + " dev " + n.Dev; !strings.Contains(string(out), want) {
			t.Errorf("%s: route to %s is %q, want %q", n.Name, other.PodCIDR, strings.TrimSpace(string(out)), want)
		}
		if links := flannelLinks(t, n.Netns); slices.Contains(links, "flannel.1") {
			t.Errorf("%s has flannel.1 with backend host-gw: %v", n.Name, links)
		}
	}
	out, err := c.OnNode(ctx, "node1", "sh", "-c", podnet.FlannelScript)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("TUNBENCH_FLANNEL_SAVE"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "flannel-host-gw.txt"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fl, ok, err := podnet.ParseFlannel(string(out))
	if err != nil || !ok || fl.Label() != "flannel host-gw" || fl.Device != "" || fl.Encryption != "none" || fl.MTU != 1500 {
		t.Errorf("pod-network reads %s (ok %v, %v) on node1, want flannel host-gw, no device, pod MTU 1500, no encryption", fl, ok, err)
	}
	running := runPods(ctx, t, c, []*corev1.Pod{busyboxPod(c, "bb-node1", "node1"), busyboxPod(c, "bb-node2", "node2")})
	dst := running["bb-node2"].Status.PodIP
	pout, stderr, err := execIn(ctx, c.RestConfig(), c.Client(), "default", "bb-node1", "ping", "-c", "3", "-W", "2", dst)
	if err != nil || !strings.Contains(pout, "3 packets received") {
		t.Fatalf("ping %s from node1's pod: %v: %s%s", dst, err, pout, stderr)
	}
}
