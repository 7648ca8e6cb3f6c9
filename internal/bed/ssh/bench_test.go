package ssh_test

import (
	"context"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// benchFamilies are one method of each family (and native): the methods
// BenchmarkSSHvsLocal compares across the two testbeds.
var benchFamilies = []string{"native", "vxlan", "srv6", "wireguard-go", "ipsec", "ovs-vxlan", "openvpn", "ebpf-geneve"}

// BenchmarkSSHvsLocal measures, in one run with the two testbeds
// alternating, what the ssh testbed costs over the local one, for one
// method of each family: the harness time per cell (a cell's wall time
// minus its measured seconds: setup, teardown, sampling and control round
// trips) and the method's throughput over the sites' veth against the
// local testbed's veth. Metrics per method M: M-overhead-s/cell-ssh and
// -local (medians), M-overhead-s/cell-extra (their difference; target at
// most 1 s) and M-ssh/local (geometric mean of the rounds' ratios, each
// testbed first in half the rounds; target within the run's noise of 1).
//
//	go test -run '^$' -bench BenchmarkSSHvsLocal -benchtime 1x -timeout 30m ./internal/bed/ssh/
func BenchmarkSSHvsLocal(b *testing.B) {
	for _, m := range benchFamilies {
		b.Run(m, func(b *testing.B) { benchSSHvsLocal(b, m) })
	}
}

func benchSSHvsLocal(b *testing.B, method string) {
	sites := sshtest.New(b, 2)
	bin, bid := tunbench(b)
	reg := registry.Builtin()
	s := scenario.Default()
	s.Testbed = "ssh"
	s.Methods, s.Repetitions = []string{method}, 1
	s.Duration, s.Omit, s.Latency = "3s", "0s", "0s"
	s.Tests = []string{scenario.TestTCPStream}
	// The same algorithm on both testbeds (ssh's default is the hosts').
	s.CongestionControl = []string{"cubic"}
	x := &ssh.Section{KnownHosts: sites.KnownHosts, Binary: bin,
		Pairs: [][]string{{sites.Site[0].Config.Name, sites.Site[1].Config.Name}}}
	ns := map[string]string{}
	for _, st := range sites.Site {
		x.Sites = append(x.Sites, ssh.Site{Name: st.Config.Name, Address: st.Config.Addr,
			Identity: sites.IdentityFile, Dev: st.Dev, IPv4: st.Addr4 + "/24", IPv6: st.Addr6 + "/64"})
		ns[st.Config.Name] = st.Namespace
	}
	s = ssh.With(s, x)
	local := s
	local.Testbed = "local"
	local, _ = local.WithSection(ssh.SectionKey, nil)
	ctx := context.Background()
	id := testbed.NewID()
	tb, err := ssh.Open(ctx, ssh.Config{SSH: x, Families: s.Families, MTUs: s.MTUs, ID: id, BuildID: bid,
		Version: "devel", Binary: bin, Dial: dialer(ns)})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	cell := func(sc scenario.Scenario, bed testbed.Testbed, runID string) result.Cell {
		// A store per cell: the ssh cells share the testbed's run id.
		st, err := store.Open(filepath.Join(b.TempDir(), "r.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		out, err := runner.Run(ctx, runner.Config{Scenario: sc, Methods: reg, Store: st, Bed: bed, ID: runID, Catalog: testbeds.Catalog(reg), BackgroundWindow: 100 * time.Millisecond})
		if err != nil || len(out.Cells) != 1 || out.Cells[0].Status != result.StatusOK {
			b.Fatalf("%s run: %v %+v", method, err, out)
		}
		return out.Cells[0]
	}
	overhead := func(c result.Cell) float64 {
		return c.Finished.Sub(c.Started).Seconds() - c.Params.Duration - c.Params.Omit
	}
	var ohSSH, ohLocal, ratio []float64
	// An even number of rounds: each testbed goes first in half of them
	// (which goes second ran 10-20% faster in either order here).
	rounds := 4
	for i := 0; i < b.N*rounds; i++ {
		lid := testbed.NewID()
		var l, r result.Cell
		if i%2 == 0 { // alternate which goes first
			l = cell(local, localns.LocalTestbed{ID: lid, Root: b.TempDir()}, lid)
			r = cell(s, tb, id)
		} else {
			r = cell(s, tb, id)
			l = cell(local, localns.LocalTestbed{ID: lid, Root: b.TempDir()}, lid)
		}
		ohSSH, ohLocal = append(ohSSH, overhead(r)), append(ohLocal, overhead(l))
		ratio = append(ratio, r.Throughput.BitsPerSecond/l.Throughput.BitsPerSecond)
	}
	b.ReportMetric(stats.Median(ohSSH), "overhead-s/cell-ssh")
	b.ReportMetric(stats.Median(ohLocal), "overhead-s/cell-local")
	b.ReportMetric(stats.Median(ohSSH)-stats.Median(ohLocal), "overhead-s/cell-extra")
	b.ReportMetric(geomean(ratio), "ssh/local")
	b.Logf("%s: overhead ssh %v local %v; throughput ssh/local %v", method, ohSSH, ohLocal, ratio)
}

func geomean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range v {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(v)))
}
