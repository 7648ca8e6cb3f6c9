package ebpftun_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Superpacket payloads of one TCP stream over veth at MTU 1500: the
// socket's GSO limit (the veth's gso_max_size of 65,536 less the kernel's
// MAX_TCP_HEADER) holds 45 segments of native's MSS (1,448) and 46 of the
// tunnel's (1,398: the route's MTU of 1,450).
const (
	nativeSuperpacket = 45 * 1448
	tunnelSuperpacket = 46 * 1398
)

// BenchmarkSuperpackets explains why one TCP stream hands the tunnel
// smaller superpackets than native (docs/performance.md): iperf3 writes
// 128 KiB at a time, which is two full superpackets and a tail of 752
// bytes natively, less than one MSS, so Nagle holds it until the next
// write tops it up; through the tunnel the tail is 2,456 bytes, more
// than one MSS, and leaves at once as a superpacket of two segments, a
// third of the tunnel's sends. In one testbed with ebpf-geneve (IPv4,
// cubic on every route), alternating, it sends one stream natively
// (underlay addresses) and through the tunnel (overlay addresses) with
// iperf3's default writes, with TCP_NODELAY (-N: native's tail leaves at
// once too) and with writes of two whole superpackets of the path (-l:
// no tail), and reports for each the veth's average bytes per transmitted
// packet (tx_bytes / tx_packets of the sender's underlay device, one per
// superpacket; the tunnel's include its 50 bytes of headers), Gbit/s and
// the CPU time of the two iperf3 processes per MB sent (with one stream
// the veth's receive softirq runs in their context and is charged to
// them, so this is the path's cost and, unlike Gbit/s, holds on a busy
// machine), medians of the rounds (every other round in reverse order).
//
//	go test -run '^$' -bench BenchmarkSuperpackets -benchtime 1x ./internal/method/ebpftun/
func BenchmarkSuperpackets(b *testing.B) {
	requireEBPF(b)
	testenv.NeedProgram(b, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	rounds, seconds := 4, 3
	for range b.N {
		l, _, tunnel := methodtest.Setup(b, ebpftun.EBPFGeneve, method.IPv4, 1500, nil)
		native := &method.Path{A: l.A.Addr4.Addr(), B: l.B.Addr4.Addr()}
		for _, ep := range l.Endpoints() {
			cubicRoutes(b, ep)
		}
		type variant struct {
			name string
			path *method.Path
			args []string
		}
		var variants []variant
		for _, p := range []struct {
			name string
			path *method.Path
			sp   int
		}{{"native", native, nativeSuperpacket}, {"tunnel", tunnel, tunnelSuperpacket}} {
			variants = append(variants,
				variant{p.name + "-default", p.path, nil},
				variant{p.name + "-nodelay", p.path, []string{"-N"}},
				variant{p.name + "-whole", p.path, []string{"-l", strconv.Itoa(2 * p.sp)}})
		}
		size, gbps, cost := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		for round := range rounds {
			order := slices.Clone(variants)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, v := range order {
				before := txStats(b, l.A)
				g, c := iperf3Args(b, l, v.path, seconds, v.args...)
				after := txStats(b, l.A)
				s := float64(after.TxBytes-before.TxBytes) / float64(after.TxPackets-before.TxPackets)
				size[v.name] = append(size[v.name], s)
				gbps[v.name] = append(gbps[v.name], g)
				cost[v.name] = append(cost[v.name], c)
				b.Logf("round %d %s: %.2f Gbit/s, %.0f bytes per veth packet, %.0f CPU µs per MB", round+1, v.name, g, s, c)
			}
		}
		for _, v := range variants {
			b.ReportMetric(stats.Median(size[v.name]), v.name+"-B/pkt")
			b.ReportMetric(stats.Median(gbps[v.name]), v.name+"-Gbps")
			b.ReportMetric(stats.Median(cost[v.name]), v.name+"-cpu-µs/MB")
		}
	}
}

// cubicRoutes puts cubic on every IPv4 route of ep's main table, as
// tunbench's runs do, so the connections start with it.
func cubicRoutes(b *testing.B, ep *testbed.Endpoint) {
	b.Helper()
	routes, err := ep.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range routes {
		r.Congctl = "cubic"
		if err := ep.NL.RouteReplace(&r); err != nil {
			b.Fatalf("%s: congctl cubic on %s: %v", ep.Side, r, err)
		}
	}
}

// txStats returns the counters of ep's underlay device.
func txStats(b *testing.B, ep *testbed.Endpoint) *netlink.LinkStatistics {
	b.Helper()
	link, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		b.Fatal(err)
	}
	return link.Attrs().Statistics
}

// iperf3Args sends one TCP stream from path.A to path.B for seconds with
// extra iperf3 client arguments and returns the sender's Gbit/s and the
// CPU time of client and server per MB sent, in µs.
func iperf3Args(b *testing.B, l *localns.Local, path *method.Path, seconds int, args ...string) (gbps, cpuPerMB float64) {
	b.Helper()
	ctx := context.Background()
	srv := l.B.Command(ctx, "iperf3", "-s", "-1", "-B", path.B.String(), "-p", "5201")
	if err := l.B.Start(srv); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = srv.Kill()
		_ = srv.Wait()
		l.B.Forget(srv)
	}()
	if err := l.B.WaitListening(ctx, srv.Pid(), 5201, 5*time.Second); err != nil {
		b.Fatalf("iperf3 server: %v", err)
	}
	argv := append([]string{"iperf3", "-c", path.B.String(), "-p", "5201", "-t", strconv.Itoa(seconds), "-J"}, args...)
	out, err := l.A.Run(ctx, argv...)
	if err != nil {
		b.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	var r struct {
		End struct {
			SumSent struct {
				Bytes         float64 `json:"bytes"`
				Seconds       float64 `json:"seconds"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_sent"`
			CPU struct {
				Host   float64 `json:"host_total"`
				Remote float64 `json:"remote_total"`
			} `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.End.SumSent.BitsPerSecond == 0 {
		b.Fatalf("%s: no result (%v):\n%s", strings.Join(argv, " "), err, out)
	}
	sent := r.End.SumSent
	cpu := (r.End.CPU.Host + r.End.CPU.Remote) / 100 * sent.Seconds
	return sent.BitsPerSecond / 1e9, cpu * 1e6 / (sent.Bytes / 1e6)
}
