package kubernetes_test

import (
	"context"
	"fmt"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/bed/kubernetes"
	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/kubehost/kubetest"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
)

// tunbench builds this tunbench for the nodes and hosts and returns its
// path and build id; the binary is removed when b ends.
func tunbench(b testing.TB) (string, string) {
	b.Helper()
	dir, err := os.MkdirTemp("", "tunbench-kubebed-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "tunbench")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/tunbench").CombinedOutput(); err != nil {
		b.Fatalf("build tunbench: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--build-id").Output()
	if err != nil {
		b.Fatal(err)
	}
	return bin, strings.TrimSpace(string(out))
}

// BenchmarkKubeVsSSH measures issue 25's targets in one process: opening
// the kubernetes testbed (pods Running and agents started on both nodes
// of a real kubetest cluster; target under 10 s), and the harness time of
// a native tcp_stream cell (3 s) on it against the same cell between two
// sshtest hosts, alternating, each first in half the rounds (target: at
// most 1 s more per cell). Metrics: open-s, kube-s/cell, ssh-s/cell
// (medians) and extra-s/cell.
//
//	go test -run '^$' -bench BenchmarkKubeVsSSH -benchtime 1x ./internal/bed/kubernetes/
func BenchmarkKubeVsSSH(b *testing.B) {
	bin, bid := tunbench(b)
	cl := kubetest.Start(b)
	sites := sshtest.New(b, 2)
	reg := registry.Builtin()
	base := scenario.Default()
	base.Methods, base.Repetitions, base.Families = []string{"native"}, 1, []string{"ipv4"}
	base.Duration, base.Omit, base.Latency = "3s", "0s", "0s"
	base.Tests = []string{scenario.TestTCPStream}
	base.CongestionControl = []string{"cubic"}

	sshs := base
	sshs.Testbed = "ssh"
	hosts := &ssh.Section{KnownHosts: sites.KnownHosts, Binary: bin,
		Pairs: [][]string{{sites.Site[0].Config.Name, sites.Site[1].Config.Name}}}
	ns := map[string]string{}
	for _, st := range sites.Site {
		hosts.Sites = append(hosts.Sites, ssh.Site{Name: st.Config.Name, Address: st.Config.Addr,
			Identity: sites.IdentityFile, Dev: st.Dev, IPv4: st.Addr4 + "/24"})
		ns[st.Config.Name] = st.Namespace
	}
	kube := base
	kube.Testbed = "kubernetes"
	cluster := &kubernetes.Section{Kubeconfig: cl.Kubeconfig, Image: cl.Image, Binary: bin,
		Nodes: []kubernetes.Node{{Name: cl.Nodes[0].Name}, {Name: cl.Nodes[1].Name}},
		Pairs: [][]string{{cl.Nodes[0].Name, cl.Nodes[1].Name}}}
	sshs, kube = ssh.With(sshs, hosts), kubernetes.With(kube, cluster)
	for _, s := range []scenario.Scenario{sshs, kube} {
		if err := s.Validate(testbeds.Catalog(reg)); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	sshID, kubeID := testbed.NewID(), testbed.NewID()
	stb, err := ssh.Open(ctx, ssh.Config{SSH: hosts, Families: sshs.Families, MTUs: sshs.MTUs, ID: sshID, BuildID: bid,
		Version: "devel", Binary: bin, Dial: func(site string) func(context.Context, string, string) (net.Conn, error) {
			return sshtest.DialIn(ns[site])
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer stb.Close()
	start := time.Now()
	ktb, err := kubernetes.Open(ctx, kubernetes.Config{Kube: cluster, Families: kube.Families, MTUs: kube.MTUs,
		ID: kubeID, BuildID: bid, Version: "devel", Binary: bin, Dial: cl.Dial})
	if err != nil {
		b.Fatal(err)
	}
	open := time.Since(start).Seconds()
	defer ktb.Close()
	cell := func(sc scenario.Scenario, bed testbed.Testbed, id string) result.Cell {
		st, err := store.Open(filepath.Join(b.TempDir(), "r.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		out, err := runner.Run(ctx, runner.Config{Scenario: sc, Methods: reg, Store: st, Bed: bed, ID: id, Catalog: testbeds.Catalog(reg), BackgroundWindow: 100 * time.Millisecond})
		if err != nil || len(out.Cells) != 1 || out.Cells[0].Status != result.StatusOK {
			b.Fatalf("%s run: %v %+v", sc.Testbed, err, out)
		}
		return out.Cells[0]
	}
	harness := func(c result.Cell) float64 {
		return c.Finished.Sub(c.Started).Seconds() - c.Params.Duration - c.Params.Omit
	}
	var hk, hs, ratio []float64
	for i := 0; i < b.N*4; i++ {
		var k, s result.Cell
		if i%2 == 0 {
			k, s = cell(kube, ktb, kubeID), cell(sshs, stb, sshID)
		} else {
			s, k = cell(sshs, stb, sshID), cell(kube, ktb, kubeID)
		}
		hk, hs = append(hk, harness(k)), append(hs, harness(s))
		ratio = append(ratio, k.Throughput.BitsPerSecond/s.Throughput.BitsPerSecond)
	}
	b.ReportMetric(open, "open-s")
	b.ReportMetric(median(hk), "kube-s/cell")
	b.ReportMetric(median(hs), "ssh-s/cell")
	b.ReportMetric(median(hk)-median(hs), "extra-s/cell")
	b.Logf("open %.2f s; harness kube %v ssh %v; throughput kube/ssh %v", open, round(hk), round(hs), round(ratio))
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func round(v []float64) []string {
	var out []string
	for _, x := range v {
		out = append(out, fmt.Sprintf("%.2f", x))
	}
	return out
}
