package methodtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// RequireTunnelKernel skips t, with the reason, when the running kernel lacks an
// option m requires. Options built as modules are loaded now, before the
// test's namespaces exist: loading ip_gre, ipip, ip6_tunnel or ip6_gre
// creates fallback devices (gre0, tunl0, ip6tnl0...) in every existing
// namespace, which would otherwise look like links the method left behind.
// In the kernel lab a missing module fails the test instead.
func RequireTunnelKernel(t *testing.T, m method.Method) {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	cfg, cfgErr := hostinfo.LoadKernelConfig()
	for _, r := range m.Requirements() {
		if r.Kernel == "" {
			continue
		}
		if cfgErr == nil {
			switch cfg[r.Kernel] {
			case "y":
				continue
			case "m":
			default:
				if InLab() {
					t.Fatalf("the lab kernel lacks %s", r.Kernel)
				}
				t.Skipf("kernel lacks %s; runs in the kernel lab", r.Kernel)
			}
		}
		mod := r.Module
		if mod == "" {
			continue // never a module (CONFIG_BPF_SYSCALL)
		}
		if out, err := exec.Command("modprobe", mod).CombinedOutput(); err != nil {
			if InLab() {
				t.Fatalf("modprobe %s (%s): %v: %s", mod, r.Kernel, err, out)
			}
			t.Skipf("kernel lacks %s (modprobe %s: %v); runs in the kernel lab", r.Kernel, mod, err)
		}
	}
}

// TunnelWire is what every a-to-b tunnel frame on the underlay must look like.
type TunnelWire struct {
	// underlay is the outer family and proto the outer protocol.
	Underlay string
	Proto    uint8
	// check returns what is wrong with one frame, or "".
	Check func(f wire.Frame) string
}

// LabTunnel runs m for real: set up, ping, one full-size ping with DF,
// one second of iperf3, tear down. It captures a's underlay while the
// pings and the iperf3 run and checks every tunnel frame against want.
// The full-size ping proves the overhead arithmetic: its outer packet must
// be exactly the underlay MTU, unfragmented. It returns the testbed and
// the env, still set up (t's cleanup tears down), for the caller's own
// checks.
func LabTunnel(t *testing.T, m method.Method, family string, opts map[string]string, want TunnelWire) (*localns.Local, *method.Env) {
	t.Helper()
	RequireTunnelKernel(t, m)
	l, env, path := Setup(t, m, family, 1500, opts)
	if path.OverlayMTU != 0 {
		// The method gives the traffic another MTU (its options change
		// the overhead): that one must hold.
		env.OverlayMTU = path.OverlayMTU
	}
	DeviceMTU(t, l, path, env.OverlayMTU)

	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	Ping(t, l, path)
	PingFullSize(t, l, env, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	saveTunnelPcap(t, m, family, pkts)
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	tunnel := checkTunnelFrames(t, l, frames, want)
	var echo []wire.Frame
	for _, f := range tunnel {
		if f.Inner != nil && f.Inner.Src == path.A && f.Inner.Dst == path.B && isEchoInner(f.Inner) {
			echo = append(echo, f)
		}
	}
	if len(echo) < 3 {
		t.Fatalf("%d echo requests %s > %s in %s frames, want 3; frames:\n%s", len(echo), path.A, path.B, m.Name(), frameLines(frames))
	}
	if largest := maxTunnelIPLen(echo); largest != env.UnderlayMTU {
		t.Errorf("largest echo request is %d bytes on the underlay, want exactly the underlay MTU %d (overhead %d)",
			largest, env.UnderlayMTU, env.UnderlayMTU-env.OverlayMTU)
	}

	c, err = wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	out := Iperf3(t, l, path, 1)
	pkts, err = c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	frames, err = wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(checkTunnelFrames(t, l, frames, want)); n == 0 {
		t.Errorf("no %s frames captured under iperf3; frames:\n%s", m.Name(), frameLines(frames[:min(len(frames), 20)]))
	}
	t.Logf("%s: %s (%d frames captured)", t.Name(), fmt.Sprintf("%.2f Gbit/s", Gbps(t, out)), len(frames))
	return l, env
}

// checkTunnelFrames checks every a-to-b frame of want.Proto between the underlay
// addresses and returns them. Their inner family is not checked: besides
// the measured traffic, tunnel devices carry the kernel's own IPv6
// link-local traffic (MLD, router and neighbour solicitations).
func checkTunnelFrames(t *testing.T, l *localns.Local, frames []wire.Frame, want TunnelWire) []wire.Frame {
	t.Helper()
	ua, ub := l.A.Addr(want.Underlay), l.B.Addr(want.Underlay)
	var tunnel []wire.Frame
	for _, f := range frames {
		if f.Fragment {
			t.Errorf("fragmented underlay frame %s", f)
		}
		if f.Family != want.Underlay || f.Src != ua || f.Dst != ub || f.Proto != want.Proto {
			continue
		}
		tunnel = append(tunnel, f)
		if problem := want.Check(f); problem != "" {
			t.Errorf("frame %s: %s", f, problem)
		}
	}
	return tunnel
}

func isEchoInner(in *wire.Inner) bool {
	return in.Proto == wire.ProtoICMP || in.Proto == wire.ProtoICMPv6
}

// maxTunnelIPLen is the largest outer IP packet of frames: the length its
// header states or, when larger, the frame's length on the wire less the
// Ethernet header. The receiving side of a FOU or GUE tunnel rewrites the
// outer length field in place as it pulls the UDP header
// (fou_recv_pull), in the buffer a capture on a veth pair shares with
// the receiver, so the captured header can read short by the
// encapsulation; the wire length cannot.
func maxTunnelIPLen(frames []wire.Frame) int {
	n := 0
	for _, f := range frames {
		n = max(n, f.IPLen, f.WireLen-14)
	}
	return n
}

func frameLines(frames []wire.Frame) string {
	var b strings.Builder
	for _, f := range frames {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// saveTunnelPcap writes the capture to $TUNBENCH_WIRE_SAVE/<method>-<subtest>.pcap
// when that is set (kernel-lab runs use it to produce the real frames in
// internal/wire/testdata).
func saveTunnelPcap(t *testing.T, m method.Method, family string, pkts []gopacket.Packet) {
	t.Helper()
	dir := os.Getenv("TUNBENCH_WIRE_SAVE")
	if dir == "" {
		return
	}
	name := family
	if _, sub, ok := strings.Cut(t.Name(), "/"); ok {
		name = sub
	}
	if err := wire.WriteFile(filepath.Join(dir, m.Name()+"-"+name+".pcap"), pkts); err != nil {
		t.Error(err)
	}
}

// L3Protocols are the GRE protocol types of a layer-3 GRE tunnel: besides the
// measured family it carries the kernel's IPv6 link-local traffic.
var L3Protocols = []uint16{wire.EtherTypeIPv4, wire.EtherTypeIPv6}

// CheckGRE checks a GRE header: key (0 for none), payload protocol (one of
// protocols), and no IPv6 extension header (no encapsulation limit option)
// in front of it.
func CheckGRE(key uint32, protocols ...uint16) func(wire.Frame) string {
	return func(f wire.Frame) string {
		g := f.GRE
		switch {
		case g == nil:
			return "want a GRE header"
		case g.ChecksumPresent || g.SeqPresent:
			return "want no GRE checksum or sequence number"
		case key == 0 && g.KeyPresent:
			return "want no GRE key"
		case key != 0 && (!g.KeyPresent || g.Key != key):
			return fmt.Sprintf("want GRE key %d", key)
		case !slices.Contains(protocols, g.Protocol):
			return fmt.Sprintf("GRE protocol %#04x, want one of %#04x", g.Protocol, protocols)
		case len(f.Ext) > 0:
			return fmt.Sprintf("IPv6 extension headers %v, want none (encaplimit none)", f.Ext)
		case f.Inner == nil || f.Inner.Ethernet != (g.Protocol == wire.EtherTypeTEB):
			return "inner packet missing or of the wrong layer"
		}
		return ""
	}
}
