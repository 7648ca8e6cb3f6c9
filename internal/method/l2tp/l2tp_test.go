package l2tp_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/l2tp"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// TestL2TPv3Overhead checks the byte count of every encapsulation and
// cookie, and that the default is Overhead.
func TestL2TPv3Overhead(t *testing.T) {
	m := l2tp.L2TPv3{}
	for _, tt := range []struct {
		family string
		opts   map[string]string
		want   int
	}{
		{method.IPv4, nil, 20 + 8 + 8 + 14},
		{method.IPv6, nil, 40 + 8 + 8 + 14},
		{method.IPv4, map[string]string{"encap": "ip"}, 20 + 4 + 14},
		{method.IPv6, map[string]string{"encap": "ip"}, 40 + 4 + 14},
		{method.IPv4, map[string]string{"cookie": "8"}, 20 + 8 + 8 + 8 + 14},
		{method.IPv6, map[string]string{"encap": "ip", "cookie": "4"}, 40 + 4 + 4 + 14},
	} {
		if got := m.HeaderOverhead(tt.family, tt.opts, ""); got != tt.want {
			t.Errorf("%s %v: header overhead %d, want %d", tt.family, tt.opts, got, tt.want)
		}
		if tt.opts == nil && m.Overhead(tt.family) != tt.want {
			t.Errorf("%s: Overhead %d, want %d", tt.family, m.Overhead(tt.family), tt.want)
		}
	}
}

// TestL2TPv3Options: bad options are refused, naming the option and its
// values, before anything is created (a nil testbed is fine).
func TestL2TPv3Options(t *testing.T) {
	for _, tt := range []struct {
		opts    map[string]string
		wantErr string
	}{
		{map[string]string{"encap": "tcp"}, `l2tpv3: option encap="tcp": want one of udp, ip`},
		{map[string]string{"cookie": "6"}, `l2tpv3: option cookie="6": want one of off, 4, 8`},
		{map[string]string{"key": "1"}, `l2tpv3: unknown option "key": valid options are cookie, encap`},
	} {
		_, err := l2tp.L2TPv3{}.Setup(context.Background(), &method.Env{Family: method.IPv4, Options: tt.opts})
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: Setup error %v, want %q", tt.opts, err, tt.wantErr)
		}
	}
}

// answerIPL2TP makes r answer "ip l2tp" as the kernel does: the session
// creates the l2tpeth device, deleting the tunnel removes it.
func answerIPL2TP(r *testbedtest.Recorder, dev string) {
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		switch {
		case slices.Equal(argv[:4], []string{"ip", "l2tp", "add", "session"}):
			_ = r.Know(dev, "l2tp")
		case slices.Equal(argv[:4], []string{"ip", "l2tp", "del", "tunnel"}):
			r.Forget(dev)
		}
		return testbedtest.Answer{}
	})
}

// TestL2TPv3Plans sets l2tpv3 up and tears it down on two recording
// endpoints, per family and encapsulation, and compares what it did with
// testdata/<name>.golden (rewrite with -update): no root or L2TP needed.
func TestL2TPv3Plans(t *testing.T) {
	t.Parallel()
	m := l2tp.L2TPv3{}
	for _, tt := range []struct {
		name string
		opts map[string]string
	}{
		{"udp", nil},
		{"ip", map[string]string{"encap": "ip"}},
		{"udp-cookie8", map[string]string{"cookie": "8"}},
	} {
		for _, family := range m.Families() {
			t.Run(tt.name+"-"+family, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(m, family, tt.opts)
				answerIPL2TP(rec.A, methodtest.RecordPrefix+"-l2tp")
				answerIPL2TP(rec.B, methodtest.RecordPrefix+"-l2tp")
				testbedtest.Golden(t, "l2tpv3-"+tt.name+"-"+family, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestL2TPv3RefusalsRecorded: on a kernel without one of the options
// (Env.Faults), Setup fails with ErrNotSupported naming it before
// anything is created, and Teardown succeeds.
func TestL2TPv3RefusalsRecorded(t *testing.T) {
	t.Parallel()
	m := l2tp.L2TPv3{}
	for _, c := range []string{"CONFIG_L2TP", "CONFIG_L2TP_V3", "CONFIG_L2TP_ETH", "CONFIG_L2TP_IP"} {
		t.Run(c, func(t *testing.T) {
			rec := methodtest.RecordEnv(m, method.IPv4, map[string]string{"encap": "ip"})
			answerIPL2TP(rec.A, methodtest.RecordPrefix+"-l2tp")
			answerIPL2TP(rec.B, methodtest.RecordPrefix+"-l2tp")
			rec.Env.Faults = &method.Faults{KernelLacks: []string{c}}
			_, err := m.Setup(t.Context(), rec.Env)
			if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks "+c) {
				t.Errorf("Setup error %v, want ErrNotSupported naming %s", err, c)
			}
			if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
				t.Errorf("a refused Setup changed the hosts: %q", lines)
			}
			if err := m.Teardown(t.Context(), rec.Env); err != nil {
				t.Errorf("Teardown after a refused Setup: %v", err)
			}
		})
	}
}

// TestL2TPv3ByKernel runs Setup on this host's kernel, for real: where
// it lacks L2TP (the development machine) Setup fails with
// ErrNotSupported naming the option "ip l2tp" found missing; where it has
// it, Setup succeeds. Either way Teardown succeeds and leaves the links
// as they were.
func TestL2TPv3ByKernel(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	m := l2tp.L2TPv3{}
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(method.IPv4), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	_, err := m.Setup(t.Context(), env)
	switch {
	case err == nil:
		t.Log("this kernel carries L2TPv3")
	case !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks CONFIG_L2TP"):
		t.Errorf("Setup error %v, want ErrNotSupported naming a CONFIG_L2TP option", err)
	default:
		t.Logf("refused: %v", err)
	}
	if err := m.Teardown(t.Context(), env); err != nil {
		t.Errorf("Teardown: %v", err)
	}
	if after := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}; !slices.EqualFunc(before, after, slices.Equal) {
		t.Errorf("links after Teardown %q, before %q", after, before)
	}
}

// l2tpWire is what every a-to-b L2TPv3 data frame must look like: the
// encapsulation (UDP 1701 both ways, or IP protocol 115), the session,
// the cookie, and an Ethernet frame inside.
func l2tpWire(family, encap string, cookieLen int) methodtest.TunnelWire {
	proto := uint8(wire.ProtoUDP)
	if encap == "ip" {
		proto = l2tp.ProtoL2TP
	}
	return methodtest.TunnelWire{Underlay: family, Proto: proto, Check: func(f wire.Frame) string {
		if proto == wire.ProtoUDP && (f.SrcPort != l2tp.Port || f.DstPort != l2tp.Port) {
			return fmt.Sprintf("UDP ports %d > %d, want %d both", f.SrcPort, f.DstPort, l2tp.Port)
		}
		session, n, ok := l2tp.Session(f)
		switch {
		case !ok:
			return "not an L2TPv3 data message"
		case session == 0:
			return "session ID 0"
		case n != cookieLen:
			return fmt.Sprintf("%d-byte cookie, want %d", n, cookieLen)
		case f.Inner == nil || !f.Inner.Ethernet:
			return "want an inner Ethernet frame right after the header (no L2-specific sublayer)"
		}
		return ""
	}}
}

var labCases = []struct {
	name, family string
	opts         map[string]string
	encap        string
	cookie       int
}{
	{"udp-ipv4", method.IPv4, nil, "udp", 0},
	{"udp-ipv6", method.IPv6, nil, "udp", 0},
	{"ip-ipv4", method.IPv4, map[string]string{"encap": "ip"}, "ip", 0},
	{"ip-ipv6-cookie8", method.IPv6, map[string]string{"encap": "ip", "cookie": "8"}, "ip", 8},
}

// TestLabL2TPv3 carries traffic over the L2TPv3 pseudowire in the kernel
// lab (the host lacks CONFIG_L2TP): set up, ping, a full-size ping that
// fills the underlay MTU exactly, one second of iperf3, every frame
// checked on the underlay, teardown with nothing left.
func TestLabL2TPv3(t *testing.T) {
	for _, tt := range labCases {
		t.Run(tt.name, func(t *testing.T) {
			methodtest.LabTunnel(t, l2tp.L2TPv3{}, tt.family, tt.opts, l2tpWire(tt.family, tt.encap, tt.cookie))
			if tt.name == "udp-ipv4" || tt.name == "ip-ipv6-cookie8" {
				t.Run("tunnels3", func(t *testing.T) { labSessions(t, tt.family, tt.opts) })
			}
		})
	}
}

// TestLabL2TPv3ThroughAgents is TestLabL2TPv3 between two agents in
// their own namespaces, as over SSH: "ip l2tp" runs on the agents'
// hosts, and nothing is left there
// (registry's TestLabMethodsThroughAgents runs the defaults through
// agents in both families; this is the case with the most options).
func TestLabL2TPv3ThroughAgents(t *testing.T) {
	tc := labCases[3]
	methodtest.AgentTunnel(t, l2tp.L2TPv3{}, tc.family, tc.opts, l2tpWire(tc.family, tc.encap, tc.cookie))
}
