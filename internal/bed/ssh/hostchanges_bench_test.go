package ssh_test

import (
	"context"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"path/filepath"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
)

// BenchmarkHostChanges measures what ssh.host_changes costs on two
// sshtest hosts reached over their management network:
//
//   - restore-s/host: putting one host's device back (MTU 9000 → 1500 and
//     TSO, GSO, GRO back on) after a cell, one agent round trip (median;
//     target under 1 s);
//
//   - sweep-harness-s-changes and -plain: the harness time (wall time of
//     opening the testbed, the run and closing it, minus the measured
//     seconds) of a 4-cell sweep mtus [1500, 9000] x offloads [on, off]
//     of native with host_changes, and of 4 cells of native at the
//     hosts' own MTU and offloads without host changes (the same cells
//     cannot run on ssh without them); sweep-extra-s is the difference of
//     the medians (target at most 2 s). Each variant goes first in half
//     the rounds.
//
//     go test -run '^$' -bench BenchmarkHostChanges -benchtime 1x -timeout 20m ./internal/bed/ssh/
func BenchmarkHostChanges(b *testing.B) {
	sites := sshtest.New(b, 2, sshtest.Management())
	bin, bid := tunbench(b)
	reg := registry.Builtin()
	ctx := context.Background()
	ns := map[string]string{}
	base := scenario.Default()
	base.Testbed = "ssh"
	base.Methods, base.Repetitions = []string{"native"}, 1
	base.Duration, base.Omit, base.Latency = "1s", "0s", "0s"
	base.Tests = []string{scenario.TestTCPStream}
	x := &ssh.Section{KnownHosts: sites.KnownHosts, Binary: bin,
		Pairs: [][]string{{sites.Site[0].Config.Name, sites.Site[1].Config.Name}}}
	for _, st := range sites.Site {
		x.Sites = append(x.Sites, ssh.Site{Name: st.Config.Name, Address: st.Mgmt4,
			Identity: sites.IdentityFile, Dev: st.Dev, IPv4: st.Addr4 + "/24"})
		ns[st.Config.Name] = st.Namespace
	}
	base = ssh.With(base, x)
	changes := withHosts(b, base, func(x *ssh.Section) { x.HostChanges = true })
	changes.MTUs, changes.Offloads = []int{1500, 9000}, []string{"on", "off"}
	plain := base
	plain.Repetitions = 4
	for _, s := range []scenario.Scenario{changes, plain} {
		if err := s.Validate(testbeds.Catalog(reg)); err != nil {
			b.Fatal(err)
		}
	}
	open := func(s scenario.Scenario, id string) *ssh.Testbed {
		tb, err := ssh.Open(ctx, ssh.Config{SSH: hostsOf(b, s), Families: s.Families, MTUs: s.MTUs, Offloads: s.Offloads,
			ID: id, BuildID: bid, Version: "devel", Binary: bin, Dial: dialer(ns)})
		if err != nil {
			b.Fatal(err)
		}
		return tb
	}
	// The sweep's harness time, open and close included.
	sweep := func(s scenario.Scenario) float64 {
		st, err := store.Open(filepath.Join(b.TempDir(), "r.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		start := time.Now()
		id := testbed.NewID()
		tb := open(s, id)
		out, err := runner.Run(ctx, runner.Config{Scenario: s, Methods: reg, Store: st, Bed: tb, ID: id, Catalog: testbeds.Catalog(reg), BackgroundWindow: 100 * time.Millisecond})
		if cerr := tb.Close(); err == nil {
			err = cerr
		}
		wall := time.Since(start)
		if err != nil || out == nil {
			b.Fatalf("sweep: %v", err)
		}
		if len(out.Cells) != 4 {
			b.Fatalf("sweep: %d cells, want 4", len(out.Cells))
		}
		for _, c := range out.Cells {
			if c.Status != result.StatusOK {
				b.Fatalf("sweep cell %s: %s", c.Key, c.Error)
			}
		}
		return (wall - out.Measured).Seconds()
	}

	// Restoring one host after a cell.
	id := testbed.NewID()
	tb := open(changes, id)
	site0, err := netns.GetFromName(sites.Site[0].Namespace)
	if err != nil {
		b.Fatal(err)
	}
	defer site0.Close()
	var restore []float64
	for range 5 {
		p, err := tb.Pair(ctx, testbed.Spec{UnderlayMTU: 9000, A: sites.Site[0].Config.Name, B: sites.Site[1].Config.Name})
		if err != nil {
			b.Fatal(err)
		}
		if err := nic.SetOffloads(site0, sites.Site[0].Dev, false); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		changed, err := testbed.HostDev{EP: p.A}.Restore(ctx, false)
		restore = append(restore, time.Since(start).Seconds())
		if err != nil || len(changed) < 4 {
			b.Fatalf("restore: %v, changed %v", err, changed)
		}
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if err := tb.Close(); err != nil {
		b.Fatal(err)
	}

	var withChanges, without []float64
	for i := 0; i < b.N*4; i++ {
		if i%2 == 0 {
			withChanges = append(withChanges, sweep(changes))
			without = append(without, sweep(plain))
		} else {
			without = append(without, sweep(plain))
			withChanges = append(withChanges, sweep(changes))
		}
	}
	b.ReportMetric(stats.Median(restore), "restore-s/host")
	b.ReportMetric(stats.Median(withChanges), "sweep-harness-s-changes")
	b.ReportMetric(stats.Median(without), "sweep-harness-s-plain")
	b.ReportMetric(stats.Median(withChanges)-stats.Median(without), "sweep-extra-s")
	b.Logf("restore per host %v s; sweep harness with changes %v s, without %v s", restore, withChanges, without)
}
