package registry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/lab/labtest"
	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestMethodsThroughAgents sets every method up between two remote
// endpoints, each served by a real agent process in its own network,
// mount and pid namespaces (testbedtest.IsolatedAgentPair), as over SSH:
// the method code is unchanged, every command, file, netlink call and op
// goes through the agent protocol, and nothing the method does can reach
// the other side's files or processes but through its endpoint. Traffic
// must flow both ways (a ping each way and one second of iperf3), and
// teardown must leave both hosts' devices, processes and run directories
// as they were. A method whose kernel option this host lacks is skipped
// here and runs in the kernel lab (TestLabMethodsThroughAgents).
func TestMethodsThroughAgents(t *testing.T) {
	t.Parallel() // beside TestKernelLab
	for _, m := range registry.Builtin().All() {
		if _, ok := m.(method.Placer); ok {
			// pod-network runs between ordinary pods of a cluster, not
			// between two hosts' own stacks: internal/bed/kubernetes' tests
			// measure it on a real cluster.
			continue
		}
		for _, fam := range m.Families() {
			t.Run(m.Name()+"/"+fam, func(t *testing.T) {
				throughAgents(t, m, fam, nil, 1)
			})
			// A method that sets up many tunnels does it through the
			// agents too: three, the load crossing the middle one.
			if defaults, err := method.ParseOptions(m, nil); err == nil && method.ScaleOf(m, fam, defaults).Max >= 3 {
				t.Run(m.Name()+"/"+fam+"/tunnels3", func(t *testing.T) {
					throughAgents(t, m, fam, nil, 3)
				})
			}
		}
	}
}

// labThroughAgents are the methods, with the options that select their
// kernel data path, that need kernel options this host lacks; the lab's
// stock kernel has them all. families, when set, are the families run
// through the agents: the IPsec and OVS methods run every family
// through agents on this host (libipsec, the netdev datapath) and every
// family of their kernel data path in the lab without agents
// (TestLabIPsecXfrm, TestLabIPsecECMPXfrm, TestLabOVSKernel), so here
// the kernel data path crosses the agents once per family between them:
// ipsec over IPv4 and ipsec-ecmp over IPv6, ovs-vxlan over IPv4 and
// ovs-gre over IPv6 (ovs-geneve differs from them by its port's type
// alone). The emulated guest took 13 to 55 s a case, and these six
// cases were a third of make test's floor above 20 minutes.
var labThroughAgents = []struct {
	name     string
	opts     map[string]string
	families []string
}{
	{"geneve", nil, nil}, {"gre", nil, nil}, {"gretap", nil, nil}, {"ipip", nil, nil}, {"ip6ip6", nil, nil}, {"ip6gre", nil, nil},
	{"wireguard", nil, nil},
	{"ipsec", map[string]string{"datapath": "xfrm"}, []string{method.IPv4}},
	{"ipsec-ecmp", map[string]string{"datapath": "xfrm"}, []string{method.IPv6}},
	{"ovs-vxlan", map[string]string{"datapath": "system"}, []string{method.IPv4}},
	{"ovs-gre", map[string]string{"datapath": "system"}, []string{method.IPv6}},
	{"l2tpv3", nil, nil}, {"macsec", nil, nil},
}

// TestLabMethodsThroughAgents is TestMethodsThroughAgents for the methods
// and kernel data paths this host's kernel lacks, run inside the kernel
// lab's guest (TestKernelLab), where none may be skipped.
func TestLabMethodsThroughAgents(t *testing.T) {
	if !labtest.InLab() {
		t.Skip("needs the lab's kernel: runs in the guest through TestKernelLab")
	}
	reg := registry.Builtin()
	for _, tc := range labThroughAgents {
		m, err := reg.Get(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		families := m.Families()
		if tc.families != nil {
			families = tc.families
		}
		for _, fam := range families {
			t.Run(m.Name()+"/"+fam, func(t *testing.T) {
				throughAgents(t, m, fam, tc.opts, 1)
			})
		}
	}
}

// throughAgents runs m for family fam between two isolated agents, with
// tunnels tunnels (the load crossing the measured one).
func throughAgents(t *testing.T, m method.Method, fam string, opts map[string]string, tunnels int) {
	for _, r := range m.Requirements() {
		if r.Program != "" {
			testenv.NeedProgram(t, r.Program, r.Install)
		}
	}
	l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
	if _, err := os.Stat(pair.A.Dir); err == nil {
		t.Fatalf("the agent's run directory %s is visible to this process: the agents are not isolated", pair.A.Dir)
	}
	env := &method.Env{A: pair.A, B: pair.B, Family: fam, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(fam), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir, Options: opts, Tunnels: tunnels}
	ctx := context.Background()
	links := func() [][]string { return [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)} }
	beforeLinks, beforeProcs := links(), hostProcesses(t, pair)

	path, err := m.Setup(ctx, env)
	switch {
	case errors.Is(err, method.ErrNotSupported) && !labtest.InLab():
		if terr := m.Teardown(ctx, env); terr != nil {
			t.Errorf("Teardown after a refused Setup: %v", terr)
		}
		t.Skipf("host kernel cannot carry %s: %v; covered by TestKernelLab", m.Name(), err)
	case err != nil:
		t.Errorf("Setup through agents: %v", err)
	default:
		for _, d := range path.Daemons {
			if d.PID <= 0 {
				t.Errorf("daemon %s on %s has no pid", d.Role, d.Side)
			}
		}
		for _, dir := range []struct {
			from *testbed.Endpoint
			to   string
		}{{pair.A, path.B.String()}, {pair.B, path.A.String()}} {
			if out, err := dir.from.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", dir.to); err != nil {
				t.Errorf("ping %s from %s through the agent: %v\n%s", dir.to, dir.from.Side, err, out)
			}
		}
		if !t.Failed() {
			out := methodtest.Iperf3Between(t, pair.A, pair.B, path, 1, 1)
			tp, err := load.ParseIperf3(out)
			if err != nil {
				t.Errorf("iperf3 through the agents: %v", err)
			} else if tp.BitsPerSecond <= 0 {
				t.Errorf("iperf3 through the agents: %v bit/s received", tp.BitsPerSecond)
			}
		}
		if c, ok := m.(method.Counter); ok {
			if _, err := c.Counters(ctx, env); err != nil {
				t.Errorf("Counters through the agents: %v", err)
			}
		}
	}
	if err := m.Teardown(ctx, env); err != nil {
		t.Errorf("Teardown through agents: %v", err)
	}
	if diff := cmp.Diff(beforeLinks, links()); diff != "" {
		t.Errorf("links after teardown (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(beforeProcs, hostProcesses(t, pair)); diff != "" {
		t.Errorf("processes on the hosts after teardown (-before +after):\n%s", diff)
	}
	for _, ep := range pair.Endpoints() {
		out, err := ep.Run(ctx, "ls", "-A", ep.Dir)
		if err != nil {
			t.Errorf("%s: list the run directory: %v", ep.Side, err)
			continue
		}
		names := slices.DeleteFunc(strings.Fields(string(out)), func(n string) bool { return n == "pids" })
		if len(names) > 0 {
			t.Errorf("%s: left in the agent's directory after teardown: %v", ep.Side, names)
		}
	}
}

// hostProcesses lists, per side, the commands running in the side's pid
// namespace (its "host"), as ps there sees them, without ps itself.
func hostProcesses(t *testing.T, pair *testbed.Pair) []string {
	t.Helper()
	var lines []string
	for _, ep := range pair.Endpoints() {
		out, err := ep.Run(context.Background(), "ps", "-e", "-o", "comm=")
		if err != nil {
			t.Fatalf("%s: ps: %v\n%s", ep.Side, err, out)
		}
		for _, c := range strings.Fields(string(out)) {
			if c != "ps" {
				lines = append(lines, fmt.Sprintf("%s: %s", ep.Side, c))
			}
		}
	}
	slices.Sort(lines)
	return lines
}
