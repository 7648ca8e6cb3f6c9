package wireguard_test

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/wireguard"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// wgConfigureArgs has the fields of the wireguard.configure op's
// arguments (gob matches them by name).
type wgConfigureArgs struct {
	Dev string
	Cfg wgtypes.Config
}

// wgSetLine is a configuration as "wg set" takes it, every key <key>.
func wgSetLine(a wgConfigureArgs) string {
	c := a.Cfg
	f := []string{"wg set", a.Dev}
	if c.PrivateKey != nil {
		f = append(f, "private-key", testbedtest.KeyText)
	}
	if c.ListenPort != nil {
		f = append(f, "listen-port", fmt.Sprint(*c.ListenPort))
	}
	if c.ReplacePeers {
		f = append(f, "replace-peers")
	}
	for _, p := range c.Peers {
		f = append(f, "peer", testbedtest.KeyText)
		if p.PresharedKey != nil {
			f = append(f, "preshared-key", testbedtest.KeyText)
		}
		if p.Endpoint != nil {
			f = append(f, "endpoint", p.Endpoint.String())
		}
		var ips []string
		for _, n := range p.AllowedIPs {
			ips = append(ips, n.String())
		}
		f = append(f, "allowed-ips", strings.Join(ips, ","))
	}
	return strings.Join(f, " ")
}

// answerWireGuard makes r answer the wgctrl ops of kernel WireGuard: a
// configuration is recorded as "wg set", a device read shows every peer
// configured with a completed handshake, a handshake trigger is recorded
// as the datagram it sends. The first configuration is stored in *cfg,
// with the peers of the later ones (batches) appended.
func answerWireGuard(r *testbedtest.Recorder, cfg *wgtypes.Config) {
	var peers []wgtypes.Peer
	testbedtest.AnswerOp(r, "wireguard.configure", func(a wgConfigureArgs) (string, struct{}, error) {
		if a.Cfg.PrivateKey != nil {
			*cfg = a.Cfg
		} else {
			cfg.Peers = append(cfg.Peers, a.Cfg.Peers...)
		}
		for _, p := range a.Cfg.Peers {
			peers = append(peers, wgtypes.Peer{PublicKey: p.PublicKey, AllowedIPs: p.AllowedIPs, LastHandshakeTime: time.Unix(1, 0)})
		}
		return wgSetLine(a), struct{}{}, nil
	})
	testbedtest.AnswerOp(r, "wireguard.device", func(dev string) (string, *wgtypes.Device, error) {
		return "", &wgtypes.Device{Name: dev, Peers: peers}, nil
	})
	testbedtest.AnswerOp(r, "wireguard.tun", func(dev string) (string, struct{}, error) {
		return "ip tuntap add dev " + dev + " mode tun multi_queue", struct{}{}, r.Know(dev, "tun")
	})
	testbedtest.AnswerOp(r, "udp.kick", func(to netip.AddrPort) (string, struct{}, error) {
		return "send udp to " + to.String(), struct{}{}, nil
	})
}

// TestWireGuardPlans sets kernel WireGuard up and tears it down on two
// recording endpoints in each family and compares what it did to each
// host with testdata/wireguard-<family>.golden (rewrite with -update):
// without root, on a kernel without WireGuard too. The userspace
// WireGuards start daemons and are checked by their integration tests.
func TestWireGuardPlans(t *testing.T) {
	t.Parallel()
	m := wireguard.WireGuard{}
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			rec := methodtest.RecordEnv(m, family, nil)
			var ca, cb wgtypes.Config
			answerWireGuard(rec.A, &ca)
			answerWireGuard(rec.B, &cb)
			testbedtest.Golden(t, m.Name()+"-"+family, methodtest.Record(t, m, rec), *update)
			// What the redacted lines cannot show: each side's peer is
			// the other's public key, with one preshared key.
			if ca.PrivateKey == nil || cb.PrivateKey == nil || len(ca.Peers) != 1 || len(cb.Peers) != 1 {
				t.Fatalf("configurations without a private key and one peer: %v %v", ca.PrivateKey != nil, cb.PrivateKey != nil)
			}
			if ca.Peers[0].PublicKey != cb.PrivateKey.PublicKey() || cb.Peers[0].PublicKey != ca.PrivateKey.PublicKey() {
				t.Error("a side's peer key is not the other side's public key")
			}
			if *ca.Peers[0].PresharedKey != *cb.Peers[0].PresharedKey || *ca.PrivateKey == *cb.PrivateKey {
				t.Error("the sides do not share one preshared key, or share a private key")
			}
		})
	}
}

// TestWireGuardNotSupportedRecorded: on a kernel without WireGuard
// (Env.Faults) Setup fails with ErrNotSupported naming the option, having
// created no device.
func TestWireGuardNotSupportedRecorded(t *testing.T) {
	t.Parallel()
	m := wireguard.WireGuard{}
	rec := methodtest.RecordEnv(m, method.IPv4, nil)
	var cfg wgtypes.Config
	answerWireGuard(rec.A, &cfg)
	answerWireGuard(rec.B, &cfg)
	rec.Env.Faults = &method.Faults{KernelLacks: []string{"CONFIG_WIREGUARD"}}
	_, err := m.Setup(t.Context(), rec.Env)
	if !errors.Is(err, method.ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), "kernel lacks CONFIG_WIREGUARD") {
		t.Errorf("Setup error %v, want ErrNotSupported naming CONFIG_WIREGUARD", err)
	}
	for _, l := range rec.A.Lines() {
		if strings.HasPrefix(l, "ip link add") {
			t.Errorf("a: %s on a kernel without WireGuard", l)
		}
	}
}

// uapiArgs has the fields of the wireguard.uapi op's arguments.
type uapiArgs struct{ Sock, Req string }

// uapiKey is a key in a UAPI request.
var uapiKey = regexp.MustCompile(`(private_key|public_key|preshared_key)=[0-9a-f]{64}`)

// uapiPeer is a peer's public key in a UAPI request.
var uapiPeer = regexp.MustCompile(`public_key=[0-9a-f]{64}`)

// answerUserspace makes r answer a userspace WireGuard daemon: program
// prints version, the daemon (started through unshare) creates its
// device and socket and removes the device as it exits, a UAPI set is
// recorded as "uapi set" with its lines (keys <key>), a UAPI get shows
// every peer set with a handshake. A daemon started on a device that exists (one tunbench
// created, recorded as "ip tuntap add") attaches to it and leaves it
// behind when it exits.
func answerUserspace(r *testbedtest.Recorder, program, version string) {
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		if len(argv) == 2 && argv[0] == program && argv[1] == "--version" {
			return testbedtest.Answer{Output: version + "\n"}
		}
		if argv[0] == "unshare" && slices.Contains(argv, program) {
			dev := argv[len(argv)-1]
			if _, err := r.LinkByName(dev); err == nil {
				// It attaches to the device tunbench created
				// (boringtun), which outlives it.
				return testbedtest.Answer{Runs: true}
			}
			if err := r.Know(dev, "tun"); err != nil {
				return testbedtest.Answer{Err: err}
			}
			return testbedtest.Answer{Runs: true, OnStop: func() { r.Forget(dev) }}
		}
		return testbedtest.Answer{Err: fmt.Errorf("unexpected command %q", argv)}
	})
	testbedtest.AnswerOp(r, "unix.accepts", func(string) (string, bool, error) { return "", true, nil })
	var peers []string
	testbedtest.AnswerOp(r, "wireguard.uapi", func(a uapiArgs) (string, []string, error) {
		if strings.HasPrefix(a.Req, "get=1") {
			var get []string
			for _, p := range peers {
				get = append(get, p, "last_handshake_time_sec=1", "last_handshake_time_nsec=0")
			}
			return "", get, nil
		}
		peers = append(peers, uapiPeer.FindAllString(a.Req, -1)...)
		req := uapiKey.ReplaceAllString(strings.TrimSpace(a.Req), "$1="+testbedtest.KeyText)
		return "uapi " + filepath.Base(a.Sock) + " " + strings.ReplaceAll(req, "\n", " "), nil, nil
	})
	testbedtest.AnswerOp(r, "wireguard.tun", func(dev string) (string, struct{}, error) {
		return "ip tuntap add dev " + dev + " mode tun multi_queue", struct{}{}, r.Know(dev, "tun")
	})
	testbedtest.AnswerOp(r, "udp.kick", func(to netip.AddrPort) (string, struct{}, error) {
		return "send udp to " + to.String(), struct{}{}, nil
	})
}

// TestWireGuardUserspacePlans is TestWireGuardPlans for wireguard-go and
// boringtun: the daemon each side starts (in its private mount
// namespace), the device and UAPI configuration, and the teardown.
func TestWireGuardUserspacePlans(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		m                func() method.Method
		program, version string
	}{
		{func() method.Method { return wireguard.NewWireGuardGo() }, "wireguard-go", "wireguard-go v0.0.20230223"},
		{func() method.Method { return wireguard.NewBoringTun() }, "boringtun-cli", "boringtun 0.6.0"},
	} {
		for _, family := range tt.m().Families() {
			t.Run(tt.m().Name()+"-"+family, func(t *testing.T) {
				t.Parallel()
				// A method value of its own: the recorded runs share
				// Env.Dir, by which a userspace WireGuard keeps its
				// daemons.
				m := tt.m()
				rec := methodtest.RecordEnv(m, family, nil)
				answerUserspace(rec.A, tt.program, tt.version)
				answerUserspace(rec.B, tt.program, tt.version)
				testbedtest.Golden(t, m.Name()+"-"+family, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}
