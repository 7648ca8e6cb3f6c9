// Package method is the core of the tunnelling and encryption methods
// tunbench measures: the Method interface, the Registry, options,
// requirements, and the daemon handling (start, readiness wait, exit
// check) every family shares. The methods themselves live one family a
// package beside it: kernel (kernel tunnel devices and SRv6), wireguard,
// nebula, tailscale, ipsec, ovs, openvpn, sshtunnel, ebpftun, l2tp, macsec
// and fou; package registry holds the single list of them all
// (registry.Builtin).
//
// A method is set up between the two endpoints of a testbed (Setup), is
// measured by sending from endpoint a to endpoint b over the overlay
// addresses Setup returns, and is removed again (Teardown). Overhead is the
// number of bytes the method adds to every packet on the underlay; the
// runner derives the overlay MTU from it (underlay MTU minus overhead) and
// passes it in Env, so no method leaves its MTU to chance.
//
// Methods are registered in a Registry by name; the runner knows nothing
// about individual methods. Requirements lists what a method needs from
// the machine (kernel options, programs) so that "tunbench methods" and
// validation can say exactly why a method cannot run, before anything is
// created.
package method

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Families.
const (
	IPv4 = "ipv4"
	IPv6 = "ipv6"
)

// The IANA ports of the UDP encapsulations, shared by the kernel, OVS and
// eBPF data paths.
const (
	VXLANPort  = 4789
	GenevePort = 6081
)

// Overlay addresses used by every tunnel method (the underlay uses
// 198.18.0.0/24 and 2001:2::/64; see package testbed).
var (
	OverlayA4 = netip.MustParsePrefix("198.19.0.1/24")
	OverlayB4 = netip.MustParsePrefix("198.19.0.2/24")
	OverlayA6 = netip.MustParsePrefix("2001:2:0:1::1/64")
	OverlayB6 = netip.MustParsePrefix("2001:2:0:1::2/64")
)

// Overlay returns the overlay prefixes of sides a and b for family.
func Overlay(family string) (a, b netip.Prefix) {
	if family == IPv6 {
		return OverlayA6, OverlayB6
	}
	return OverlayA4, OverlayB4
}

// Env is what a method gets to set itself up.
type Env struct {
	A, B *testbed.Endpoint
	// Family is the address family of the measured traffic ("ipv4" or "ipv6").
	Family string
	// UnderlayMTU is the MTU of the underlay devices.
	UnderlayMTU int
	// OverlayMTU is UnderlayMTU minus the method's overhead: the MTU the
	// method must set on its overlay devices or routes.
	OverlayMTU int
	// Prefix starts the name of every device the method creates (at most
	// 6 more bytes fit in a device name).
	Prefix string
	// Dir is a private directory (0700) for configuration, keys and daemon
	// state; removed by the testbed.
	Dir string
	// Options are method-specific settings from the scenario.
	Options map[string]string
	// Tunnels is the number of tunnels to set up between A and B (the
	// scenario's tunnels dimension); 0 and 1 both mean one. Only a
	// Scaler is given more than one; the load crosses tunnel
	// Measured(), whose overlay addresses are Overlay's (ScaleOverlay).
	Tunnels int
	// Faults, set by tests only, injects failures into the set-up (see
	// Faults); nil injects none.
	Faults *Faults
}

// Endpoints returns a and b.
func (e *Env) Endpoints() []*testbed.Endpoint { return []*testbed.Endpoint{e.A, e.B} }

// Peer returns the endpoint opposite to ep.
func (e *Env) Peer(ep *testbed.Endpoint) *testbed.Endpoint {
	if ep == e.A {
		return e.B
	}
	return e.A
}

// Path is what a set-up method offers to the load tools.
type Path struct {
	// A and B are the addresses the load runs between: from A to B.
	A, B netip.Addr
	// Devices are the overlay devices per side ("a", "b"), recorded with
	// their MTU and offloads in the result metadata.
	Devices map[string][]string
	// Daemons are userspace data-path processes whose CPU is accounted.
	Daemons []Daemon
	// Variant names the implementation variant that actually runs.
	Variant string
	// Datapath names, in one word, where the method's packets are
	// processed, for a method that has more than one place to do it
	// (result.Meta.Datapath: DatapathKernel, DatapathNetdev,
	// DatapathLibipsec, DatapathUserspace, DatapathNetstack); empty for a method with one.
	Datapath string
	// OverlayMTU, when not zero, is the MTU the method really gives the
	// measured traffic, where its implementation cannot honour Env.OverlayMTU
	// (kernel-libipsec reads at most 1400 bytes from its TUN device). The
	// runner records it in place of the requested one.
	OverlayMTU int
	// ClientWrap, when not empty, is the argv prefix side a's load
	// clients (iperf3, sockperf) run under, for a method whose overlay
	// the host's stack on a cannot reach: tailscale's netstack datapath
	// runs them under proxychains4, which sends their TCP connections
	// through tailscaled's SOCKS5 server. A method that sets it refuses,
	// in CheckTests, the tests whose clients cannot run under it.
	ClientWrap []string
	// Adds, for a scaled set-up (Env.Tunnels > 1), are how long each
	// tunnel's add took, per side, in the order they were made
	// (AddTimer): the runner reports their percentiles.
	Adds []time.Duration
}

// Wrap returns argv run under p's ClientWrap (argv itself without one).
func (p *Path) Wrap(argv []string) []string {
	if len(p.ClientWrap) == 0 {
		return argv
	}
	return append(append([]string(nil), p.ClientWrap...), argv...)
}

// Data paths a method records in Path.Datapath (see result.Meta.Datapath).
const (
	DatapathKernel    = result.DatapathKernel
	DatapathNetdev    = result.DatapathNetdev
	DatapathLibipsec  = result.DatapathLibipsec
	DatapathUserspace = result.DatapathUserspace
	DatapathNetstack  = result.DatapathNetstack
)

// Daemon is a userspace process that carries the method's traffic.
type Daemon struct {
	Side string // "a" or "b"
	Role string // e.g. "wireguard-go"
	PID  int
	// Log is the daemon's log file on its side's host, "" when it has
	// none: a daemon that exits mid-measurement is reported with its
	// last lines.
	Log string
	// Exit, when not nil, says whether the daemon has exited and how
	// (its *ExitedError: the exit status or the signal that killed it),
	// for a daemon started through StartDaemon; a fault names it.
	Exit func() error
}

// Method is one tunnelling or encryption method.
type Method interface {
	// Name is the scenario name, e.g. "vxlan".
	Name() string
	// Implementation describes what carries the traffic, e.g. "kernel vxlan".
	Implementation() string
	// Overhead is the number of bytes added to each packet on the underlay
	// for the given family.
	Overhead(family string) int
	// Families lists the families the method supports.
	Families() []string
	// Requirements lists what the machine must provide.
	Requirements() []Requirement
	// Options declares the scenario options the method takes; validation
	// and Setup check env.Options against them (ParseOptions).
	Options() []Option
	// Setup creates the method between env.A and env.B. On error, whatever
	// it created may remain; the caller then calls Teardown.
	Setup(ctx context.Context, env *Env) (*Path, error)
	// Teardown removes everything Setup created, including daemons. It must
	// tolerate a partial Setup and being called twice.
	Teardown(ctx context.Context, env *Env) error
}

// Underlayer is implemented by methods whose outer header is not of the
// measured family: UnderlayFamily returns the family of the underlay
// addresses the method needs to carry family (srv6 and the ip6 tunnels:
// always IPv6; gre and ipip: always IPv4).
type Underlayer interface {
	UnderlayFamily(family string) string
}

// UnderlayFamily is the family of the underlay addresses m needs to carry
// traffic of family: the measured family itself unless m says otherwise
// (Underlayer).
func UnderlayFamily(m Method, family string) string {
	if u, ok := m.(Underlayer); ok {
		return u.UnderlayFamily(family)
	}
	return family
}

// Confined is implemented by methods that run on some testbeds only:
// Testbeds names them and says, as a phrase after the method's name, what
// the method measures there ("measures a Kubernetes cluster's pod
// network between two nodes"). A method without it runs on every
// testbed whose hosts meet its requirements.
type Confined interface {
	Testbeds() (names []string, why string)
}

// Testbeds returns the testbeds m runs on (nil: every one) and why.
func Testbeds(m Method) (names []string, why string) {
	if c, ok := m.(Confined); ok {
		return c.Testbeds()
	}
	return nil, ""
}

// Placer is implemented by methods whose endpoints are not the testbed's
// host network stacks: Network is the testbed.Spec.Network the runner
// asks the testbed for (pod-network: testbed.NetworkPod, ordinary pods).
type Placer interface {
	Network() string
}

// Counter is implemented by methods whose data path counts what it
// carries (packets, bytes, drops by reason). The runner reads the counters
// after the measurement, before Teardown, and stores them in the cell's
// metadata (Meta.Extra) under the keys returned.
type Counter interface {
	Counters(ctx context.Context, env *Env) (map[string]string, error)
}

// Rekeyer is implemented by methods that can force a rekey of a running
// tunnel (a new WireGuard handshake, a new IPsec CHILD_SA): the recover
// test measures a request stream across it. Rekey returns once the
// method's command has returned, and says what it did (e.g. "swanctl
// --rekey --child tunbench"); it never names a key.
type Rekeyer interface {
	Rekey(ctx context.Context, env *Env) (how string, err error)
}

// Load is what a scenario runs through a method: its tests, families,
// request/response tool, and the TCP settings it gives explicitly
// (scenario.Scenario's Tests, Families, LatencyTool, MSS and
// CongestionControl).
type Load struct {
	Tests             []string
	Families          []string
	LatencyTool       string
	MSS               []int
	CongestionControl []string
}

// TestChecker is implemented by methods that cannot carry every test
// with some of their options (tailscale's netstack datapath carries TCP
// through a SOCKS5 wrapper only). CheckTests returns, before anything is
// created, why the scenario's load cannot run with opts and what to do
// instead; scenario validation calls it through Catalog.
type TestChecker interface {
	CheckTests(opts Values, load Load) error
}

// Registry maps names to methods.
type Registry struct{ m map[string]Method }

// NewRegistry returns a registry holding ms.
func NewRegistry(ms ...Method) *Registry {
	r := &Registry{m: map[string]Method{}}
	for _, m := range ms {
		if _, dup := r.m[m.Name()]; dup {
			panic("method: duplicate method " + m.Name())
		}
		r.m[m.Name()] = m
	}
	return r
}

// Get returns the method called name, or an error listing the valid names.
func (r *Registry) Get(name string) (Method, error) {
	m, ok := r.m[name]
	if !ok {
		return nil, fmt.Errorf("unknown method %q: valid methods are %s", name, strings.Join(r.Names(), ", "))
	}
	return m, nil
}

// Names returns every method name, sorted, with "native" first.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "native") != (names[j] == "native") {
			return names[i] == "native"
		}
		return names[i] < names[j]
	})
	return names
}

// All returns every method in Names order.
func (r *Registry) All() []Method {
	var ms []Method
	for _, n := range r.Names() {
		ms = append(ms, r.m[n])
	}
	return ms
}

// Supports reports whether m supports family.
func Supports(m Method, family string) bool {
	for _, f := range m.Families() {
		if f == family {
			return true
		}
	}
	return false
}
