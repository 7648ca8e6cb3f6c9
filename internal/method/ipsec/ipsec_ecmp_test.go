package ipsec_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
	"golang.org/x/sys/unix"
)

// ipsecECMPStreams is the number of TCP flows the ECMP tests send: with 16
// flows hashed onto 2 tunnels, all landing on one happens with p = 2^-15.
const ipsecECMPStreams = 16

// TestIPsecECMPLibipsec runs N kernel-libipsec tunnels (a charon pair and
// TUN devices per tunnel) behind an ECMP route and checks that several
// flows use more than one tunnel: by the SAs' byte counters and by the
// UDP ports on the wire (tunnel i uses 4500+i).
func TestIPsecECMPLibipsec(t *testing.T) {
	ipsecRequireSwan(t)
	for _, tt := range []struct {
		family  string
		tunnels int
	}{
		{method.IPv4, 2},
		{method.IPv6, 2},
		{method.IPv4, 3},
	} {
		t.Run(tt.family+"-"+strconv.Itoa(tt.tunnels), func(t *testing.T) {
			opts := map[string]string{"tunnels": strconv.Itoa(tt.tunnels), "datapath": "libipsec"}
			m := ipsec.NewIPsecECMP()
			l, env, path := methodtest.Setup(t, m, tt.family, 1500, opts)
			if !strings.HasPrefix(path.Variant, "kernel-libipsec") || len(path.Daemons) != 2*tt.tunnels {
				t.Fatalf("variant %q, daemons %v: want kernel-libipsec and a charon per tunnel and side", path.Variant, path.Daemons)
			}
			if n := len(path.Devices["a"]); n != tt.tunnels+1 {
				t.Errorf("devices of a %v, want %d TUN devices and the underlay", path.Devices["a"], tt.tunnels)
			}
			mtu := min(env.OverlayMTU, ipsec.LibipsecMaxMTU)
			methodtest.DeviceMTU(t, l, path, mtu)
			methodtest.Ping(t, l, path)
			ipsecPingSize(t, l.A, path, mtu)
			var bps float64
			frames := ipsecCapture(t, l.A, func() { bps = methodtest.Gbps(t, methodtest.Iperf3Streams(t, l, path, 2, ipsecECMPStreams)) * 1e9 })

			// Per tunnel: packets side a sent into it and received from it.
			var out, in []uint64
			for i := 0; i < tt.tunnels; i++ {
				children, err := ipsec.IPsecSAs(context.Background(), l.A, filepath.Join(env.Dir, "ipsec-ecmp-a", "t"+strconv.Itoa(i)))
				if err != nil {
					t.Fatal(err)
				}
				if len(children) != 1 {
					t.Fatalf("tunnel %d: CHILD_SAs %+v, want one", i, children)
				}
				out = append(out, children[0].PacketsOut)
				in = append(in, children[0].PacketsIn)
			}
			// Per direction and UDP port on the wire: ESP frames.
			ports := map[string]map[uint16]int{"a->b": {}, "b->a": {}}
			for _, f := range frames {
				if f.Proto != wire.ProtoUDP || f.SrcPort != f.DstPort || len(f.Payload) < 8 {
					continue
				}
				if binary.BigEndian.Uint32(f.Payload) == 0 { // non-ESP marker: IKE
					continue
				}
				if f.SrcPort < 4500 || int(f.SrcPort) >= 4500+tt.tunnels {
					t.Errorf("ESP in UDP on port %d, want 4500..%d", f.SrcPort, 4500+tt.tunnels-1)
				}
				dir := "b->a"
				if f.Src == l.A.Addr(tt.family) {
					dir = "a->b"
				}
				ports[dir][f.SrcPort]++
			}
			t.Logf("%s, %d tunnels: %d flows %.2f Gbit/s; packets per tunnel a->b %v, b->a %v; ESP frames per UDP port %v",
				tt.family, tt.tunnels, ipsecECMPStreams, bps/1e9, out, in, ports)
			ipsecCheckSpread(t, tt.family, out, in)
			if len(ports["a->b"]) < 2 && len(ports["b->a"]) < 2 {
				t.Errorf("ESP on one UDP port per direction on the wire (%v), want several", ports)
			}

			// Teardown (methodtest's cleanup runs it twice more) leaves no
			// charon, nexthop, hash policy change or run directory.
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Fatalf("Teardown: %v", err)
			}
			for _, d := range path.Daemons {
				if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", d.PID)); err == nil && strings.TrimSpace(string(comm)) == "charon" {
					t.Errorf("charon %d of side %s still runs", d.PID, d.Side)
				}
			}
			for _, ep := range l.Endpoints() {
				ipsecCheckClean(t, ep)
				nh, err := ep.Run(context.Background(), "ip", "nexthop", "show")
				if err != nil || len(strings.TrimSpace(string(nh))) != 0 {
					t.Errorf("%s: nexthops left: %v %s", ep.Side, err, nh)
				}
				for _, f := range []string{"/proc/sys/net/ipv4/fib_multipath_hash_policy", "/proc/sys/net/ipv6/fib_multipath_hash_policy"} {
					var v []byte
					if err := ep.Do(func() (err error) { v, err = os.ReadFile(f); return err }); err != nil {
						t.Fatal(err)
					}
					if strings.TrimSpace(string(v)) != "0" {
						t.Errorf("%s: %s = %s after teardown, want 0 as before", ep.Side, f, v)
					}
				}
				if _, err := os.Stat(filepath.Join(env.Dir, "ipsec-ecmp-"+ep.Side)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("run directory of side %s left: %v", ep.Side, err)
				}
			}
		})
	}
}

// ipsecCheckSpread checks that the ECMP route spread the flows: more than one
// tunnel carried more than 100 packets. For IPv4 that must hold from a
// (where the flows start). For IPv6 one direction suffices: kernels before
// 6.18 (the lab's 6.1 and 6.12 measured) choose the route of a locally
// originated IPv6 TCP connection in connect() before its source port is
// known, so every flow from a hashes alike and takes one tunnel; the
// accepted sockets of b know all four ports, so the replies spread.
func ipsecCheckSpread(t *testing.T, family string, out, in []uint64) {
	t.Helper()
	used := func(pkts []uint64) int {
		n := 0
		for _, p := range pkts {
			if p > 100 {
				n++
			}
		}
		return n
	}
	switch {
	case used(out) >= 2:
	case family == method.IPv6 && used(in) >= 2:
		var uts unix.Utsname
		_ = unix.Uname(&uts)
		t.Logf("kernel %s: IPv6 flows from a all took one tunnel (route chosen before the source port); b's replies spread over %d", unix.ByteSliceToString(uts.Release[:]), used(in))
	default:
		t.Errorf("packets per tunnel a->b %v, b->a %v: ECMP did not spread the flows over more than one tunnel", out, in)
	}
}

// TestLabIPsecECMPXfrm runs N CHILD_SAs on xfrm interfaces behind an ECMP
// route (kernel lab: needs ESP and CONFIG_XFRM_INTERFACE) and checks that
// several flows use more than one SA.
func TestLabIPsecECMPXfrm(t *testing.T) {
	ipsecRequireSwan(t)
	ipsecRequireESP(t)
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			l, env, path := methodtest.Setup(t, ipsec.NewIPsecECMP(), family, 1500, nil)
			if !strings.HasPrefix(path.Variant, "kernel xfrm") || len(path.Daemons) != 2 {
				t.Fatalf("variant %q, daemons %v: want kernel xfrm and a charon per side", path.Variant, path.Daemons)
			}
			methodtest.DeviceMTU(t, l, path, env.OverlayMTU)
			methodtest.Ping(t, l, path)
			ipsecPingSize(t, l.A, path, env.OverlayMTU)
			var bps float64
			frames := ipsecCapture(t, l.A, func() { bps = methodtest.Gbps(t, methodtest.Iperf3Streams(t, l, path, 2, ipsecECMPStreams)) * 1e9 })
			children, err := ipsec.IPsecSAs(context.Background(), l.A, filepath.Join(env.Dir, "ipsec-ecmp-a"))
			if err != nil {
				t.Fatal(err)
			}
			if len(children) != 2 {
				t.Fatalf("CHILD_SAs %+v, want 2", children)
			}
			var out, in []uint64
			for _, c := range children {
				out = append(out, c.PacketsOut)
				in = append(in, c.PacketsIn)
			}
			spis := map[string]map[uint32]int{"a->b": {}, "b->a": {}}
			for _, f := range frames {
				if f.Encap != wire.EncapESP {
					continue
				}
				dir := "b->a"
				if f.Src == l.A.Addr(family) {
					dir = "a->b"
				}
				spis[dir][f.ESP.SPI]++
			}
			t.Logf("%s: %d flows %.1f Mbit/s (emulated); packets per CHILD_SA a->b %v, b->a %v; ESP frames per SPI %v", family, ipsecECMPStreams, bps/1e6, out, in, spis)
			ipsecCheckSpread(t, family, out, in)
			if len(spis["a->b"]) < 2 && len(spis["b->a"]) < 2 {
				t.Errorf("one SPI per direction on the wire (%v), want several", spis)
			}
		})
	}
}
