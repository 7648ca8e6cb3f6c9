package macsec_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/macsec"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// fakeKey is every byte of the golden tests' SAKs: a fixed fake key.
const fakeKey = 0x5a

type fixed struct{}

func (fixed) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = fakeKey
	}
	return len(p), nil
}

func TestMACsecOverhead(t *testing.T) {
	for _, f := range []string{method.IPv4, method.IPv6} {
		if got := (macsec.MACsec{}).Overhead(f); got != 16+16 {
			t.Errorf("%s: overhead %d, want 32 (SecTAG with SCI 16 + ICV 16)", f, got)
		}
	}
}

// TestMACsecOptions: bad options are refused, naming the option and its
// values, before anything is created (a nil testbed is fine).
func TestMACsecOptions(t *testing.T) {
	for _, tt := range []struct {
		opts    map[string]string
		wantErr string
	}{
		{map[string]string{"cipher": "gcm-aes-xpn-128"}, `macsec: option cipher="gcm-aes-xpn-128": want one of gcm-aes-128, gcm-aes-256`},
		{map[string]string{"encrypt": "yes"}, `macsec: option encrypt="yes": want one of on, off`},
		{map[string]string{"key": "00"}, `macsec: unknown option "key": valid options are cipher, encrypt`},
	} {
		_, err := macsec.MACsec{}.Setup(context.Background(), &method.Env{Family: method.IPv4, Options: tt.opts})
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: Setup error %v, want %q", tt.opts, err, tt.wantErr)
		}
	}
}

// answerMACsec makes r know the device "ip link add ... type macsec"
// creates.
func answerMACsec(r *testbedtest.Recorder, dev string) {
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		if len(argv) > 3 && argv[1] == "link" && argv[2] == "add" {
			_ = r.Know(dev, "macsec")
		}
		return testbedtest.Answer{}
	})
}

// TestMACsecPlans sets macsec up and tears it down on two recording
// endpoints and compares what it did with testdata/<name>.golden
// (rewrite with -update), the fixed fake SAKs written <key>.
func TestMACsecPlans(t *testing.T) {
	t.Parallel()
	m := macsec.WithKeys(fixed{})
	for _, tt := range []struct {
		name, family string
		opts         map[string]string
		keyLen       int
	}{
		{"ipv4", method.IPv4, nil, 16},
		{"ipv6", method.IPv6, nil, 16},
		{"gcm-aes-256-integrity", method.IPv4, map[string]string{"cipher": "gcm-aes-256", "encrypt": "off"}, 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := methodtest.RecordEnv(m, tt.family, tt.opts)
			answerMACsec(rec.A, methodtest.RecordPrefix+"-msec")
			answerMACsec(rec.B, methodtest.RecordPrefix+"-msec")
			key := hex.EncodeToString(bytes.Repeat([]byte{fakeKey}, tt.keyLen))
			lines := methodtest.Record(t, m, rec)
			n := 0
			for i, l := range lines {
				n += strings.Count(l, key)
				lines[i] = testbedtest.Redact(l, key)
			}
			if n != 4 {
				t.Errorf("the %d-byte fake key went %d times to ip, want 4 (tx and rx SA each side)", tt.keyLen, n)
			}
			testbedtest.Golden(t, "macsec-"+tt.name, lines, *update)
		})
	}
}

// TestMACsecRefusalsRecorded: on a kernel without CONFIG_MACSEC
// (Env.Faults), Setup fails with ErrNotSupported naming it before
// anything is created, and Teardown succeeds.
func TestMACsecRefusalsRecorded(t *testing.T) {
	t.Parallel()
	m := macsec.WithKeys(fixed{})
	rec := methodtest.RecordEnv(m, method.IPv4, nil)
	rec.Env.Faults = &method.Faults{KernelLacks: []string{"CONFIG_MACSEC"}}
	_, err := m.Setup(t.Context(), rec.Env)
	if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks CONFIG_MACSEC") {
		t.Errorf("Setup error %v, want ErrNotSupported naming CONFIG_MACSEC", err)
	}
	if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
		t.Errorf("a refused Setup changed the hosts: %q", lines)
	}
	if err := m.Teardown(t.Context(), rec.Env); err != nil {
		t.Errorf("Teardown after a refused Setup: %v", err)
	}
}

// TestMACsecByKernel runs Setup on this host's kernel, for real: where
// it lacks MACsec (the development machine) Setup fails with
// ErrNotSupported naming CONFIG_MACSEC; where it has it, Setup
// succeeds. Either way Teardown succeeds and leaves the links as they
// were.
func TestMACsecByKernel(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	m := macsec.MACsec{}
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(method.IPv4), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	before := fmt.Sprint(methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B))
	_, err := m.Setup(t.Context(), env)
	switch {
	case err == nil:
		t.Log("this kernel carries MACsec")
	case !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks CONFIG_MACSEC"):
		t.Errorf("Setup error %v, want ErrNotSupported naming CONFIG_MACSEC", err)
	default:
		t.Logf("refused: %v", err)
	}
	if err := m.Teardown(t.Context(), env); err != nil {
		t.Errorf("Teardown: %v", err)
	}
	if after := fmt.Sprint(methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)); after != before {
		t.Errorf("links after Teardown %s, before %s", after, before)
	}
}

// recording is a key source that keeps what it gave, for the secrets
// checks.
type recording struct {
	mu   sync.Mutex
	seen []byte
}

func (r *recording) Read(p []byte) (int, error) {
	n, err := io.ReadFull(rand.Reader, p)
	r.mu.Lock()
	r.seen = append(r.seen, p[:n]...)
	r.mu.Unlock()
	return n, err
}

// secrets are the hex SAKs drawn, for a cipher's key length.
func (r *recording) secrets(keyLen int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for i := 0; i+keyLen <= len(r.seen); i += keyLen {
		s = append(s, hex.EncodeToString(r.seen[i:i+keyLen]))
	}
	return s
}

// secTAG is a MACsec frame's SecTAG as the checks read it.
type secTAG struct {
	tci     byte // V ES SC SCB E C
	an      byte
	pn      uint32
	sci     uint64
	payload []byte // the secure data (as captured) after the SecTAG
}

// parseSecTAG reads the SecTAG of an Ethernet frame of EtherType 0x88e5.
func parseSecTAG(b []byte) (secTAG, bool) {
	if len(b) < 28 || binary.BigEndian.Uint16(b[12:]) != 0x88e5 {
		return secTAG{}, false
	}
	s := secTAG{tci: b[14] & 0xfc, an: b[14] & 0x03, pn: binary.BigEndian.Uint32(b[16:])}
	if s.tci&0x20 != 0 {
		s.sci, s.payload = binary.BigEndian.Uint64(b[20:]), b[28:]
	} else {
		s.payload = b[20:]
	}
	return s, true
}

// checkFrames checks every frame a sent on its underlay device (source
// MAC mac): the MACsec ones (SecTAG with a's SCI, E and C as encrypt
// says, AN 0) and that no other frame carries the overlay addresses. It
// returns how many MACsec frames there were, how many of those were
// (integrity only) readable echo requests from path.A to path.B, and the
// longest MACsec frame on the wire.
func checkFrames(t *testing.T, pkts []gopacket.Packet, mac net.HardwareAddr, path *method.Path, encrypt bool) (n, echo, longest int) {
	t.Helper()
	for _, p := range pkts {
		b := p.Data()
		if len(b) < 14 || !bytes.Equal(b[6:12], mac) {
			continue
		}
		s, ok := parseSecTAG(b)
		if !ok {
			if f, _ := wire.Decode(b); f.Src == path.A || f.Dst == path.B || f.Inner != nil && f.Inner.Src == path.A {
				t.Errorf("overlay traffic outside MACsec on the underlay: %s", f)
			}
			continue
		}
		n++
		longest = max(longest, p.Metadata().Length)
		const sc, e, c = 0x20, 0x08, 0x04
		switch {
		case s.tci&0xd0 != 0 || s.tci&sc == 0:
			t.Errorf("TCI %#02x: want SC set, V, ES and SCB clear", s.tci)
		case (s.tci&e != 0) != encrypt || (s.tci&c != 0) != encrypt:
			t.Errorf("TCI %#02x: E and C should be %v (encrypt)", s.tci, encrypt)
		case s.an != 0 || s.pn == 0:
			t.Errorf("AN %d PN %d: want AN 0 and a packet number", s.an, s.pn)
		case s.sci != macsec.SCIA:
			t.Errorf("SCI %016x, want a's %016x", s.sci, macsec.SCIA)
		}
		// The secure data: the original EtherType and the packet, in the
		// clear when encrypt is off.
		var inner wire.Frame
		if len(s.payload) > 2 {
			_ = wire.DecodeInner(&inner, binary.BigEndian.Uint16(s.payload), s.payload[2:])
		}
		readable := inner.Inner != nil && inner.Inner.Src == path.A && inner.Inner.Dst == path.B
		if encrypt && readable {
			t.Errorf("encrypted MACsec frame (PN %d) carries the overlay packet in the clear", s.pn)
		}
		if readable && (inner.Inner.Proto == wire.ProtoICMP || inner.Inner.Proto == wire.ProtoICMPv6) {
			echo++
		}
	}
	return n, echo, longest
}

// labCase is one lab run of macsec.
type labCase struct {
	name, family string
	opts         map[string]string
	keyLen       int
}

var labCases = []labCase{
	{"gcm-aes-128-ipv4", method.IPv4, nil, 16},
	{"gcm-aes-256-ipv6", method.IPv6, map[string]string{"cipher": "gcm-aes-256"}, 32},
	{"integrity-only-ipv4", method.IPv4, map[string]string{"encrypt": "off"}, 16},
}

// run sets macsec up between a and b (endpoints of l, or agents over
// it), pings both ways, sends one full-size ping and one second of
// iperf3 while capturing a's underlay device, checks the frames and the
// keys, and leaves the teardown to the caller.
func run(t *testing.T, l *localns.Local, a, b *testbed.Endpoint, env *method.Env, tc labCase, keys *recording, dir string) {
	t.Helper()
	m := macsec.WithKeys(keys)
	ctx := context.Background()
	path, err := m.Setup(ctx, env)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	methodtest.DeviceMTUOn(t, []*testbed.Endpoint{a, b}, path, env.OverlayMTU)
	under, err := l.A.NL.LinkByName(l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	encrypt := tc.opts["encrypt"] != "off"

	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		from *testbed.Endpoint
		to   netip.Addr
	}{{a, path.B}, {b, path.A}} {
		if out, err := d.from.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", d.to.String()); err != nil {
			t.Fatalf("ping %s from %s: %v\n%s", d.to, d.from.Side, err, out)
		}
	}
	methodtest.PingFullSizeFrom(t, a, env, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	n, echo, longest := checkFrames(t, pkts, under.Attrs().HardwareAddr, path, encrypt)
	// 2 pings and the full-size one, at least.
	if n < 3 || (!encrypt && echo < 3) {
		t.Errorf("%d MACsec frames from a, %d readable echo requests (encrypt %v)", n, echo, encrypt)
	}
	if longest != env.UnderlayMTU+14 {
		t.Errorf("longest MACsec frame %d bytes, want the underlay MTU %d + 14 (overhead %d)", longest, env.UnderlayMTU, env.UnderlayMTU-env.OverlayMTU)
	}

	c, err = wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	out := methodtest.Iperf3Between(t, a, b, path, 1, 1)
	if pkts, err = c.Stop(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := checkFrames(t, pkts, under.Attrs().HardwareAddr, path, encrypt); n == 0 {
		t.Error("no MACsec frames under iperf3")
	}
	t.Logf("%s: %.2f Gbit/s", t.Name(), methodtest.Gbps(t, out))

	// The keys: in the kernel only. "ip macsec show" prints no key, and
	// no file of the run has one.
	secrets := keys.secrets(tc.keyLen)
	if len(secrets) != 2 {
		t.Fatalf("%d SAKs drawn, want 2", len(secrets))
	}
	for _, ep := range []*testbed.Endpoint{a, b} {
		show, err := ep.Run(ctx, "ip", "macsec", "show")
		if err != nil {
			t.Errorf("%s: ip macsec show: %v\n%s", ep.Side, err, show)
		}
		if !strings.Contains(string(show), fmt.Sprintf("%016x", macsec.SCIA)) {
			t.Errorf("%s: ip macsec show names no channel of a:\n%s", ep.Side, show)
		}
		methodtest.NoSecrets(t, "ip macsec show on "+ep.Side, string(show), secrets)
	}
	if dir != "" {
		methodtest.NoSecretsInFiles(t, dir, secrets, func(string) bool { return false })
	}
}

// TestLabMACsec carries traffic over MACsec on the underlay link in the
// kernel lab (the host lacks CONFIG_MACSEC): each cipher, with and
// without encryption, both families; every frame a sends on the underlay
// checked (SecTAG, SCI, E and C bits, nothing of the overlay in the
// clear), the full-size frame exactly the underlay MTU, the keys nowhere
// but in the kernel; teardown leaves the links as they were.
func TestLabMACsec(t *testing.T) {
	for _, tc := range labCases {
		t.Run(tc.name, func(t *testing.T) {
			m := macsec.MACsec{}
			methodtest.RequireTunnelKernel(t, m)
			l := testbedtest.New(t, 1500)
			env := &method.Env{A: l.A, B: l.B, Family: tc.family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(tc.family), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: tc.opts}
			before := fmt.Sprint(methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B))
			t.Cleanup(func() {
				for range 2 {
					if err := m.Teardown(context.Background(), env); err != nil {
						t.Errorf("Teardown: %v", err)
					}
				}
				if after := fmt.Sprint(methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)); after != before {
					t.Errorf("links after Teardown %s, before %s", after, before)
				}
			})
			run(t, l, l.A, l.B, env, tc, &recording{}, l.Dir)
		})
	}
}

// TestLabMACsecThroughAgents is TestLabMACsec between two agents in
// their own namespaces, as over SSH: the keys reach "ip" on the agent's
// host through the agent protocol, and nothing is left on either host.
func TestLabMACsecThroughAgents(t *testing.T) {
	tc := labCases[0]
	m := macsec.MACsec{}
	methodtest.RequireTunnelKernel(t, m)
	l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
	env := &method.Env{A: pair.A, B: pair.B, Family: tc.family, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(tc.family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir, Options: tc.opts}
	before := methodtest.AgentStateOf(t, pair)
	t.Cleanup(func() {
		for range 2 {
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Errorf("Teardown through agents: %v", err)
			}
		}
		methodtest.CheckAgentState(t, pair, before)
	})
	run(t, l, pair.A, pair.B, env, tc, &recording{}, "")
}
