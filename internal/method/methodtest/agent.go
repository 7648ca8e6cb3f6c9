package methodtest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// AgentState is what a method may not leave on the hosts of a pair of
// agents: each side's links, the files in its run directory and the
// commands running on its host.
type AgentState struct {
	Links     [][]string
	Files     []string
	Processes []string
}

// AgentStateOf reads pair's hosts through their endpoints.
func AgentStateOf(t *testing.T, pair *testbed.Pair) AgentState {
	t.Helper()
	return AgentState{
		Links:     [][]string{LinkState(t, pair.A), LinkState(t, pair.B)},
		Files:     AgentFiles(t, pair),
		Processes: AgentProcesses(t, pair),
	}
}

// CheckAgentState fails t for every difference between before and the
// hosts' state now.
func CheckAgentState(t *testing.T, pair *testbed.Pair, before AgentState) {
	t.Helper()
	after := AgentStateOf(t, pair)
	if diff := cmp.Diff(before.Links, after.Links); diff != "" {
		t.Errorf("links after teardown (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Files, after.Files); diff != "" {
		t.Errorf("files in the agents' run directories after teardown (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Processes, after.Processes); diff != "" {
		t.Errorf("processes on the agents' hosts after teardown (-before +after):\n%s", diff)
	}
}

// AgentFiles lists, per side, what the side's run directory on its host
// holds (through the endpoint), without the testbed's pid records.
func AgentFiles(t *testing.T, pair *testbed.Pair) []string {
	t.Helper()
	var files []string
	for _, ep := range pair.Endpoints() {
		out, err := ep.Run(context.Background(), "find", ep.Dir, "-mindepth", "1", "-not", "-path", filepath.Join(ep.Dir, "pids")+"*")
		if err != nil {
			t.Fatalf("%s: list %s: %v\n%s", ep.Side, ep.Dir, err, out)
		}
		for _, f := range strings.Fields(string(out)) {
			files = append(files, ep.Side+": "+f)
		}
	}
	slices.Sort(files)
	return files
}

// AgentProcesses lists, per side, the commands running on the side's
// host (its own pid namespace) as ps there sees them, without ps itself.
func AgentProcesses(t *testing.T, pair *testbed.Pair) []string {
	t.Helper()
	var procs []string
	for _, ep := range pair.Endpoints() {
		out, err := ep.Run(context.Background(), "ps", "-e", "-o", "comm=")
		if err != nil {
			t.Fatalf("%s: ps: %v\n%s", ep.Side, err, out)
		}
		for _, c := range strings.Fields(string(out)) {
			if c != "ps" {
				procs = append(procs, ep.Side+": "+c)
			}
		}
	}
	slices.Sort(procs)
	return procs
}

// agentEnv starts two isolated agents and returns the env of m between
// them with an underlay MTU of 1500.
func agentEnv(t *testing.T, m method.Method, family string, opts map[string]string) (*localns.Local, *testbed.Pair, *method.Env) {
	t.Helper()
	l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
	return l, pair, &method.Env{A: pair.A, B: pair.B, Family: family, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir, Options: opts}
}

// AgentSetup returns the env of m between two isolated agents (as
// AgentTunnel) for the caller to set up. At the end of the test m is torn
// down, which must succeed, and the hosts must be as they were.
func AgentSetup(t *testing.T, m method.Method, family string, opts map[string]string) (*testbed.Pair, *method.Env) {
	t.Helper()
	RequireTunnelKernel(t, m)
	_, pair, env := agentEnv(t, m, family, opts)
	before := AgentStateOf(t, pair)
	t.Cleanup(func() {
		if err := m.Teardown(context.Background(), env); err != nil {
			t.Errorf("Teardown through agents: %v", err)
		}
		CheckAgentState(t, pair, before)
	})
	return pair, env
}

// AgentTunnel is LabTunnel through two agents, as over SSH: m runs
// between the remote endpoints of testbedtest.IsolatedAgentPair (each
// agent in its own network, mount and pid namespaces with a private run
// root), so every command, file, netlink call and op of the method goes
// through the agent protocol. It checks the sockets open in both
// namespaces against those m declares (CheckListeners), the overlay MTU,
// pings each way, checks every tunnel frame of the pings, a full-size
// ping and one second
// of iperf3 on a's underlay against want (the full-size echo exactly the
// underlay MTU), tears down twice and checks that the links, the run
// directories and the processes of both hosts are as before. It returns
// the pair and env, torn down, for the caller's own checks.
func AgentTunnel(t *testing.T, m method.Method, family string, opts map[string]string, want TunnelWire) (*testbed.Pair, *method.Env) {
	t.Helper()
	RequireTunnelKernel(t, m)
	ctx := context.Background()
	l, pair, env := agentEnv(t, m, family, opts)
	before := AgentStateOf(t, pair)
	t.Cleanup(func() { _ = m.Teardown(ctx, env) })

	path, err := m.Setup(ctx, env)
	if err != nil {
		t.Fatalf("Setup through agents: %v", err)
	}
	CheckListeners(t, m, env, path, nil)
	if path.OverlayMTU != 0 {
		env.OverlayMTU = path.OverlayMTU
	}
	DeviceMTUOn(t, pair.Endpoints(), path, env.OverlayMTU)

	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []struct {
		from *testbed.Endpoint
		to   string
	}{{pair.A, path.B.String()}, {pair.B, path.A.String()}} {
		if out, err := dir.from.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", dir.to); err != nil {
			t.Fatalf("ping %s from %s through the agent: %v\n%s", dir.to, dir.from.Side, err, out)
		}
	}
	PingFullSizeFrom(t, pair.A, env, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	var echo []wire.Frame
	for _, f := range checkTunnelFrames(t, l, frames, want) {
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
	out := Iperf3Between(t, pair.A, pair.B, path, 1, 1)
	pkts, err = c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if frames, err = wire.Summarize(pkts); err != nil {
		t.Fatal(err)
	}
	if n := len(checkTunnelFrames(t, l, frames, want)); n == 0 {
		t.Errorf("no %s frames captured under iperf3; frames:\n%s", m.Name(), frameLines(frames[:min(len(frames), 20)]))
	}
	t.Logf("%s through agents: %.2f Gbit/s (%d frames captured)", t.Name(), Gbps(t, out), len(frames))

	if err := m.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown through agents: %v", err)
	}
	if err := m.Teardown(ctx, env); err != nil {
		t.Errorf("second Teardown through agents: %v", err)
	}
	CheckAgentState(t, pair, before)
	return pair, env
}
