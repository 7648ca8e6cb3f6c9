// Package macsec is the macsec method: the kernel's MACsec (IEEE 802.1AE)
// on the underlay link, a macsec device over each side's underlay device
// with static secure associations, one per direction, keyed by SAKs
// generated for the run.
//
// vishvananda/netlink (the version go.mod pins) has no MACsec link type
// and no client of the "macsec" generic netlink family, so the device
// and its secure channels are set up with iproute2 ("ip link add ... type
// macsec", "ip macsec add"), run through the endpoint's command runner.
// The keys reach "ip" on its standard input ("ip -batch -"): never on a
// command line, in a file, in a log or in a result; the kernel holds them
// until the device is deleted.
package macsec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Ciphers (option "cipher"): the two GCM-AES suites without extended
// packet numbers.
const (
	CipherGCMAES128 = "gcm-aes-128"
	CipherGCMAES256 = "gcm-aes-256"
)

// SecTAGLen is the SecTAG with the SCI (EtherType 2, TCI/AN 1, SL 1,
// PN 4, SCI 8) and ICVLen the integrity check value of both suites.
const (
	SecTAGLen = 16
	ICVLen    = 16
)

// SCIs of the two sides' transmit secure channels: fixed, so that the
// plan needs no lookup of the peer's MAC address, and each side's
// receive channel names the other's. Sent in every SecTAG.
const (
	SCIA uint64 = 0x7475_6e62_0000_0001
	SCIB uint64 = 0x7475_6e62_0000_0002
)

// MACsec is the macsec method.
//
// Options: "cipher" (gcm-aes-128 or gcm-aes-256, default gcm-aes-128),
// "encrypt" (on or off: integrity only; default on).
type MACsec struct {
	// keys is where the SAKs come from: crypto/rand when nil (tests give
	// a fixed source for their golden files).
	keys io.Reader
}

func (MACsec) Name() string { return "macsec" }

// Scale says macsec sets up one secured link (method.Scaler).
func (MACsec) Scale(string, method.Values) method.Scale {
	return method.Scale{Unit: "secured link (macsec device, one secure channel each way)", Max: 1,
		Why: "macsec secures the one underlay link between the two endpoints; there is no second link between them to secure"}
}

// Listens declares no socket (method.Listener): MACsec is Ethernet
// framing on the underlay device.
func (MACsec) Listens(method.Values, string) []method.Listen { return nil }
func (MACsec) Implementation() string {
	return "kernel MACsec (IEEE 802.1AE) on the underlay link, static SAKs (ip macsec)"
}
func (MACsec) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead is the SecTAG with the SCI (16 bytes) and the ICV (16 bytes),
// 32 whatever the family, cipher or encryption: MACsec adds no IP header
// (the original EtherType moves behind the SecTAG, into the secure data).
func (MACsec) Overhead(string) int { return SecTAGLen + ICVLen }

// Options declares the scenario options (see Option).
func (MACsec) Options() []method.Option {
	return []method.Option{
		{Name: "cipher", Default: CipherGCMAES128, Values: []string{CipherGCMAES128, CipherGCMAES256},
			Help: "MACsec cipher suite (the SAKs are 128 or 256 bits)"},
		{Name: "encrypt", Default: "on", Values: []string{"on", "off"},
			Help: "on: confidentiality and integrity; off: integrity only (the payload travels in the clear)"},
	}
}

func (MACsec) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_MACSEC", Module: "macsec"},
		{Program: "ip", Package: "iproute2"},
	}
}

// The macsec device reaches this process from a remote agent as a
// GenericLink (the netlink package has no MACsec type).
func init() { testbed.RegisterWireTypes(&netlink.GenericLink{}) }

func devName(env *method.Env) string { return env.Prefix + "-msec" }

func sciHex(sci uint64) string { return fmt.Sprintf("%016x", sci) }

// keys are the SAKs of a run, in hex: the one a sends with (b receives
// with it) and the one b sends with.
type keys struct{ a, b string }

// newKeys draws the two SAKs for cipher from r.
func newKeys(r io.Reader, cipher string) (keys, error) {
	n := 16
	if cipher == CipherGCMAES256 {
		n = 32
	}
	buf := make([]byte, 2*n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return keys{}, fmt.Errorf("macsec: generate the SAKs: %w", err)
	}
	k := keys{a: hex.EncodeToString(buf[:n]), b: hex.EncodeToString(buf[n:])}
	clear(buf)
	return k, nil
}

// side is what one side sets up: its device over the underlay device,
// its transmit channel and the receive channel of its peer.
type side struct {
	dev, parent      string
	sci, peerSCI     uint64
	txKey, rxKey     string
	txKeyID, rxKeyID string
}

// linkArgs is the "ip link add" of the side's device.
func (s side) linkArgs(cipher string, encrypt bool) []string {
	enc := "off"
	if encrypt {
		enc = "on"
	}
	return []string{"ip", "link", "add", "link", s.parent, "name", s.dev, "type", "macsec",
		"sci", sciHex(s.sci), "cipher", cipher, "icvlen", fmt.Sprint(ICVLen), "encrypt", enc,
		"send_sci", "on", "protect", "on", "validate", "strict"}
}

// batch is what "ip -batch -" reads: the transmit SA, the peer's receive
// channel and its SA, each keyed. It holds the keys.
func (s side) batch() string {
	var b strings.Builder
	fmt.Fprintf(&b, "macsec add %s tx sa 0 pn 1 on key %s %s\n", s.dev, s.txKeyID, s.txKey)
	fmt.Fprintf(&b, "macsec add %s rx sci %s on\n", s.dev, sciHex(s.peerSCI))
	fmt.Fprintf(&b, "macsec add %s rx sci %s sa 0 pn 1 on key %s %s\n", s.dev, sciHex(s.peerSCI), s.rxKeyID, s.rxKey)
	return b.String()
}

// plan is the method's plan for each side of env (a, b): the macsec
// device over the underlay device, with its secure channels, the side's
// overlay address and the overlay MTU. It is pure.
func (MACsec) plan(env *method.Env, cipher string, encrypt bool, k keys) [2]method.Plan {
	oa, ob := method.Overlay(env.Family)
	name := devName(env)
	sides := [2]side{
		{dev: name, parent: env.A.Dev, sci: SCIA, peerSCI: SCIB, txKey: k.a, rxKey: k.b, txKeyID: "01", rxKeyID: "02"},
		{dev: name, parent: env.B.Dev, sci: SCIB, peerSCI: SCIA, txKey: k.b, rxKey: k.a, txKeyID: "02", rxKeyID: "01"},
	}
	var plans [2]method.Plan
	for i := range env.Endpoints() {
		s := sides[i]
		plans[i] = method.Plan{Links: []method.PlanLink{{
			Link:   &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: name}, LinkType: "macsec"},
			Kind:   "macsec",
			Detail: "over " + s.parent,
			Add:    func(ep *testbed.Endpoint) error { return add(ep, s, cipher, encrypt) },
			Config: "CONFIG_MACSEC",
			MTU:    env.OverlayMTU,
			Addr:   [2]netip.Prefix{oa, ob}[i],
		}}}
	}
	return plans
}

// add creates the side's device, then its secure channels and SAs. A
// kernel without MACsec answers "Unknown device type" (no "macsec" link
// kind), which is EOPNOTSUPP for Plan.Apply. Errors never quote the keys.
func add(ep *testbed.Endpoint, s side, cipher string, encrypt bool) error {
	ctx := context.Background()
	if out, err := ep.Run(ctx, s.linkArgs(cipher, encrypt)...); err != nil {
		if t := string(out); strings.Contains(t, "Unknown device type") || strings.Contains(t, "Operation not supported") {
			return fmt.Errorf("%s: %w", strings.TrimSpace(t), unix.EOPNOTSUPP)
		}
		return err
	}
	cmd := ep.Command(ctx, "ip", "-batch", "-")
	cmd.Stdin = strings.NewReader(s.batch())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := ep.Start(cmd); err != nil {
		return err
	}
	err := cmd.Wait()
	ep.Forget(cmd)
	if err != nil {
		text := strings.NewReplacer(s.txKey, "<key>", s.rxKey, "<key>").Replace(out.String())
		return fmt.Errorf("%s: ip macsec (secure channels of %s): %v: %s", ep.Side, s.dev, err, strings.TrimSpace(text))
	}
	return nil
}

// Setup draws the run's two SAKs and creates the macsec device on both
// sides with the overlay address on it.
func (m MACsec) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	cipher, encrypt := opts.String("cipher"), opts.On("encrypt")
	src := m.keys
	if src == nil {
		src = rand.Reader
	}
	k, err := newKeys(src, cipher)
	if err != nil {
		return nil, err
	}
	plans := m.plan(env, cipher, encrypt, k)
	for i, ep := range env.Endpoints() {
		if err := plans[i].Apply(env, ep); err != nil {
			return nil, err
		}
	}
	oa, ob := method.Overlay(env.Family)
	name := devName(env)
	return &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: fmt.Sprintf("%s, encrypt %s", cipher, opts.String("encrypt")),
	}, nil
}

// Teardown deletes both macsec devices, and with them their SAs and keys.
func (MACsec) Teardown(_ context.Context, env *method.Env) error {
	return method.EachSide(env, func(ep *testbed.Endpoint) error { return method.DelLinks(ep, devName(env)) })
}
