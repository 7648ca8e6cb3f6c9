package ebpftun_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// TestEBPFThroughAgents runs each eBPF method between two remote
// endpoints, each served by a real agent process in its own network,
// mount and pid namespaces (methodtest.AgentTunnel), as over SSH: the
// programs are loaded, their maps filled and pinned, and the tc filters
// attached by the agent on each host. The wire is checked as the local
// test checks it; after teardown no tc filter is left on either
// underlay and no pin of the run on either host's bpffs.
func TestEBPFThroughAgents(t *testing.T) {
	for _, tc := range []struct {
		m      ebpftun.EBPF
		family string
		vni    uint32
	}{
		{ebpftun.EBPFGeneve, method.IPv4, 42},
		{ebpftun.EBPFGeneve, method.IPv6, 42},
		{ebpftun.EBPFVXLAN, method.IPv4, 42},
		{ebpftun.EBPFGRE, method.IPv4, 0},
		{ebpftun.EBPFIPIP, method.IPv4, 42},
	} {
		t.Run(tc.m.Name()+"/"+tc.family, func(t *testing.T) {
			requireEBPF(t)
			pair, env := methodtest.AgentTunnel(t, tc.m, tc.family, nil, ebpfWire(tc.m, tc.family, tc.vni))
			ctx := context.Background()
			for _, ep := range pair.Endpoints() {
				for _, dir := range []string{"ingress", "egress"} {
					out, err := ep.Run(ctx, "tc", "filter", "show", "dev", ep.Dev, dir)
					if err != nil {
						t.Errorf("%s: tc filter show dev %s %s: %v\n%s", ep.Side, ep.Dev, dir, err, out)
					}
					if s := strings.TrimSpace(string(out)); s != "" {
						t.Errorf("%s: %s filters left on %s after teardown:\n%s", ep.Side, dir, ep.Dev, s)
					}
				}
				pins := filepath.Join(ebpf.PinRoot, env.Prefix+"-"+ep.Side)
				if out, err := ep.Run(ctx, "test", "-e", pins); err == nil {
					t.Errorf("%s: %s left on the host's bpffs after teardown%s", ep.Side, pins, out)
				}
			}
		})
	}
}

// TestEBPFCountersThroughAgents reads a cell's counters (what the runner
// stores with each cell) from the maps pinned on the agents' hosts.
func TestEBPFCountersThroughAgents(t *testing.T) {
	requireEBPF(t)
	m := ebpftun.EBPFGeneve
	pair, env := methodtest.AgentSetup(t, m, method.IPv4, nil)
	path, err := m.Setup(context.Background(), env)
	if err != nil {
		t.Fatalf("Setup through agents: %v", err)
	}
	if out, err := pair.A.Run(context.Background(), "ping", "-c", "3", "-i", "0.2", "-W", "3", path.B.String()); err != nil {
		t.Fatalf("ping through the agent: %v\n%s", err, out)
	}
	got, err := m.Counters(context.Background(), env)
	if err != nil {
		t.Fatalf("Counters through agents: %v", err)
	}
	for _, side := range []string{"a", "b"} {
		rule := got["ebpf."+side+".rule"]
		if !strings.Contains(rule, "geneve vni 42: packets ") || strings.Contains(rule, ": packets 0 ") {
			t.Errorf("ebpf.%s.rule = %q, want geneve vni 42 with the pings counted", side, rule)
		}
		if got["ebpf."+side+".decap"] == "" {
			t.Errorf("no ebpf.%s.decap counter in %v", side, got)
		}
	}
}
