package ebpftun_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BenchmarkEBPFScale carries one TCP stream over ebpf-geneve (IPv6) with
// 1, 100, 10,000 and 1,000,000 rules in the LPM map, in one testbed: the
// filler rules (method option rules: host prefixes spread around the
// peer's address, so its lookup walks a trie as deep as that many rules
// make) are added and removed live between measurements, ascending then
// descending, so drift hits every count alike. It reports the median
// Gbit/s of each count and its ratio to 1 rule (target: within 5%), the
// egress program's own run time per packet on that traffic (the kernel's
// BPF statistics, enabled for the benchmark) and its difference from 1
// rule, and how long installing the rules took per 100,000 (target: 1 s
// or less). Run it with -benchtime 1x (see docs/performance.md).
func BenchmarkEBPFScale(b *testing.B) {
	requireEBPF(b)
	counts := []int{1, 100, 10_000, 1_000_000}
	rounds, seconds := 4, 4
	runTime, err := cebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Skipf("cannot enable BPF run-time statistics: %v", err)
	}
	defer runTime.Close()
	for range b.N {
		l, env, path := methodtest.Setup(b, ebpftun.EBPFGeneve, method.IPv6, 1500, nil)
		p, err := ebpf.OpenPinned(filepath.Join(ebpf.PinRoot, env.Prefix+"-a"))
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		egress := attachedEgress(b, l.A, env.A.Dev)
		like := ebpf.Rule{Encap: ebpf.Geneve, VNI: 42, Local: l.A.Addr6.Addr(), Remote: l.B.Addr6.Addr()}
		fillers := ebpftun.FillerRules(method.IPv6, counts[len(counts)-1]-1, like)
		have := 1
		var installed time.Duration
		var added int
		gbps, progNS := map[int][]float64{}, map[int][]float64{}
		for round := range rounds {
			order := slices.Clone(counts)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, n := range order {
				if n > have {
					start := time.Now()
					if err := p.PutRules(fillers[have-1 : n-1]); err != nil {
						b.Fatal(err)
					}
					installed += time.Since(start)
					added += n - have
				} else {
					for _, r := range fillers[n-1 : have-1] {
						if err := p.DeleteRule(r.Dst); err != nil {
							b.Fatal(err)
						}
					}
				}
				have = n
				before := progStats(b, egress)
				g := methodtest.Gbps(b, methodtest.Iperf3(b, l, path, seconds))
				after := progStats(b, egress)
				ns := float64(after.Runtime-before.Runtime) / float64(after.RunCount-before.RunCount)
				gbps[n] = append(gbps[n], g)
				progNS[n] = append(progNS[n], ns)
				b.Logf("round %d, %d rules: %.2f Gbit/s, egress program %.0f ns per packet", round+1, n, g, ns)
			}
		}
		base, baseNS := stats.Median(gbps[1]), stats.Median(progNS[1])
		for _, n := range counts {
			b.ReportMetric(stats.Median(gbps[n]), fmt.Sprintf("Gbps-%d-rules", n))
			b.ReportMetric(stats.Median(progNS[n]), fmt.Sprintf("egress-ns-%d-rules", n))
			if n > 1 {
				b.ReportMetric(stats.Median(gbps[n])/base, fmt.Sprintf("ratio-%d-rules", n))
				b.ReportMetric(stats.Median(progNS[n])-baseNS, fmt.Sprintf("extra-ns-%d-rules", n))
			}
		}
		b.ReportMetric(float64(installed.Milliseconds())*100_000/float64(added), "ms/100k-rules")
	}
}

// attachedEgress returns the tc egress program attached to dev on ep.
func attachedEgress(b *testing.B, ep *testbed.Endpoint, dev string) *cebpf.Program {
	b.Helper()
	h, ok := ep.NL.(*netlink.Handle)
	if !ok {
		b.Fatalf("%s: not a local endpoint", ep.Side)
	}
	link, err := h.LinkByName(dev)
	if err != nil {
		b.Fatal(err)
	}
	filters, err := h.FilterList(link, netlink.HANDLE_MIN_EGRESS)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range filters {
		if bf, ok := f.(*netlink.BpfFilter); ok {
			prog, err := cebpf.NewProgramFromID(cebpf.ProgramID(bf.Id))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { prog.Close() })
			return prog
		}
	}
	b.Fatalf("%s: no egress program on %s", ep.Side, dev)
	return nil
}

func progStats(b *testing.B, p *cebpf.Program) *cebpf.ProgramStats {
	b.Helper()
	s, err := p.Stats()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkEBPFInstall writes 100,000 rules (batched map updates) into a
// freshly loaded rule map and reports the median time (target: 1 s or
// less). Nothing is attached.
func BenchmarkEBPFInstall(b *testing.B) {
	requireEBPF(b)
	like := ebpf.Rule{Encap: ebpf.Geneve, VNI: 42, Local: netip.MustParseAddr("2001:2::1"), Remote: netip.MustParseAddr("2001:2::2")}
	rules := ebpftun.FillerRules(method.IPv6, 100_000, like)
	var times []time.Duration
	for range b.N {
		o, err := ebpf.Load(ebpf.Config{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		err = o.Table().PutRules(rules)
		times = append(times, time.Since(start))
		o.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/100k-rules")
}

// BenchmarkKernelPeers measures what the kernel needs for the same number
// of peers, on this host (which has VXLAN but no gre or ipip): FDB
// entries on one VXLAN device (the kernel's rule-like way to reach many
// VTEPs), and one VXLAN device per peer ("ip link add ... type vxlan ... remote PEER",
// as gre and ipip need one device per peer) until 2,000 devices or 20 s.
// The FDB entries are one per remote MAC ("bridge fdb add MAC dev vx dst
// PEER"), up to 100,000 or 20 s; appending all remotes to one all-zero
// entry is quadratic (it did not reach 100,000 in 10 minutes).
func BenchmarkKernelPeers(b *testing.B) {
	testbedtest.RequireNetAdmin(b)
	for range b.N {
		l := testbedtest.New(b, 1500)
		ep := l.A
		under, err := ep.NL.LinkByName(ep.Dev)
		if err != nil {
			b.Fatal(err)
		}
		vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: testbed.DevicePrefix(l.ID) + "-vx"}, VxlanId: 42,
			VtepDevIndex: under.Attrs().Index, SrcAddr: net.IP(ep.Addr6.Addr().AsSlice()), Port: method.VXLANPort}
		if err := ep.NL.LinkAdd(vx); err != nil {
			b.Fatal(err)
		}
		link, err := ep.NL.LinkByName(vx.Name)
		if err != nil {
			b.Fatal(err)
		}
		// One FDB entry per remote site (its own MAC, its own VTEP), up to
		// 100,000 or 20 s.
		const peers = 100_000
		start := time.Now()
		fdb := 0
		for ; fdb < peers && time.Since(start) < 20*time.Second; fdb++ {
			dst := netip.MustParseAddr("2001:2:0:8000::").As16()
			dst[12], dst[13], dst[14], dst[15] = byte(fdb>>24), byte(fdb>>16), byte(fdb>>8), byte(fdb)
			mac := net.HardwareAddr{0x02, 0, byte(fdb >> 24), byte(fdb >> 16), byte(fdb >> 8), byte(fdb)}
			if err := ep.NL.NeighAppend(&netlink.Neigh{
				LinkIndex: link.Attrs().Index, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT,
				Flags: netlink.NTF_SELF, IP: net.IP(dst[:]), HardwareAddr: mac,
			}); err != nil {
				b.Fatalf("fdb entry %d: %v", fdb, err)
			}
		}
		took := time.Since(start)
		b.ReportMetric(float64(fdb), "fdb-entries")
		b.ReportMetric(float64(took.Microseconds())/1000/float64(fdb)*100_000, "ms/100k-fdb-entries")

		start = time.Now()
		n := 0
		for ; n < 2000 && time.Since(start) < 20*time.Second; n++ {
			dst := netip.MustParseAddr("2001:2:0:9000::").As16()
			dst[14], dst[15] = byte(n>>8), byte(n)
			dev := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("%s-%d", testbed.DevicePrefix(l.ID), n)}, VxlanId: 1000 + n,
				VtepDevIndex: under.Attrs().Index, SrcAddr: net.IP(ep.Addr6.Addr().AsSlice()), Group: net.IP(dst[:]), Port: method.VXLANPort}
			if err := ep.NL.LinkAdd(dev); err != nil {
				b.Fatalf("vxlan device %d: %v", n, err)
			}
		}
		devs := time.Since(start)
		b.ReportMetric(float64(n), "devices")
		b.ReportMetric(float64(devs.Microseconds())/1000/float64(n)*100_000, "ms/100k-devices(extrapolated)")
	}
}

// BenchmarkEBPFSetupTunnels sets ebpf-geneve up (IPv6) through the
// tunnels dimension with 1 and 10,000 tunnels (the peer's rule and
// 9,999 fillers in each side's map, written one by one) and tears it
// down, b.N times each, in a fresh testbed each time. It reports the
// median Setup time (target at 10,000: under 1 s), Teardown time, and the
// median and 99th percentile of one rule's write (Path.Adds, both sides).
// Run it with -benchtime 5x (see docs/performance.md).
func BenchmarkEBPFSetupTunnels(b *testing.B) {
	requireEBPF(b)
	for _, n := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("tunnels=%d", n), func(b *testing.B) {
			var setups, teardowns, adds []float64
			for range b.N {
				l := testbedtest.New(b, 1500)
				m := ebpftun.EBPFGeneve
				env := &method.Env{A: l.A, B: l.B, Family: method.IPv6, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(method.IPv6), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Tunnels: n}
				ctx := context.Background()
				start := time.Now()
				path, err := m.Setup(ctx, env)
				setups = append(setups, time.Since(start).Seconds()*1000)
				if err != nil {
					_ = m.Teardown(ctx, env)
					b.Fatal(err)
				}
				for _, d := range path.Adds {
					adds = append(adds, float64(d.Nanoseconds())/1000)
				}
				start = time.Now()
				if err := m.Teardown(ctx, env); err != nil {
					b.Fatal(err)
				}
				teardowns = append(teardowns, time.Since(start).Seconds()*1000)
			}
			b.ReportMetric(stats.Median(setups), "setup-ms")
			b.ReportMetric(stats.Median(teardowns), "teardown-ms")
			if len(adds) > 0 {
				slices.Sort(adds)
				b.ReportMetric(stats.Median(adds), "add-p50-µs")
				b.ReportMetric(stats.Quantile(adds, 0.99), "add-p99-µs")
			}
		})
	}
}
