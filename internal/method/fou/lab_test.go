package fou_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/fou"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// tunnelWire is what every a-to-b frame of encap (fou.EncapFOU or
// fou.EncapGUE) with payload over family must look like: UDP to port, no
// IPv6 extension header (encaplimit none), then for gue a version 0
// header without options or flags whose proto is the payload's IP
// protocol, and the payload: a bare packet of the family (ipip, ip6ip6)
// or a GRE header without key carrying IPv4 or IPv6.
func tunnelWire(encap, family, payload string, port int) methodtest.TunnelWire {
	var proto uint8 = wire.ProtoGRE
	if payload == fou.PayloadIPIP {
		proto = map[string]uint8{method.IPv4: wire.ProtoIPIP, method.IPv6: wire.ProtoIPv6}[family]
	}
	checkGRE := methodtest.CheckGRE(0, methodtest.L3Protocols...)
	return methodtest.TunnelWire{Underlay: family, Proto: wire.ProtoUDP, Check: func(f wire.Frame) string {
		switch {
		case int(f.DstPort) != port:
			return fmt.Sprintf("UDP destination port %d, want %d", f.DstPort, port)
		case f.Encap != encap:
			return fmt.Sprintf("encapsulation %q, want %q", f.Encap, encap)
		case len(f.Ext) > 0:
			return fmt.Sprintf("IPv6 extension headers %v, want none", f.Ext)
		}
		if encap == fou.EncapGUE {
			p := f.Payload
			if p[0] != 0 || p[2] != 0 || p[3] != 0 {
				return fmt.Sprintf("GUE header % x, want version 0, no options, no flags", p[:4])
			}
			if got, _ := fou.GUEProto(f); got != proto {
				return fmt.Sprintf("GUE proto %d, want %d", got, proto)
			}
		}
		if payload == fou.PayloadGRE {
			return checkGRE(f)
		}
		if f.GRE != nil || f.Inner == nil || f.Inner.Family != family {
			return fmt.Sprintf("want a bare %s packet after the %s header", family, encap)
		}
		return ""
	}}
}

// labCase is one set-up of a lab test.
type labCase struct {
	family, payload string
	port            int
}

func (c labCase) name() string {
	n := c.family + "-" + c.payload
	if c.port != fou.DefaultPort {
		n += "-port" + strconv.Itoa(c.port)
	}
	return n
}

func (c labCase) opts() map[string]string {
	return map[string]string{"payload": c.payload, "port": strconv.Itoa(c.port)}
}

// labRun runs m for real (methodtest.LabTunnel: set up, ping both ways,
// full-size ping, one second of iperf3, every a-to-b frame checked on
// the underlay), checks that each side, and only each side's namespace,
// has its receive port and its journal entry, tears down and checks that
// neither is left.
func labRun(t *testing.T, m method.Method, encap string, c labCase) {
	l, env := methodtest.LabTunnel(t, m, c.family, c.opts(), tunnelWire(encap, c.family, c.payload, c.port))
	want := fou.Port{Family: c.family, Port: c.port, GUE: encap == fou.EncapGUE}
	if !want.GUE {
		want.Proto = map[string]uint8{"ipv4-ipip": unix.IPPROTO_IPIP, "ipv6-ipip": unix.IPPROTO_IPV6}[c.family+"-"+c.payload]
		if c.payload == fou.PayloadGRE {
			want.Proto = unix.IPPROTO_GRE
		}
	}
	for _, ep := range []*testbed.Endpoint{l.A, l.B} {
		ports, err := fou.ListPorts(ep)
		if err != nil || !slices.Equal(ports, []fou.Port{want}) {
			t.Errorf("%s: fou ports %v (%v), want [%v]", ep.Side, ports, err, want)
		}
		name := fmt.Sprintf("fou-%s-%s-%d", ep.Side, c.family, c.port)
		if !testbed.HasUndo(l.Dir, name) {
			t.Errorf("%s: no journal entry %s for the open port", ep.Side, name)
		}
	}
	// Not in this test's own namespace: the port belongs to the endpoint's.
	if fous, err := netlink.FouList(unix.AF_UNSPEC); err != nil || len(fous) != 0 {
		t.Errorf("fou ports in the test's own namespace: %v (%v)", fous, err)
	}
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	checkNothingLeft(t, l.Dir, l.A, l.B)
}

// labTunnels runs m with payload gre and three tunnels for real: a ping
// crosses the first, the measured and the last tunnel, then the one Grow
// adds; Teardown, twice, leaves the links as they were and no port open.
func labTunnels(t *testing.T, m method.Method, c labCase) {
	methodtest.RequireTunnelKernel(t, m)
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: c.family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(c.family),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: c.opts(), Tunnels: 3}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	t.Cleanup(func() {
		for range 2 {
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Errorf("%s Teardown: %v", m.Name(), err)
			}
		}
		if diff := cmp.Diff(before, [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}); diff != "" {
			t.Errorf("links after %s teardown (-before +after):\n%s", m.Name(), diff)
		}
		checkNothingLeft(t, l.Dir, l.A, l.B)
	})
	if _, err := m.Setup(context.Background(), env); err != nil {
		t.Fatalf("%s Setup with 3 tunnels: %v", m.Name(), err)
	}
	if _, err := m.(method.Grower).Grow(context.Background(), env); err != nil {
		t.Fatalf("%s Grow: %v", m.Name(), err)
	}
	for i := range 4 {
		a, b := method.ScaleOverlay(c.family, i, env.Measured())
		methodtest.Ping(t, l, &method.Path{A: a.Addr(), B: b.Addr()})
	}
}

// The lab is software-emulated and slow (about 15 s a set-up locally, 30 s
// through agents), so each encapsulation runs in both families and with
// both payloads, but not every combination: together the six runs cover
// every (family, payload) pair once, and TestPlans checks the set-up of
// all eight on any kernel.

// TestLabFOU carries traffic over fou (kernel lab: the host lacks
// CONFIG_NET_FOU): ipip over IPv4 and ip6gre over IPv6, UDP port 5555.
func TestLabFOU(t *testing.T) {
	for _, c := range []labCase{
		{method.IPv4, fou.PayloadIPIP, fou.DefaultPort},
		{method.IPv6, fou.PayloadGRE, fou.DefaultPort},
	} {
		t.Run(c.name(), func(t *testing.T) { labRun(t, fou.FOU{}, fou.EncapFOU, c) })
		if c.payload == fou.PayloadGRE {
			t.Run(c.name()+"-tunnels3", func(t *testing.T) { labTunnels(t, fou.FOU{}, c) })
		}
	}
}

// TestLabGUE carries traffic over gue: gre over IPv4 on another port, and
// ip6tnl (ip6ip6) over IPv6.
func TestLabGUE(t *testing.T) {
	for _, c := range []labCase{
		{method.IPv4, fou.PayloadGRE, otherPort},
		{method.IPv6, fou.PayloadIPIP, fou.DefaultPort},
	} {
		t.Run(c.name(), func(t *testing.T) { labRun(t, fou.GUE{}, fou.EncapGUE, c) })
		if c.payload == fou.PayloadGRE {
			t.Run(c.name()+"-tunnels3", func(t *testing.T) { labTunnels(t, fou.GUE{}, c) })
		}
	}
}

// agentRun is labRun between two agents in their own namespaces, as
// over SSH (methodtest.AgentTunnel): the ports are opened and closed by
// the agents' ops, and neither a port nor a journal entry (a file of the
// run directory) is left on either host.
func agentRun(t *testing.T, m method.Method, encap string, c labCase) {
	pair, _ := methodtest.AgentTunnel(t, m, c.family, c.opts(), tunnelWire(encap, c.family, c.payload, c.port))
	checkNothingLeft(t, "", pair.A, pair.B)
}

// TestLabFOUThroughAgents runs fou (IPv4, gre) between two agents.
func TestLabFOUThroughAgents(t *testing.T) {
	agentRun(t, fou.FOU{}, fou.EncapFOU, labCase{method.IPv4, fou.PayloadGRE, fou.DefaultPort})
}

// TestLabGUEThroughAgents runs gue (IPv6, ip6gre) between two agents.
func TestLabGUEThroughAgents(t *testing.T) {
	agentRun(t, fou.GUE{}, fou.EncapGUE, labCase{method.IPv6, fou.PayloadGRE, fou.DefaultPort})
}

// TestLabFOUJournalClosesPort: a run that dies with its ports open leaves
// each journaled on its host, and "tunbench clean" of the site
// (agent.CleanSite, run in the namespace of side a as on a host of the
// ssh testbed) deletes the device and closes the port from the journal.
func TestLabFOUJournalClosesPort(t *testing.T) {
	methodtest.RequireTunnelKernel(t, fou.GUE{})
	l := testbedtest.New(t, 1500)
	root, id := t.TempDir(), testbed.NewID()
	runDir := l.A.Dir
	l.A.Dir = testbed.SiteDir(root, id, "a") // side a is a site of run id
	t.Cleanup(func() { l.A.Dir = runDir })
	m := fou.GUE{}
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(method.IPv4), Prefix: testbed.DevicePrefix(id), Dir: l.Dir}
	t.Cleanup(func() {
		if err := m.Teardown(context.Background(), env); err != nil {
			t.Errorf("Teardown: %v", err)
		}
		checkNothingLeft(t, l.Dir, l.A, l.B)
	})
	if _, err := m.Setup(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if !testbed.HasUndo(l.A.Dir, "fou-a-ipv4-5555") {
		t.Fatal("no journal entry for a's port in its site directory")
	}
	// The run dies here: no Teardown.
	var removed []testbed.Leftover
	err := l.A.Do(func() error {
		var err error
		removed, err = agent.CleanSite(root, id, "a")
		return err
	})
	if err != nil {
		t.Fatalf("CleanSite: %v", err)
	}
	t.Logf("clean removed %v", removed)
	if !slices.Contains(removed, testbed.Leftover{Kind: "restored", Name: "fou port 5555 (ipv4) closed"}) {
		t.Errorf("clean removed %v, want the fou port closed", removed)
	}
	if ports, err := fou.ListPorts(l.A); err != nil || len(ports) != 0 {
		t.Errorf("a: fou ports after clean: %v (%v)", ports, err)
	}
	if ports, err := fou.ListPorts(l.B); err != nil || len(ports) != 1 {
		t.Errorf("b (not cleaned): fou ports %v (%v), want its own", ports, err)
	}
}
