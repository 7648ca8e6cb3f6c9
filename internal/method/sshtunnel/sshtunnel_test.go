package sshtunnel_test

import (
	"bytes"
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
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/sshtunnel"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// needSSH fails in strict mode, and skips otherwise, when ssh or sshd is
// missing.
func needSSH(t *testing.T) {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	for _, r := range sshtunnel.New().Requirements() {
		if r.Program != "" {
			testenv.NeedProgram(t, r.Program, r.Fix())
		}
	}
}

// record is the length of the SSH binary packet carrying an overlay
// packet of n bytes: length 4, then padding length 1, channel data header
// 9, AF header 4, the packet and 4 to 3+block bytes of padding making a
// multiple of block (16 for AES-GCM, 8 for ChaCha20-Poly1305), then the
// 16-byte tag.
func record(n, block int) int {
	body := 1 + 9 + 4 + n
	pad := block - body%block
	if pad < 4 {
		pad += block
	}
	return 4 + body + pad + 16
}

func blockOf(cipher string) int {
	if cipher == sshtunnel.ChaCha20Poly1305 {
		return 8
	}
	return 16
}

func TestOverhead(t *testing.T) {
	m := sshtunnel.New()
	if got := [2]int{m.Overhead(method.IPv4), m.Overhead(method.IPv6)}; got != [2]int{105, 125} {
		t.Errorf("overhead %v, want 105 / 125", got)
	}
	// The worst case holds at every MTU: a full-size overlay packet's SSH
	// packet fits one full-size outer TCP segment.
	for _, fam := range []string{method.IPv4, method.IPv6} {
		ip := 20
		if fam == method.IPv6 {
			ip = 40
		}
		for mtu := 1280; mtu <= 9000; mtu++ {
			mss := mtu - ip - 20 - 12
			for _, c := range []string{sshtunnel.ChaCha20Poly1305, sshtunnel.AES128GCM, sshtunnel.AES256GCM} {
				if r := record(mtu-m.Overhead(fam), blockOf(c)); r > mss {
					t.Fatalf("%s, mtu %d, %s: SSH packet %d bytes, outer MSS %d", fam, mtu, c, r, mss)
				}
			}
		}
	}
	if got := method.HeaderOverhead(m, method.IPv4, nil, ""); got != 105 {
		t.Errorf("HeaderOverhead = %d, want 105", got)
	}
}

func TestRequirements(t *testing.T) {
	want := map[string]string{"ssh": "openssh-client", "sshd": "openssh-server", "ip": "iproute2", "ping": "iputils-ping"}
	got := map[string]string{}
	tun := false
	for _, r := range sshtunnel.New().Requirements() {
		if r.Program != "" {
			got[r.Program] = r.Package
		}
		if r.Kernel == "CONFIG_TUN" && r.Module == "tun" {
			tun = true
		}
		if r.Optional {
			t.Errorf("%v is optional", r)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" || !tun {
		t.Errorf("programs (-want +got):\n%s; CONFIG_TUN with module tun: %v", diff, tun)
	}
}

// TestOptions: the default cipher and port, every cipher accepted, and a
// bad cipher, port or option refused naming the option and what it
// takes; Setup refuses them too before it creates anything.
func TestOptions(t *testing.T) {
	m := sshtunnel.New()
	v, err := method.ParseOptions(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.String("cipher") != sshtunnel.DefaultCipher || v.Int("port") != 0 {
		t.Errorf("defaults: cipher %q, port %d", v.String("cipher"), v.Int("port"))
	}
	for _, c := range []string{sshtunnel.ChaCha20Poly1305, sshtunnel.AES128GCM, sshtunnel.AES256GCM} {
		if _, err := method.ParseOptions(m, map[string]string{"cipher": c}); err != nil {
			t.Errorf("cipher %s: %v", c, err)
		}
	}
	for _, tt := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"cipher": "aes128-ctr"}, `ssh-tunnel: option cipher="aes128-ctr": want one of chacha20-poly1305@openssh.com, aes128-gcm@openssh.com, aes256-gcm@openssh.com`},
		{map[string]string{"cipher": "3des-cbc"}, `option cipher="3des-cbc"`},
		{map[string]string{"cipher": ""}, `option cipher=""`},
		{map[string]string{"port": "65536"}, `option port="65536": want an integer from 0 to 65535`},
		{map[string]string{"ciphers": "aes128-gcm@openssh.com"}, `unknown option "ciphers": valid options are cipher, port`},
	} {
		_, err := method.ParseOptions(m, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("options %v: error %v, want %q", tt.opts, err, tt.want)
		}
	}

	// Setup with a bad cipher fails before it creates anything.
	testbedtest.RequireNetAdmin(t)
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1395,
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: map[string]string{"cipher": "aes128-cbc"}}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	entries := func() []string {
		des, _ := os.ReadDir(l.Dir)
		var names []string
		for _, d := range des {
			if d.Name() != "pids" {
				names = append(names, d.Name())
			}
		}
		return names
	}
	filesBefore := entries()
	if _, err := m.Setup(context.Background(), env); err == nil || !strings.Contains(err.Error(), `option cipher="aes128-cbc": want one of`) {
		t.Errorf("Setup with a bad cipher: %v", err)
	}
	if diff := cmp.Diff(before, [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}); diff != "" {
		t.Errorf("links after a refused Setup (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(filesBefore, entries()); diff != "" {
		t.Errorf("run directory after a refused Setup (-before +after):\n%s", diff)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"OpenSSH_9.2p1 Debian-2+deb12u10, OpenSSL 3.0.19 27 Jan 2026\n": "OpenSSH 9.2p1, OpenSSL 3.0.19",
		"OpenSSH_9.9p1, LibreSSL 3.3.6":                                 "OpenSSH 9.9p1, LibreSSL 3.3.6",
		"OpenSSH_8.4p1":                                                 "OpenSSH 8.4p1",
		"usage: ssh [-46AaCf...]":                                       "OpenSSH (version unknown)",
		"":                                                              "OpenSSH (version unknown)",
	} {
		if got := sshtunnel.ParseVersion([]byte(in)); got != want {
			t.Errorf("ParseVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConfigs checks what the two sides are told: sshd listens on b's
// address and port only, admits root by the run's key only, permits the
// point-to-point tunnel and nothing else; ssh reads no user
// configuration, uses no agent, pins the host key, offers the one cipher.
func TestConfigs(t *testing.T) {
	dir := "/run/tunbench/x/ssh-tunnel-b"
	for _, tt := range []struct {
		addr string
		want string
	}{{"198.18.0.2", "ListenAddress 198.18.0.2:2222\nAddressFamily inet\n"}, {"2001:2::2", "ListenAddress [2001:2::2]:2222\nAddressFamily inet6\n"}} {
		cfg := sshtunnel.SSHDConfig(dir, netip.MustParseAddr(tt.addr), 2222, sshtunnel.AES256GCM)
		for _, want := range []string{tt.want, "PermitTunnel point-to-point\n", "PasswordAuthentication no\n", "KbdInteractiveAuthentication no\n",
			"AuthenticationMethods publickey\n", "PermitRootLogin prohibit-password\n", "UsePAM no\n", "AllowTcpForwarding no\n",
			"AllowAgentForwarding no\n", "X11Forwarding no\n", "PermitTTY no\n", "Ciphers aes256-gcm@openssh.com\n",
			"HostKey " + dir + "/ssh_host_ed25519_key\n", "PidFile " + dir + "/sshd.pid\n", "AuthorizedKeysFile " + dir + "/authorized_keys\n"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("sshd_config lacks %q:\n%s", want, cfg)
			}
		}
	}
	args := strings.Join(sshtunnel.ClientArgs("/d", netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), 2222, 7, 9, sshtunnel.AES128GCM), " ")
	for _, want := range []string{"ssh -F /dev/null -N -T -p 2222 -l root -i /d/id_ed25519 -w 7:9 ", "-o IdentityAgent=none", "-o IdentitiesOnly=yes",
		"-o UserKnownHostsFile=/d/known_hosts", "-o GlobalKnownHostsFile=/dev/null", "-o StrictHostKeyChecking=yes", "-o BatchMode=yes",
		"-o PasswordAuthentication=no", "-o Ciphers=aes128-gcm@openssh.com", "-o Tunnel=point-to-point", "-o ExitOnForwardFailure=yes",
		"-o BindAddress=198.18.0.1", "-o ForwardAgent=no", " 198.18.0.2"} {
		if !strings.Contains(args, want) {
			t.Errorf("ssh command line lacks %q: %s", want, args)
		}
	}
}

// TestSSHTunnel runs ssh-tunnel for real over both families and each
// cipher: set up, ping both ways, a full-size ping (its SSH packet, alone
// on the wire, has exactly the length the overhead model says), iperf3 and
// tunbench's request/response through it, with a's underlay captured and
// checked (SSH on sshd's port only, both banners, nothing in clear); the
// keys are 0600 files nowhere else; teardown leaves no link, process or
// file, and the privilege separation directory as it was.
func TestSSHTunnel(t *testing.T) {
	needSSH(t)
	for _, tt := range []struct {
		family string
		opts   map[string]string
	}{
		{method.IPv4, nil},
		{method.IPv6, nil},
		{method.IPv4, map[string]string{"cipher": sshtunnel.AES128GCM, "port": "2299"}},
		{method.IPv6, map[string]string{"cipher": sshtunnel.AES256GCM}},
	} {
		name := tt.family
		if c := tt.opts["cipher"]; c != "" {
			name += "/" + strings.TrimSuffix(c, "@openssh.com")
		}
		t.Run(name, func(t *testing.T) { runTunnel(t, tt.family, tt.opts) })
	}
}

func runTunnel(t *testing.T, family string, opts map[string]string) {
	privsep, privsepErr := os.Stat("/run/sshd")
	m := sshtunnel.New()
	l, env, path := methodtest.Setup(t, m, family, 1500, opts)
	ctx := context.Background()
	vals, err := method.ParseOptions(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	cipher := vals.String("cipher")
	if !strings.HasPrefix(path.Variant, "OpenSSH ") || !strings.Contains(path.Variant, ", "+cipher+", tun point-to-point, TCP over TCP") {
		t.Errorf("variant %q", path.Variant)
	}
	methodtest.DeviceMTU(t, l, path, env.OverlayMTU)
	dirs := []string{filepath.Join(env.Dir, "ssh-tunnel-a"), filepath.Join(env.Dir, "ssh-tunnel-b")}
	for i, ep := range l.Endpoints() {
		if dev := path.Devices[ep.Side][0]; dev != sshtunnel.DevName(env, ep) {
			t.Errorf("%s: device %q", ep.Side, dev)
		}
		links, err := ep.NL.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range links {
			if strings.HasPrefix(ln.Attrs().Name, "tun") {
				t.Errorf("%s: %s left under OpenSSH's name", ep.Side, ln.Attrs().Name)
			}
		}
		d := path.Daemons[i]
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", d.PID))
		if d.Side != ep.Side || d.Role != []string{"ssh", "sshd"}[i] || strings.TrimSpace(string(comm)) != d.Role {
			t.Errorf("daemon %d = %+v (comm %q)", i, d, comm)
		}
	}
	if len(path.Daemons) != 2 {
		t.Fatalf("daemons %+v, want ssh on a and sshd's connection process on b", path.Daemons)
	}
	secrets := keySecrets(t, dirs)
	methodtest.NoSecrets(t, "Path", fmt.Sprintf("%+v %s", *path, path.Variant), secrets)
	port := sshdPort(t, dirs[1])
	if vals.Int("port") != 0 && port != vals.Int("port") {
		t.Errorf("sshd on port %d, want %d", port, vals.Int("port"))
	}

	// The full-size ping alone: its SSH packet fills one outer segment as
	// the overhead model says.
	c, err := wireStart(l)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.PingFullSize(t, l, env, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	ip := 20
	if family == method.IPv6 {
		ip = 40
	}
	want := ip + 32 + record(env.OverlayMTU, blockOf(cipher))
	if got := largestSegment(t, pkts, l.A.Addr(family), port); got != want {
		t.Errorf("the full-size ping's outer segment is %d bytes, want %d (overlay MTU %d, %s)", got, want, env.OverlayMTU, cipher)
	}
	if want > env.UnderlayMTU {
		t.Errorf("the full-size ping's outer segment (%d) exceeds the underlay MTU", want)
	}

	// Traffic both ways, bulk and request/response (the identifications
	// were exchanged in Setup: TestWire sees them).
	c, err = wireStart(l)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.Ping(t, l, path)
	if out, err := l.B.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", path.A.String()); err != nil {
		t.Fatalf("ping %s from b: %v\n%s", path.A, err, out)
	}
	gbps := methodtest.Gbps(t, methodtest.Iperf3(t, l, path, 1))
	lat := methodtest.RRThrough(t, l, path)
	pkts, err = c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkWire(t, pkts, env, l.A.Addr(family), l.B.Addr(family), port, false)
	t.Logf("ssh-tunnel/%s (%s): %.2f Gbit/s, one TCP stream, 1 s; rr: %d transactions, p50 %.0f µs", family, path.Variant, gbps, lat.Samples, lat.P50)

	methodtest.NoSecretsInFiles(t, env.Dir, secrets, func(n string) bool { return n == "id_ed25519" || n == "ssh_host_ed25519_key" })
	for _, f := range []string{filepath.Join(dirs[0], "ssh.log"), filepath.Join(dirs[1], "sshd.log")} {
		if data, err := os.ReadFile(f); err != nil || bytes.Contains(data, []byte("PRIVATE KEY")) {
			t.Errorf("%s: %v, or it holds a key", f, err)
		}
	}
	listener := sshdPID(t, dirs[1])
	if err := m.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, pid := range []int{path.Daemons[0].PID, path.Daemons[1].PID, listener} {
		if running(pid) {
			t.Errorf("process %d still runs after teardown", pid)
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("side directory %s (keys) left after teardown: %v", dir, err)
		}
	}
	after, afterErr := os.Stat("/run/sshd")
	if (privsepErr == nil) != (afterErr == nil) || (privsepErr == nil && !after.ModTime().Equal(privsep.ModTime())) {
		t.Errorf("/run/sshd before: %v, after: %v", privsepErr, afterErr)
	}
}

// running reports whether pid exists and is no zombie.
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || (data[i+2] != 'Z' && data[i+2] != 'X')
}

// keySecrets checks the run's key files (each side's private key 0600,
// nowhere else) and returns their base64 lines.
func keySecrets(t *testing.T, dirs []string) []string {
	t.Helper()
	var secrets []string
	for i, dir := range dirs {
		name := []string{"id_ed25519", "ssh_host_ed25519_key"}[i]
		file := filepath.Join(dir, name)
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", file, st.Mode().Perm())
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")) {
			t.Fatalf("%s is no OpenSSH private key", file)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if len(line) >= 32 && !strings.HasPrefix(line, "-----") {
				secrets = append(secrets, line)
			}
		}
		// Everything tunbench writes there is private.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && fi.Mode().Perm()&0o077 != 0 && e.Name() != "sshd.pid" {
				t.Errorf("%s/%s has mode %v", dir, e.Name(), fi.Mode().Perm())
			}
		}
	}
	return secrets
}

func sshdPort(t *testing.T, dir string) int {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(dir, "sshd_config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(cfg), "\n") {
		if rest, ok := strings.CutPrefix(line, "ListenAddress "); ok {
			return int(netip.MustParseAddrPort(rest).Port())
		}
	}
	t.Fatalf("no ListenAddress in sshd_config:\n%s", cfg)
	return 0
}

func sshdPID(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "sshd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func wireStart(l *localns.Local) (*wire.Capture, error) { return wire.Start(l.A, l.A.Dev) }

// TestWire captures a's underlay from before Setup: the connection is
// SSH to sshd's port on b's underlay address, each side opens with its
// "SSH-2.0-OpenSSH_" identification, and nothing else crosses.
func TestWire(t *testing.T) {
	needSSH(t)
	m := sshtunnel.New()
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(method.IPv4),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	ctx := context.Background()
	c, err := wireStart(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("Teardown: %v", err)
		}
	})
	path, err := m.Setup(ctx, env)
	if err != nil {
		_, _ = c.Stop()
		t.Fatal(err)
	}
	port := sshdPort(t, filepath.Join(env.Dir, "ssh-tunnel-b"))
	if out, err := l.A.Run(ctx, "ping", "-c", "20", "-i", "0.01", "-W", "3", path.B.String()); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkWire(t, pkts, env, l.A.Addr4.Addr(), l.B.Addr4.Addr(), port, true)
}

// segment is a TCP segment as captured: addresses, ports, IP length and
// payload. the TCP segments of pkts: source address, ports,
// IP length and payload.
type segment struct {
	src, dst     netip.Addr
	sport, dport int
	ipLen        int
	payload      []byte
	other        string // a packet that is no TCP over IP, described
}

func segments(pkts []gopacket.Packet) []segment {
	var segs []segment
	for _, p := range pkts {
		var s segment
		switch {
		case p.Layer(layers.LayerTypeIPv4) != nil:
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			s.src, _ = netip.AddrFromSlice(ip.SrcIP)
			s.dst, _ = netip.AddrFromSlice(ip.DstIP)
			s.ipLen = int(ip.Length)
		case p.Layer(layers.LayerTypeIPv6) != nil:
			ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			s.src, _ = netip.AddrFromSlice(ip.SrcIP)
			s.dst, _ = netip.AddrFromSlice(ip.DstIP)
			s.ipLen = 40 + int(ip.Length)
			if p.Layer(layers.LayerTypeICMPv6) != nil {
				continue // neighbour discovery
			}
		default:
			continue // ARP
		}
		if tcp, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
			s.sport, s.dport, s.payload = int(tcp.SrcPort), int(tcp.DstPort), tcp.Payload
		} else {
			s.other = p.String()
		}
		s.src, s.dst = s.src.Unmap(), s.dst.Unmap()
		segs = append(segs, s)
	}
	return segs
}

// largestSegment is the IP length of the largest segment from src to
// sshd's port.
func largestSegment(t *testing.T, pkts []gopacket.Packet, src netip.Addr, port int) int {
	t.Helper()
	largest := 0
	for _, s := range segments(pkts) {
		if s.src == src && s.dport == port {
			largest = max(largest, s.ipLen)
		}
	}
	return largest
}

// checkWire checks a's underlay as captured: every packet between the
// underlay addresses is TCP between a and sshd's port on b, none carries
// an overlay address or an inner packet in clear, and many carry data;
// with banners, both sides' first data is an "SSH-2.0-" identification
// (RFC 4253, 4.2).
func checkWire(t *testing.T, pkts []gopacket.Packet, env *method.Env, ua, ub netip.Addr, port int, banners bool) {
	t.Helper()
	oa, ob := method.Overlay(env.Family)
	data := 0
	var bannerA, bannerB string
	for _, s := range segments(pkts) {
		if s.other != "" {
			t.Errorf("a packet that is no TCP on the underlay:\n%s", s.other)
			continue
		}
		for _, a := range []netip.Addr{s.src, s.dst} {
			if a == oa.Addr() || a == ob.Addr() {
				t.Fatalf("overlay address %s in an outer header on the underlay", a)
			}
		}
		if !((s.src == ua && s.dst == ub && s.dport == port) || (s.src == ub && s.dst == ua && s.sport == port)) {
			t.Errorf("TCP %s:%d -> %s:%d on the underlay, want only a to sshd on %s:%d", s.src, s.sport, s.dst, s.dport, ub, port)
			continue
		}
		if len(s.payload) == 0 {
			continue
		}
		data++
		if bytes.HasPrefix(s.payload, []byte("SSH-")) {
			line, _, _ := bytes.Cut(s.payload, []byte("\r\n"))
			if s.src == ua && bannerA == "" {
				bannerA = string(line)
			} else if s.src == ub && bannerB == "" {
				bannerB = string(line)
			}
		}
		// No inner IP header in clear: the overlay addresses never appear.
		for _, a := range []netip.Addr{oa.Addr(), ob.Addr()} {
			if bytes.Contains(s.payload, a.AsSlice()) && len(s.payload) > 200 {
				t.Logf("overlay address %s found in %d bytes of SSH data (by chance?)", a, len(s.payload))
			}
		}
	}
	if data < 20 {
		t.Errorf("%d TCP segments with data on port %d, want many", data, port)
	}
	if banners {
		for side, b := range map[string]string{"a (ssh)": bannerA, "b (sshd)": bannerB} {
			if !strings.HasPrefix(b, "SSH-2.0-OpenSSH_") {
				t.Errorf("%s identification %q, want SSH-2.0-OpenSSH_...", side, b)
			}
		}
		t.Logf("identifications: a %q, b %q", bannerA, bannerB)
	}
}

// TestStartFailure blackholes b's underlay address in a's namespace, so
// ssh never connects: Setup fails naming what it waited for and quoting
// the client's log, and Teardown after it (twice) leaves no link, process
// or file behind.
func TestStartFailure(t *testing.T) {
	needSSH(t)
	m := sshtunnel.New()
	m.InitTimeout = 3 * time.Second
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
		for _, want := range []string{"a: ssh: tunnel: wait for tun", "--- last lines of ssh.log (a) ---", "b: sshd: peer of a"} {
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
		if _, err := os.Stat(filepath.Join(env.Dir, "ssh-tunnel-"+side)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("side directory ssh-tunnel-%s left after teardown: %v", side, err)
		}
	}
	if namespaceHasSSH(t, l) {
		t.Errorf("an ssh or sshd of the run still runs")
	}
}

// namespaceHasSSH reports whether a process of ssh or sshd runs in one
// of l's namespaces.
func namespaceHasSSH(t *testing.T, l *localns.Local) bool {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	want := map[string]bool{}
	for _, ep := range l.Endpoints() {
		var st unix.Stat_t
		if err := unix.Fstat(int(ep.NS), &st); err == nil {
			want[fmt.Sprintf("net:[%d]", st.Ino)] = true
		}
	}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net"))
		if err != nil || !want[link] {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if c := strings.TrimSpace(string(comm)); c == "ssh" || c == "sshd" {
			return true
		}
	}
	return false
}

// TestThroughAgents runs ssh-tunnel between two remote endpoints, each
// served by a real agent in its own network, mount and pid namespaces
// (testbedtest.IsolatedAgentPair), as over SSH: the keys, configuration,
// logs and pid files are on each side's own host, private, and only
// there; a ping each way and a second of iperf3 cross, and b's underlay
// carries SSH to sshd's port only. Teardown leaves no link, process or
// file on either host, also when another value tears down (the daemons
// are then found by their pid files, on their hosts).
func TestThroughAgents(t *testing.T) {
	needSSH(t)
	for _, tt := range []struct {
		family   string
		stranger bool
	}{{method.IPv4, false}, {method.IPv6, true}} {
		t.Run(tt.family, func(t *testing.T) {
			ctx := context.Background()
			m := sshtunnel.New()
			l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
			if _, err := os.Stat(pair.A.Dir); err == nil {
				t.Fatalf("the agent's run directory %s is visible to this process: the agents are not isolated", pair.A.Dir)
			}
			env := &method.Env{A: pair.A, B: pair.B, Family: tt.family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(tt.family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir,
				Options: map[string]string{"cipher": sshtunnel.AES128GCM}}
			before := methodtest.AgentStateOf(t, pair)
			t.Cleanup(func() {
				if err := m.Teardown(ctx, env); err != nil {
					t.Errorf("Teardown through agents: %v", err)
				}
				methodtest.CheckAgentState(t, pair, before)
			})
			path, err := m.Setup(ctx, env)
			if err != nil {
				t.Fatalf("Setup through agents: %v", err)
			}
			if len(path.Daemons) != 2 || path.Daemons[0].PID <= 0 || path.Daemons[1].PID <= 0 {
				t.Fatalf("daemons %+v, want ssh on a and sshd on b", path.Daemons)
			}
			if got, want := m.ImplementationOn(ctx, pair.A), m.Implementation(); got != want {
				t.Errorf("implementation on the agent's host %q, want this machine's %q", got, want)
			}
			files := map[string][]string{
				"a": {"id_ed25519", "known_hosts", "ssh.log", "ssh.pid"},
				"b": {"ssh_host_ed25519_key", "authorized_keys", "sshd_config", "sshd.log"},
			}
			var port int
			for i, ep := range pair.Endpoints() {
				dir := filepath.Join(ep.Dir, "ssh-tunnel-"+ep.Side)
				other := filepath.Join(ep.Dir, "ssh-tunnel-"+pair.Endpoints()[1-i].Side)
				if out, err := ep.Run(ctx, "test", "!", "-e", other); err != nil {
					t.Errorf("%s: the other side's directory %s is on this host: %v\n%s", ep.Side, other, err, out)
				}
				for _, name := range files[ep.Side] {
					out, err := ep.Run(ctx, "stat", "-c", "%a", filepath.Join(dir, name))
					if err != nil || strings.TrimSpace(string(out)) != "600" {
						t.Errorf("%s: %s on its host: mode %q (%v), want 600", ep.Side, name, strings.TrimSpace(string(out)), err)
					}
				}
				comm, err := ep.ReadFile(fmt.Sprintf("/proc/%d/comm", path.Daemons[i].PID))
				if err != nil || strings.TrimSpace(string(comm)) != path.Daemons[i].Role {
					t.Errorf("%s: daemon %+v is %q on its host (%v)", ep.Side, path.Daemons[i], comm, err)
				}
				if ep.Side == "b" {
					cfg, err := ep.ReadFile(filepath.Join(dir, "sshd_config"))
					if err != nil {
						t.Fatal(err)
					}
					for _, line := range strings.Split(string(cfg), "\n") {
						if rest, ok := strings.CutPrefix(line, "ListenAddress "); ok {
							port = int(netip.MustParseAddrPort(rest).Port())
						}
					}
				}
			}
			c, err := wire.Start(l.B, l.B.Dev)
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range []struct {
				from *testbed.Endpoint
				to   string
			}{{pair.A, path.B.String()}, {pair.B, path.A.String()}} {
				if out, err := dir.from.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", dir.to); err != nil {
					t.Errorf("ping %s from %s through the agent: %v\n%s", dir.to, dir.from.Side, err, out)
				}
			}
			out := methodtest.Iperf3Between(t, pair.A, pair.B, path, 1, 1)
			pkts, err := c.Stop()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("through agents: %.2f Gbit/s", methodtest.Gbps(t, out))
			checkWire(t, pkts, env, pair.A.Addr(tt.family), pair.B.Addr(tt.family), port, false)
			if tt.stranger {
				if err := sshtunnel.New().Teardown(ctx, env); err != nil {
					t.Errorf("Teardown by another value: %v", err)
				}
			}
			// The clean-up tears down (again) and compares the hosts.
		})
	}
}

// TestHostKeyPinned pins a host key other than b's: ssh refuses b
// (StrictHostKeyChecking), Setup fails quoting ssh's refusal, and nothing
// is left.
func TestHostKeyPinned(t *testing.T) {
	needSSH(t)
	m := sshtunnel.NewPinningAnotherKey()
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(method.IPv4),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	ctx := context.Background()
	if _, err := m.Setup(ctx, env); err == nil || !strings.Contains(err.Error(), "Host key verification failed") {
		t.Errorf("Setup with another host key pinned: %v, want ssh's host key verification failure", err)
	}
	if err := m.Teardown(ctx, env); err != nil {
		t.Errorf("Teardown: %v", err)
	}
	if diff := cmp.Diff(before, [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}); diff != "" {
		t.Errorf("links after teardown (-before +after):\n%s", diff)
	}
	if namespaceHasSSH(t, l) {
		t.Errorf("an ssh or sshd of the run still runs")
	}
}
