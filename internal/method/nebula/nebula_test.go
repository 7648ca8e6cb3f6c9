package nebula_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/nebula"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// needNebula fails in strict mode, and skips otherwise, when nebula or
// nebula-cert is missing, with the line that installs them.
func needNebula(t *testing.T) {
	t.Helper()
	for _, p := range []string{"nebula", "nebula-cert"} {
		testenv.NeedProgram(t, p, nebula.Install)
	}
}

func TestNebulaOverhead(t *testing.T) {
	m := nebula.New()
	for _, tt := range []struct {
		family            string
		underlay, overlay int
	}{
		{method.IPv4, 1500, 1440},
		{method.IPv6, 1500, 1420},
		{method.IPv4, 9000, 8940},
	} {
		if got := tt.underlay - m.Overhead(tt.family); got != tt.overlay {
			t.Errorf("%s: overlay MTU over %d = %d, want %d", tt.family, tt.underlay, got, tt.overlay)
		}
	}
}

func TestNebulaRequirements(t *testing.T) {
	var programs []string
	for _, r := range nebula.New().Requirements() {
		if r.Program == "nebula" || r.Program == "nebula-cert" {
			programs = append(programs, r.Program)
			if r.Optional || !strings.Contains(r.Install, "github.com/slackhq/nebula/cmd/"+r.Program+"@v"+nebula.Version) {
				t.Errorf("%s requirement = %+v, want a required program with a pinned go install line", r.Program, r)
			}
		}
	}
	if diff := cmp.Diff([]string{"nebula", "nebula-cert"}, programs); diff != "" {
		t.Errorf("required programs (-want +got):\n%s", diff)
	}
}

func TestNebulaOptions(t *testing.T) {
	m := nebula.New()
	v, err := method.ParseOptions(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.String("cipher") != "aes" || v.Int("port") != 4242 {
		t.Errorf("defaults: cipher %q, port %d; want aes, 4242", v.String("cipher"), v.Int("port"))
	}
	for _, bad := range []map[string]string{{"cipher": "aes256gcm"}, {"cipher": ""}, {"port": "0"}, {"port": "65536"}, {"routines": "2"}} {
		if _, err := method.ParseOptions(m, bad); err == nil {
			t.Errorf("options %v accepted", bad)
		}
	}
}

// TestNebula runs nebula for real over both families, and with each
// cipher: set up, ping both ways, a full-size ping (the overhead), iperf3
// and tunbench's request/response through it, with a's underlay captured
// and checked (Nebula's UDP, on the chosen port only); the run's key
// material stays in its 0600 files; teardown leaves nothing.
func TestNebula(t *testing.T) {
	needNebula(t)
	for _, tt := range []struct {
		family string
		opts   map[string]string
	}{
		{method.IPv4, nil},
		{method.IPv6, nil},
		{method.IPv4, map[string]string{"cipher": "chachapoly", "port": "4299"}},
		{method.IPv6, map[string]string{"cipher": "chachapoly"}},
	} {
		name := tt.family + "/" + tt.opts["cipher"]
		t.Run(strings.TrimSuffix(name, "/"), func(t *testing.T) { runNebula(t, tt.family, tt.opts) })
	}
}

func runNebula(t *testing.T, family string, opts map[string]string) {
	m := nebula.New()
	l, env, path := methodtest.Setup(t, m, family, 1500, opts)
	vals, err := method.ParseOptions(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	cipher, port := vals.String("cipher"), vals.Int("port")
	if !strings.HasPrefix(path.Variant, "nebula "+nebula.Version) || !strings.HasSuffix(path.Variant, "cipher "+cipher) {
		t.Errorf("variant %q, want nebula %s with cipher %s", path.Variant, nebula.Version, cipher)
	}
	methodtest.DeviceMTU(t, l, path, env.OverlayMTU)
	dirs := []string{filepath.Join(env.Dir, "nebula-a"), filepath.Join(env.Dir, "nebula-b")}
	secrets := nebulaSecrets(t, dirs)
	for i, ep := range l.Endpoints() {
		if dev := path.Devices[ep.Side][0]; dev != env.Prefix+"-nb"+ep.Side {
			t.Errorf("%s: device %q, want %q", ep.Side, dev, env.Prefix+"-nb"+ep.Side)
		}
		if d := path.Daemons[i]; d.Side != ep.Side || d.Role != "nebula" {
			t.Errorf("daemon %d = %+v", i, d)
		}
		cfg, err := os.ReadFile(filepath.Join(dirs[i], "config.yml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cipher: " + cipher, fmt.Sprintf("port: %d", port), "punch: false", "am_lighthouse: " + strconv.FormatBool(ep.Side == "b")} {
			if !strings.Contains(string(cfg), want) {
				t.Errorf("%s: config.yml lacks %q", ep.Side, want)
			}
		}
	}
	if len(path.Daemons) != 2 {
		t.Fatalf("daemons = %+v, want one per side", path.Daemons)
	}
	methodtest.NoSecrets(t, "Path", fmt.Sprintf("%+v %s", *path, path.Variant), secrets)

	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.Ping(t, l, path)
	if out, err := l.B.Run(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "3", path.A.String()); err != nil {
		t.Fatalf("ping %s from b: %v\n%s", path.A, err, out)
	}
	methodtest.PingFullSize(t, l, env, path)
	gbps := methodtest.Gbps(t, methodtest.Iperf3(t, l, path, 1))
	lat := methodtest.RRThrough(t, l, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	checkNebulaWire(t, l, env, frames, port)
	t.Logf("nebula/%s (%s): %.2f Gbit/s, one TCP stream, 1 s; rr: %d transactions, p50 %.0f µs", family, path.Variant, gbps, lat.Samples, lat.P50)

	methodtest.NoSecretsInFiles(t, env.Dir, secrets, func(n string) bool { return n == "host.key" })
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, d := range path.Daemons {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", d.PID)); err == nil {
			t.Errorf("%s nebula (pid %d) still runs after teardown", d.Side, d.PID)
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("side directory %s (keys, certificates) left after teardown: %v", dir, err)
		}
	}
}

// nebulaSecrets checks the run's key files: each side has its host key,
// 0600, and the CA key is nowhere in the run directory (deleted once
// both certificates are signed). It returns the keys' PEM bodies.
func nebulaSecrets(t *testing.T, dirs []string) []string {
	t.Helper()
	var secrets []string
	for _, dir := range dirs {
		for _, name := range []string{"ca.crt", "host.crt", "host.key"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%v", err)
			}
		}
		file := filepath.Join(dir, "host.key")
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", file, st.Mode().Perm())
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var body []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if !strings.HasPrefix(line, "-----") {
				body = append(body, line)
			}
		}
		if len(body) == 0 || !strings.Contains(string(data), "PRIVATE KEY") {
			t.Fatalf("%s is no PEM private key", file)
		}
		secrets = append(secrets, strings.Join(body, ""), body[0])
	}
	root := filepath.Dir(dirs[0])
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "ca.key" || d.Name() == "pki" {
			t.Errorf("%s left in the run directory after set-up", p)
		}
		if d.Type().IsRegular() && d.Name() != "host.key" {
			if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "PRIVATE KEY") {
				t.Errorf("%s holds a private key", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return secrets
}

// checkNebulaWire checks a's underlay as captured: every UDP datagram
// between the underlay addresses is on port at both ends and is a Nebula
// message (version 1, a known type), never plain traffic; most are data
// messages (type 1); the overlay addresses never appear in an outer
// header; and the largest a-to-b datagram fills the underlay MTU exactly,
// unfragmented (the full-size ping: the overhead holds).
func checkNebulaWire(t *testing.T, l *localns.Local, env *method.Env, frames []wire.Frame, port int) {
	t.Helper()
	oa, ob := method.Overlay(env.Family)
	ua, ub := l.A.Addr(env.Family), l.B.Addr(env.Family)
	types := map[uint8]int{}
	largest := 0
	for _, f := range frames {
		if f.Family == "" {
			continue
		}
		for _, a := range []netip.Addr{f.Src, f.Dst} {
			if a == oa.Addr() || a == ob.Addr() {
				t.Fatalf("overlay address %s in an outer header on the underlay: %s", a, f)
			}
		}
		between := (f.Src == ua && f.Dst == ub) || (f.Src == ub && f.Dst == ua)
		if !between || (f.Family == method.IPv6 && f.Proto == wire.ProtoICMPv6) {
			continue // neighbour discovery
		}
		if f.Fragment {
			t.Errorf("fragmented underlay frame %s", f)
		}
		if f.Proto != wire.ProtoUDP {
			t.Errorf("non-UDP frame between the underlay addresses: %s", f)
			continue
		}
		if int(f.SrcPort) != port || int(f.DstPort) != port {
			t.Errorf("UDP %d -> %d on the underlay, want Nebula on port %d at both ends", f.SrcPort, f.DstPort, port)
			continue
		}
		if len(f.Payload) < 16 || f.Payload[0]>>4 != 1 || f.Payload[0]&0x0f > 6 {
			t.Fatalf("UDP payload on port %d is no Nebula message: % x", port, f.Payload[:min(len(f.Payload), 16)])
		}
		typ := f.Payload[0] & 0x0f
		types[typ]++
		if typ == 1 && f.Src == ua {
			largest = max(largest, f.IPLen)
		}
	}
	t.Logf("Nebula messages on the underlay by type: %v", types)
	if types[1] < 100 {
		t.Errorf("%d data messages (type 1), want many", types[1])
	}
	if largest != env.UnderlayMTU {
		t.Errorf("largest data message a -> b is %d bytes on the underlay, want exactly the underlay MTU %d (overhead %d)",
			largest, env.UnderlayMTU, env.UnderlayMTU-env.OverlayMTU)
	}
}

// TestNebulaUnreachable blackholes b's underlay address in a's namespace
// before Setup, so no handshake can complete: Setup fails naming the
// missing tunnel and quoting both daemons' logs, and Teardown after it
// (twice) leaves no link, daemon or file behind.
func TestNebulaUnreachable(t *testing.T) {
	needNebula(t)
	m := nebula.New()
	m.HandshakeTimeout = 3 * time.Second
	l := testbedtest.New(t, 1500)
	blackhole := &netlink.Route{Dst: testbed.PrefixNet(netip.PrefixFrom(l.B.Addr4.Addr(), 32)), Type: unix.RTN_BLACKHOLE}
	if err := l.A.NL.RouteAdd(blackhole); err != nil {
		t.Fatalf("a: blackhole %s: %v", l.B.Addr4.Addr(), err)
	}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(method.IPv4),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	ctx := context.Background()
	path, err := m.Setup(ctx, env)
	if err == nil {
		t.Errorf("Setup with b unreachable succeeded: %+v", path)
	} else {
		t.Logf("Setup error (expected):\n%v", err)
		for _, want := range []string{"a: nebula: no ping through nebula from a", "b: nebula: ", "--- last lines of nebula.log (a) ---", "--- last lines of nebula.log (b) ---"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Setup error does not contain %q", want)
			}
		}
	}
	for i := range 2 {
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("Teardown %d after failed Setup: %v", i+1, err)
		}
	}
	after := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("links after teardown (-before +after):\n%s", diff)
	}
	for _, side := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(env.Dir, "nebula-"+side)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("side directory nebula-%s left after teardown: %v", side, err)
		}
	}
}
