package openvpn_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/openvpn"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary serve as a tunbench agent for the tests
// that run the method on remote endpoints (testbedtest.IsolatedAgentPair).
func TestMain(m *testing.M) {
	testbedtest.ServeAgentIfAsked()
	os.Exit(m.Run())
}

var updateOpenVPN = flag.Bool("update-openvpn", false, "rewrite the openvpn golden configuration files in testdata")

func TestOpenVPNOverheadAndMTU(t *testing.T) {
	m := openvpn.NewOpenVPN()
	for _, tt := range []struct {
		family            string
		underlay, overlay int
	}{
		{method.IPv4, 1500, 1448},
		{method.IPv6, 1500, 1428},
		{method.IPv4, 9000, 8948},
	} {
		if got := tt.underlay - m.Overhead(tt.family); got != tt.overlay {
			t.Errorf("%s: overlay MTU over %d = %d, want %d", tt.family, tt.underlay, got, tt.overlay)
		}
	}
}

func TestOpenVPNRequirements(t *testing.T) {
	var program *method.Requirement
	for _, r := range openvpn.NewOpenVPN().Requirements() {
		if r.Program == "openvpn" {
			program = &r
		}
	}
	if program == nil || program.Optional || program.Fix() != "apt-get install -y --no-install-recommends openvpn" {
		t.Errorf("openvpn requirement = %+v, want the Debian package openvpn", program)
	}
}

func TestParseOpenVPNOptions(t *testing.T) {
	def := openvpn.OpenVPNOptions{Proto: "udp", Cipher: openvpn.OpenVPNAES256GCM, TLSCrypt: true, Port: 1194}
	for _, tt := range []struct {
		opts    map[string]string
		want    openvpn.OpenVPNOptions
		wantErr string
	}{
		{opts: nil, want: def},
		{opts: map[string]string{"proto": "tcp", "cipher": "chacha20-poly1305", "tls-crypt": "off", "port": "1195"},
			want: openvpn.OpenVPNOptions{Proto: "tcp", Cipher: openvpn.OpenVPNChaCha20, Port: 1195}},
		{opts: map[string]string{"proto": "sctp"}, wantErr: `proto="sctp"`},
		{opts: map[string]string{"cipher": "BF-CBC"}, wantErr: `cipher="BF-CBC"`},
		{opts: map[string]string{"tls-crypt": "yes"}, wantErr: `tls-crypt="yes"`},
		{opts: map[string]string{"port": "0"}, wantErr: `port="0"`},
		{opts: map[string]string{"ciper": "AES-256-GCM"}, wantErr: `unknown option "ciper": valid options are cipher, port, proto, tls-crypt`},
	} {
		got, err := openvpn.ParseOpenVPNOptions(tt.opts)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseOpenVPNOptions(%v) error = %v, want one containing %s", tt.opts, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseOpenVPNOptions(%v): %v", tt.opts, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseOpenVPNOptions(%v) (-want +got):\n%s", tt.opts, diff)
		}
	}
	if got, want := def.Variant(), "AES-256-GCM, udp, tls-crypt, userspace data channel (no DCO)"; got != want {
		t.Errorf("Variant = %q, want %q", got, want)
	}
}

func TestOpenVPNNetmask(t *testing.T) {
	for p, want := range map[string]string{"198.19.0.1/24": "255.255.255.0", "10.0.0.1/30": "255.255.255.252", "10.0.0.1/32": "255.255.255.255"} {
		if got := openvpn.OpenVPNNetmask(netip.MustParsePrefix(p)); got != want {
			t.Errorf("netmask of %s = %s, want %s", p, got, want)
		}
	}
}

// TestOpenVPNConfig compares the rendered configuration files with golden
// files in testdata (rewrite them with -update-openvpn).
func TestOpenVPNConfig(t *testing.T) {
	ep := func(side string, n byte) *testbed.Endpoint {
		return &testbed.Endpoint{Side: side,
			Addr4: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, 0, n}), 24),
			Addr6: netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0, 2, 15: n}), 64)}
	}
	for _, tt := range []struct {
		name   string
		family string
		opts   map[string]string
	}{
		{"udp4", method.IPv4, nil},
		{"tcp6", method.IPv6, map[string]string{"proto": "tcp", "cipher": "CHACHA20-POLY1305", "tls-crypt": "off", "port": "1195"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := openvpn.NewOpenVPN()
			env := &method.Env{A: ep("a", 1), B: ep("b", 2), Family: tt.family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(tt.family), Prefix: "tbtest01", Options: tt.opts}
			client, server, ccd, err := openvpn.OpenVPNConfigs(env, "/run/tb/openvpn-a", "/run/tb/openvpn-b")
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string]string{"client": client, "server": server, "ccd": ccd} {
				golden := filepath.Join("testdata", fmt.Sprintf("openvpn_%s_%s.conf", tt.name, name))
				if *updateOpenVPN {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (create it with -update-openvpn)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s (-%s +got):\n%s", name, golden, diff)
				}
			}
		})
	}
}

func TestOpenVPNStaticKey(t *testing.T) {
	key := make([]byte, 256)
	for i := range key {
		key[i] = byte(i)
	}
	got := string(openvpn.OpenVPNStaticKey(key))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 4+16+1 {
		t.Fatalf("static key has %d lines, want 21:\n%s", len(lines), got)
	}
	if lines[3] != "-----BEGIN OpenVPN Static key V1-----" || lines[20] != "-----END OpenVPN Static key V1-----" {
		t.Errorf("static key markers wrong:\n%s", got)
	}
	if lines[4] != "000102030405060708090a0b0c0d0e0f" || lines[19] != "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff" {
		t.Errorf("static key body wrong: first %q, last %q", lines[4], lines[19])
	}
	hexLine := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, l := range lines[4:20] {
		if !hexLine.MatchString(l) {
			t.Errorf("static key line %q is not 32 hex digits", l)
		}
	}
}

// TestOpenVPNPKI checks the generated certificates the way OpenVPN does:
// both chain to the CA, carry the expected names and extended key usages,
// and each key matches its certificate.
func TestOpenVPNPKI(t *testing.T) {
	now := time.Now()
	p, err := openvpn.NewOpenVPNPKI(now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CACert) {
		t.Fatal("CA certificate does not parse")
	}
	for _, tt := range []struct {
		cert, key []byte
		cn        string
		usage     x509.ExtKeyUsage
	}{
		{p.ServerCert, p.ServerKey, openvpn.OpenVPNServerName, x509.ExtKeyUsageServerAuth},
		{p.ClientCert, p.ClientKey, openvpn.OpenVPNClientName, x509.ExtKeyUsageClientAuth},
	} {
		pair, err := tls.X509KeyPair(tt.cert, tt.key)
		if err != nil {
			t.Errorf("%s: key does not match certificate: %v", tt.cn, err)
			continue
		}
		cert := pair.Leaf
		if cert.Subject.CommonName != tt.cn {
			t.Errorf("common name %q, want %q", cert.Subject.CommonName, tt.cn)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
			t.Errorf("%s: %v", tt.cn, err)
		}
		if cert.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
			t.Errorf("%s: no digitalSignature key usage (--remote-cert-tls needs it)", tt.cn)
		}
		if cert.IsCA {
			t.Errorf("%s: is a CA", tt.cn)
		}
		if b, _ := pem.Decode(tt.key); b == nil || b.Type != "PRIVATE KEY" {
			t.Errorf("%s: key is not a PKCS#8 PEM block", tt.cn)
		}
	}
	if bytes.Equal(p.ServerKey, p.ClientKey) {
		t.Error("server and client share a key")
	}
	q, err := openvpn.NewOpenVPNPKI(now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(p.TLSCrypt, q.TLSCrypt) || bytes.Equal(p.CACert, q.CACert) {
		t.Error("two runs share key material")
	}
}

func TestParseOpenVPNVersion(t *testing.T) {
	out, err := os.ReadFile("testdata/openvpn_version.txt")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		string(out):                 "OpenVPN 2.6.14, OpenSSL 3.0.19",
		"OpenVPN 2.5.1 x86_64\n":    "OpenVPN 2.5.1",
		"openvpn: command failed\n": "OpenVPN (version unknown)",
		"":                          "OpenVPN (version unknown)",
	} {
		if got := openvpn.ParseOpenVPNVersion([]byte(in)); got != want {
			t.Errorf("ParseOpenVPNVersion(%.30q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseOpenVPNStatus(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	title := "OpenVPN 2.6.14 x86_64-pc-linux-gnu [SSL (OpenSSL)] [LZO] [LZ4] [EPOLL] [PKCS11] [MH/PKTINFO] [AEAD] [DCO]"
	global := map[string]string{"Max bcast/mcast queue length": "0", "dco_enabled": "0"}
	udp4 := &openvpn.OpenVPNStatus{
		Server: true, Title: title, Updated: time.Unix(1795322505, 0), Global: global,
		Clients: []openvpn.OpenVPNClient{{
			CommonName: "tunbench-client", RealAddress: "198.18.0.1:55655",
			VirtualAddress: netip.MustParseAddr("198.19.0.1"),
			BytesReceived:  28614792, BytesSent: 454640,
			ConnectedSince: time.Unix(1795322503, 0), PeerID: 0, Cipher: "AES-256-GCM",
		}},
	}
	tcp6 := &openvpn.OpenVPNStatus{
		Server: true, Title: title, Updated: time.Unix(1795322530, 0), Global: global,
		Clients: []openvpn.OpenVPNClient{{
			CommonName: "tunbench-client", RealAddress: "2001:2::1",
			VirtualIPv6:   netip.MustParseAddr("2001:2:0:1::1"),
			BytesReceived: 11254356, BytesSent: 212601,
			ConnectedSince: time.Unix(1795322528, 0), Cipher: "CHACHA20-POLY1305",
		}},
	}
	updated, err := time.ParseInLocation("2006-01-02 15:04:05", "2026-11-22 04:41:45", time.Local)
	if err != nil {
		t.Fatal(err)
	}
	client := &openvpn.OpenVPNStatus{Updated: updated, Stats: map[string]int64{
		openvpn.OpenVPNStatTunRead: 31952436, openvpn.OpenVPNStatTunWrite: 322171,
		openvpn.OpenVPNStatLinkRead: 454706, openvpn.OpenVPNStatLinkWrite: 32484734,
		"Auth read bytes": 322171,
	}}
	// Version 3 is version 2 with tabs.
	v3 := bytes.ReplaceAll(read("openvpn_status_v2_udp4.txt"), []byte(","), []byte("\t"))
	udp4v3 := *udp4
	udp4v3.Global = map[string]string{"Max bcast/mcast queue length": "0", "dco_enabled": "0"}
	for name, tt := range map[string]struct {
		data []byte
		want *openvpn.OpenVPNStatus
	}{
		"v2 udp4": {read("openvpn_status_v2_udp4.txt"), udp4},
		"v2 tcp6": {read("openvpn_status_v2_tcp6.txt"), tcp6},
		"v3":      {v3, &udp4v3},
		"client":  {read("openvpn_status_client.txt"), client},
	} {
		got, err := openvpn.ParseOpenVPNStatus(tt.data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseOpenVPNStatusErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/openvpn_status_v2_udp4.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := string(good)
	for _, tt := range []struct{ name, data, want string }{
		{"empty", "", "empty"},
		{"truncated", s[:len(s)/2], "no END line"},
		{"version 1", "OpenVPN CLIENT LIST\nUpdated,2026-11-22 04:41:45\nEND\n", "version 1"},
		{"unknown", "hello\nEND\n", "line 1: unknown format"},
		{"bad bytes", strings.Replace(s, ",28614792,", ",28x,", 1), "line 4: bad Bytes Received"},
		{"short row", strings.Replace(s, ",AES-256-GCM", "", 1), "line 4: CLIENT_LIST has 12 fields, its header 13"},
		{"no header", strings.Replace(s, "HEADER,CLIENT_LIST", "HEADER,OTHER", 1), "line 4: CLIENT_LIST before its HEADER"},
		{"bad time", strings.Replace(s, ",1795322505", ",soon", 1), "line 2: bad TIME"},
		{"client bad count", "OpenVPN STATISTICS\nTUN/TAP read bytes,many\nEND\n", "line 2: bad TUN/TAP read bytes"},
	} {
		_, err := openvpn.ParseOpenVPNStatus([]byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// requireOpenVPN skips t, with the install instruction, when openvpn is
// missing.
func requireOpenVPN(t *testing.T) {
	t.Helper()
	testenv.NeedProgram(t, "openvpn", "apt-get install -y --no-install-recommends openvpn")
}

// ovpnSecrets reads the run's certificates and keys from the side
// directories, checks they are 0600, and returns every line of their
// bodies (PEM base64 lines, static key hex lines), so that even a partial
// leak is found.
func ovpnSecrets(t *testing.T, dirs []string) []string {
	t.Helper()
	var secrets []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".key") && !strings.HasSuffix(e.Name(), ".crt") {
				continue
			}
			file := filepath.Join(dir, e.Name())
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
			for _, l := range strings.Split(string(data), "\n") {
				if len(l) >= 32 && !strings.HasPrefix(l, "-----") && !strings.HasPrefix(l, "#") {
					secrets = append(secrets, l)
				}
			}
		}
	}
	if len(secrets) < 20 {
		t.Fatalf("found only %d lines of key material in %v", len(secrets), dirs)
	}
	return secrets
}

// ovpnProcesses lists the pids of openvpn processes whose command line
// mentions dir.
func ovpnProcesses(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.HasPrefix(string(cmd), "openvpn\x00") && strings.Contains(string(cmd), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ovpnOutside lists entries that would be OpenVPN state outside the run
// directory: anything named after openvpn, or starting with the run's
// device prefix when prefix is set, in /run and /tmp, and the contents of
// /etc/openvpn.
func ovpnOutside(prefix string) []string {
	var found []string
	for _, dir := range []string{"/run", "/tmp"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.Contains(e.Name(), "openvpn") || prefix != "" && strings.HasPrefix(e.Name(), prefix) {
				found = append(found, filepath.Join(dir, e.Name()))
			}
		}
	}
	_ = filepath.WalkDir("/etc/openvpn", func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			found = append(found, path)
		}
		return nil
	})
	return found
}

// ovpnCPU returns the user plus system CPU time pid has used.
func ovpnCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the parenthesised command: state is field 3, utime 14,
	// stime 15 (clock ticks, 100 per second on Linux).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// ovpnReadStatus parses a side's status file, waiting up to 3 s for a
// complete one (OpenVPN rewrites it every second).
func ovpnReadStatus(t *testing.T, file string) *openvpn.OpenVPNStatus {
	t.Helper()
	var last error
	for range 150 {
		data, err := os.ReadFile(file)
		if err == nil {
			st, err := openvpn.ParseOpenVPNStatus(data)
			if err == nil {
				return st
			}
			last = err
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("status file %s: %v", file, last)
	return nil
}

// TestOpenVPN runs OpenVPN for real with both ciphers, both families and
// both transports: the devices have the overlay MTU, ping and two seconds
// of iperf3 pass, the status files count the traffic and name the
// cipher, no key material appears outside the key files, and Teardown
// leaves no process, device or file behind.
func TestOpenVPN(t *testing.T) {
	requireOpenVPN(t)
	for _, tt := range []struct {
		name   string
		family string
		opts   map[string]string
	}{
		{"aes-256-gcm/ipv4", method.IPv4, nil},
		{"chacha20-poly1305/ipv4", method.IPv4, map[string]string{"cipher": "CHACHA20-POLY1305"}},
		{"aes-256-gcm/ipv6", method.IPv6, nil},
		{"tcp/no-tls-crypt/ipv4", method.IPv4, map[string]string{"proto": "tcp", "tls-crypt": "off"}},
	} {
		t.Run(tt.name, func(t *testing.T) { runOpenVPN(t, tt.family, tt.opts) })
	}
}

func runOpenVPN(t *testing.T, family string, opts map[string]string) {
	m := openvpn.NewOpenVPN()
	o, err := openvpn.ParseOpenVPNOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	outsideBefore := ovpnOutside("")
	l, env, path := methodtest.Setup(t, m, family, 1500, opts)
	dirs := []string{filepath.Join(env.Dir, "openvpn-a"), filepath.Join(env.Dir, "openvpn-b")}
	secrets := ovpnSecrets(t, dirs)
	methodtest.NoSecrets(t, "Path", fmt.Sprintf("%+v %s", *path, path.Variant), secrets)
	if !strings.Contains(path.Variant, o.Cipher) {
		t.Errorf("Variant %q does not name cipher %s", path.Variant, o.Cipher)
	}
	for i, ep := range []*testbed.Endpoint{l.A, l.B} {
		dev := path.Devices[ep.Side][0]
		link, err := ep.NL.LinkByName(dev)
		if err != nil {
			t.Fatalf("%s: %v", ep.Side, err)
		}
		if link.Attrs().MTU != env.OverlayMTU {
			t.Errorf("%s: %s MTU = %d, want %d", ep.Side, dev, link.Attrs().MTU, env.OverlayMTU)
		}
		d := path.Daemons[i]
		if d.Side != ep.Side || d.Role != "openvpn" || d.PID <= 0 {
			t.Errorf("daemon %d = %+v", i, d)
		}
		pidFile, err := os.ReadFile(filepath.Join(dirs[i], "openvpn.pid"))
		if err != nil || strings.TrimSpace(string(pidFile)) != strconv.Itoa(d.PID) {
			t.Errorf("%s: pid file %q (%v), want pid %d", ep.Side, pidFile, err, d.PID)
		}
		// Everything we wrote is private.
		for _, name := range []string{"openvpn.conf", "openvpn.log", "ca.crt"} {
			st, err := os.Stat(filepath.Join(dirs[i], name))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s: %v, want mode 0600", ep.Side, name, err)
			}
		}
		st, err := os.Stat(dirs[i])
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: side directory: %v, want mode 0700", ep.Side, err)
		}
	}
	methodtest.Ping(t, l, path)
	cpu0 := []time.Duration{ovpnCPU(t, path.Daemons[0].PID), ovpnCPU(t, path.Daemons[1].PID)}
	start := time.Now()
	gbps := methodtest.Gbps(t, methodtest.Iperf3(t, l, path, 2))
	elapsed := time.Since(start)
	var share [2]float64
	for i := range share {
		share[i] = float64(ovpnCPU(t, path.Daemons[i].PID)-cpu0[i]) / float64(elapsed)
	}
	// On this shared machine the throughput follows the CPU the daemons
	// get; per busy daemon core it is steadier.
	t.Logf("openvpn/%s (%s): %.2f Gbit/s, one TCP stream, 2 s; daemon CPU a %.0f%%, b %.0f%% (%.2f Gbit/s per core of the busier one)",
		family, path.Variant, gbps, 100*share[0], 100*share[1], gbps/max(share[0], share[1]))

	// The status files: the server lists the client with the cipher and
	// the traffic; the client counts it.
	time.Sleep(1100 * time.Millisecond) // one status interval
	srv := ovpnReadStatus(t, filepath.Join(dirs[1], "openvpn-status.txt"))
	if len(srv.Clients) != 1 {
		t.Fatalf("server status lists %d clients, want 1: %+v", len(srv.Clients), srv)
	}
	c := srv.Clients[0]
	oa, _ := method.Overlay(family)
	virt := c.VirtualAddress
	if family == method.IPv6 {
		virt = c.VirtualIPv6
	}
	if c.CommonName != openvpn.OpenVPNClientName || c.Cipher != o.Cipher || virt != oa.Addr() || c.BytesReceived < 1e6 {
		t.Errorf("server status client = %+v, want %s with cipher %s, address %s and megabytes received", c, openvpn.OpenVPNClientName, o.Cipher, oa.Addr())
	}
	if srv.Global["dco_enabled"] != "0" {
		t.Errorf("server status: dco_enabled = %q, want 0 (userspace data channel)", srv.Global["dco_enabled"])
	}
	cl := ovpnReadStatus(t, filepath.Join(dirs[0], "openvpn-status.txt"))
	if cl.Stats[openvpn.OpenVPNStatTunRead] < 1e6 || cl.Stats[openvpn.OpenVPNStatLinkWrite] < cl.Stats[openvpn.OpenVPNStatTunRead] {
		t.Errorf("client status counters = %v, want megabytes read from TUN and at least as many written to the link", cl.Stats)
	}
	t.Logf("client sent %d B from TUN as %d B on the link; server received %d B", cl.Stats[openvpn.OpenVPNStatTunRead], cl.Stats[openvpn.OpenVPNStatLinkWrite], c.BytesReceived)

	methodtest.NoSecretsInFiles(t, env.Dir, secrets, func(n string) bool { return strings.HasSuffix(n, ".key") || strings.HasSuffix(n, ".crt") })

	ctx := context.Background()
	if err := m.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, d := range path.Daemons {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", d.PID)); err == nil {
			t.Errorf("%s daemon %s (pid %d) still runs after teardown", d.Side, d.Role, d.PID)
		}
	}
	if pids := ovpnProcesses(t, env.Dir); len(pids) > 0 {
		t.Errorf("openvpn processes of this run after teardown: %v", pids)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("side directory %s (keys, configuration) left after teardown: %v", dir, err)
		}
	}
	if diff := cmp.Diff(outsideBefore, ovpnOutside(env.Prefix)); diff != "" {
		t.Errorf("OpenVPN state outside the run directory (-before +after):\n%s", diff)
	}
}

// TestOpenVPNWire captures b's underlay while ping and one second of
// iperf3 cross the tunnel, on a non-default port, and checks the wire
// format: UDP only on that port; data packets are P_DATA_V2 (opcode 9, key
// id 0: first byte 0x48) with the peer id the server status shows (0); the
// largest underlay packet is exactly the underlay MTU (so Overhead is
// right and nothing is fragmented); no overlay address in clear. Over TCP,
// the stream is on that port and no packet exceeds the MTU.
func TestOpenVPNWire(t *testing.T) {
	requireOpenVPN(t)
	const port = 1195
	for _, tt := range []struct {
		family, proto string
	}{{method.IPv4, "udp"}, {method.IPv6, "udp"}, {method.IPv4, "tcp"}} {
		t.Run(tt.proto+"/"+tt.family, func(t *testing.T) {
			l, env, path := methodtest.Setup(t, openvpn.NewOpenVPN(), tt.family, 1500,
				map[string]string{"port": strconv.Itoa(port), "proto": tt.proto})
			c, err := wire.Start(l.B, l.B.Dev)
			if err != nil {
				t.Fatal(err)
			}
			methodtest.Ping(t, l, path)
			methodtest.Iperf3(t, l, path, 1)
			pkts, err := c.Stop()
			if err != nil {
				t.Fatal(err)
			}
			frames, err := wire.Summarize(pkts)
			if err != nil {
				t.Fatal(err)
			}
			checkOpenVPNWire(t, frames, env, tt.proto, port)
		})
	}
}

func checkOpenVPNWire(t *testing.T, frames []wire.Frame, env *method.Env, proto string, port uint16) {
	t.Helper()
	oa, ob := method.Overlay(env.Family)
	opcodes := map[byte]int{}
	maxLen, data := 0, 0
	for _, f := range frames {
		if f.Family == "" {
			continue // ARP, neighbour discovery without IP
		}
		if f.Fragment {
			t.Fatalf("IP fragment on the underlay: %v", f)
		}
		for _, a := range []netip.Addr{f.Src, f.Dst} {
			if a == oa.Addr() || a == ob.Addr() {
				t.Fatalf("overlay address %s in clear on the underlay: %v", a, f)
			}
		}
		if f.Inner != nil {
			t.Fatalf("an inner packet decoded in clear: %v", f)
		}
		if f.Proto == wire.ProtoICMPv6 {
			continue // neighbour discovery
		}
		wantProto := uint8(wire.ProtoUDP)
		if proto == "tcp" {
			wantProto = wire.ProtoTCP
		}
		if f.Proto != wantProto || (f.SrcPort != port && f.DstPort != port) {
			t.Errorf("unexpected packet on the underlay, want %s port %d only: %v", proto, port, f)
			continue
		}
		if proto == "tcp" {
			data++
			// veth hands the outer TCP stream over in GSO packets of up
			// to 64 KB: their size says nothing about the wire.
			continue
		}
		maxLen = max(maxLen, f.IPLen)
		if len(f.Payload) < 4 {
			t.Errorf("UDP payload of %d bytes is no OpenVPN packet", len(f.Payload))
			continue
		}
		op := f.Payload[0] >> 3
		opcodes[op]++
		if op == 9 {
			data++
			if f.Payload[0] != 0x48 || f.Payload[1] != 0 || f.Payload[2] != 0 || f.Payload[3] != 0 {
				t.Errorf("P_DATA_V2 header % x, want 48 00 00 00 (key id 0, peer id 0)", f.Payload[:4])
			}
			// Opcode/peer id 4, packet id 4, tag 16, then at least a
			// minimal IP packet.
			if len(f.Payload) < 24+20 {
				t.Errorf("P_DATA_V2 packet of %d bytes is too short", len(f.Payload))
			}
		}
	}
	if proto == "udp" {
		t.Logf("OpenVPN opcodes on the underlay: %v; largest IP packet %d bytes", opcodes, maxLen)
	} else {
		t.Logf("%d TCP frames on port %d", data, port)
	}
	if data < 100 {
		t.Errorf("%d data packets (UDP: P_DATA_V2, opcode 9; TCP: segments on port %d), want many", data, port)
	}
	if proto == "udp" && maxLen != env.UnderlayMTU {
		t.Errorf("largest underlay packet %d bytes, want exactly the underlay MTU %d (overlay MTU %d + overhead %d)",
			maxLen, env.UnderlayMTU, env.OverlayMTU, env.UnderlayMTU-env.OverlayMTU)
	}
}

// TestOpenVPNStartFailure blackholes b's underlay address in a's
// namespace, so the client never completes its TLS handshake, and checks
// the error: it names side a, says what it waited for, quotes the
// client's log and carries no key material; Teardown after the failed
// Setup leaves no link, process or file behind.
func TestOpenVPNStartFailure(t *testing.T) {
	requireOpenVPN(t)
	l := testbedtest.New(t, 1500)
	ctx := context.Background()
	blackhole := &netlink.Route{Dst: testbed.PrefixNet(netip.PrefixFrom(l.B.Addr4.Addr(), 32)), Type: unix.RTN_BLACKHOLE}
	if err := l.A.NL.RouteAdd(blackhole); err != nil {
		t.Fatalf("a: blackhole %s: %v", l.B.Addr4.Addr(), err)
	}
	m := openvpn.NewOpenVPN()
	m.InitTimeout = 3 * time.Second
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(method.IPv4),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	dirs := []string{filepath.Join(env.Dir, "openvpn-a"), filepath.Join(env.Dir, "openvpn-b")}
	path, err := m.Setup(ctx, env)
	if err == nil {
		t.Errorf("Setup with b unreachable succeeded: %+v", path)
	} else {
		t.Logf("Setup error (expected):\n%v", err)
		msg := err.Error()
		for _, want := range []string{"a: openvpn: start", `"Initialization Sequence Completed"`, "timed out", "--- last lines of openvpn.log (a) ---"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Setup error does not contain %q", want)
			}
		}
		methodtest.NoSecrets(t, "Setup error", msg, ovpnSecrets(t, dirs))
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
	if pids := ovpnProcesses(t, env.Dir); len(pids) > 0 {
		t.Errorf("openvpn processes after teardown: %v", pids)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("side directory %s left after teardown: %v", dir, err)
		}
	}
}

// TestOpenVPNBadConfig makes the server fail at once (its port is taken)
// and checks that Setup reports it promptly, naming side b, with the log.
func TestOpenVPNBadConfig(t *testing.T) {
	requireOpenVPN(t)
	l := testbedtest.New(t, 1500)
	ctx := context.Background()
	// Occupy b's UDP port 1194 on its underlay address.
	var busy interface{ Close() error }
	err := l.B.Do(func() error {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(l.B.Addr4.Addr(), openvpn.OpenVPNPort)))
		busy = c
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	m := openvpn.NewOpenVPN()
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(method.IPv4),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	t.Cleanup(func() {
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("Teardown: %v", err)
		}
	})
	start := time.Now()
	_, err = m.Setup(ctx, env)
	if err == nil {
		t.Fatal("Setup with b's port taken succeeded")
	}
	t.Logf("Setup error (expected, after %s):\n%v", time.Since(start).Round(time.Millisecond), err)
	for _, want := range []string{"b: openvpn: start", "openvpn exited", "Address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Setup error does not contain %q", want)
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Setup took %s to notice the exit", time.Since(start))
	}
}

// TestOpenVPNThroughAgents runs openvpn between two remote endpoints, each
// served by a real agent process in its own network, mount and pid
// namespaces (testbedtest.IsolatedAgentPair), as over SSH: the daemons,
// their configuration, keys, logs, pid and status files live on the
// agents' hosts, and every command, file, netlink call and op goes through
// the agent protocol. It checks that each side's files are on its own
// host only, the wire as TestOpenVPNWire does (only OpenVPN's transport on
// its port, nothing in clear, underlay MTU exact), a ping each way and one
// second of iperf3, then that Teardown leaves no link, process or file in
// the agents' run directories, also when another OpenVPN value tears down
// (the daemons are then found by their pid files, on their hosts).
func TestOpenVPNThroughAgents(t *testing.T) {
	requireOpenVPN(t)
	const port = 1195
	for _, tt := range []struct {
		family, proto string
		// stranger: tear down with another OpenVPN value, which finds
		// the daemons by their pid files on their hosts.
		stranger bool
	}{{method.IPv4, "udp", false}, {method.IPv6, "udp", false}, {method.IPv4, "tcp", true}} {
		t.Run(tt.proto+"/"+tt.family, func(t *testing.T) {
			ctx := context.Background()
			l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
			if _, err := os.Stat(pair.A.Dir); err == nil {
				t.Fatalf("the agent's run directory %s is visible to this process: the agents are not isolated", pair.A.Dir)
			}
			m := openvpn.NewOpenVPN()
			opts := map[string]string{"port": strconv.Itoa(port), "proto": tt.proto}
			env := &method.Env{A: pair.A, B: pair.B, Family: tt.family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(tt.family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir, Options: opts}
			links := func() [][]string {
				return [][]string{methodtest.LinkState(t, pair.A), methodtest.LinkState(t, pair.B)}
			}
			outsideBefore := ovpnOutside("")
			beforeLinks, beforeFiles, beforeProcs := links(), methodtest.AgentFiles(t, pair), methodtest.AgentProcesses(t, pair)
			t.Cleanup(func() { _ = m.Teardown(ctx, env) })

			path, err := m.Setup(ctx, env)
			if err != nil {
				t.Fatalf("Setup through agents: %v", err)
			}
			if len(path.Daemons) != 2 {
				t.Fatalf("daemons %v, want an openvpn per side", path.Daemons)
			}
			if got, want := m.ImplementationOn(ctx, pair.A), m.Implementation(); got != want || !strings.Contains(got, ", OpenSSL ") {
				t.Errorf("implementation on the agent's host %q, want this machine's %q (the same OpenVPN, with its crypto library)", got, want)
			}

			// Each side's configuration, keys and state are on its own
			// host, in its side directory, private; the other side's
			// directory is not there.
			var secrets []string
			for i, ep := range pair.Endpoints() {
				dir := filepath.Join(ep.Dir, "openvpn-"+ep.Side)
				other := filepath.Join(ep.Dir, "openvpn-"+pair.Endpoints()[1-i].Side)
				if out, err := ep.Run(ctx, "test", "!", "-e", other); err != nil {
					t.Errorf("%s: the other side's directory %s is on this host: %v\n%s", ep.Side, other, err, out)
				}
				cert := "client"
				if ep.Side == "b" {
					cert = "server"
				}
				if out, err := ep.Run(ctx, "stat", "-c", "%a", dir); err != nil || strings.TrimSpace(string(out)) != "700" {
					t.Errorf("%s: side directory on its host: mode %q (%v), want 700", ep.Side, strings.TrimSpace(string(out)), err)
				}
				// What tunbench writes is private (the pid file is
				// OpenVPN's own, in the private directory).
				names := []string{"openvpn.conf", "openvpn.log", "ca.crt", cert + ".crt", cert + ".key"}
				if tt.proto == "udp" {
					names = append(names, "tls-crypt.key") // tls-crypt is on by default
				}
				for _, name := range names {
					out, err := ep.Run(ctx, "stat", "-c", "%a", filepath.Join(dir, name))
					if err != nil || strings.TrimSpace(string(out)) != "600" {
						t.Errorf("%s: %s on its host: mode %q (%v), want 600", ep.Side, name, strings.TrimSpace(string(out)), err)
					}
					if strings.HasSuffix(name, ".key") || strings.HasSuffix(name, ".crt") {
						data, err := ep.ReadFile(filepath.Join(dir, name))
						if err != nil {
							t.Fatal(err)
						}
						for _, line := range strings.Split(string(data), "\n") {
							if len(line) >= 32 && !strings.HasPrefix(line, "-----") && !strings.HasPrefix(line, "#") {
								secrets = append(secrets, line)
							}
						}
					}
				}
				pid, err := ep.ReadFile(filepath.Join(dir, "openvpn.pid"))
				if d := path.Daemons[i]; err != nil || d.Side != ep.Side || strings.TrimSpace(string(pid)) != strconv.Itoa(d.PID) {
					t.Errorf("%s: pid file %q (%v), daemon %+v", ep.Side, pid, err, d)
				}
			}
			methodtest.NoSecrets(t, "Path", fmt.Sprintf("%+v %s", *path, path.Variant), secrets)

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
			if tp, err := load.ParseIperf3(out); err != nil || tp.BitsPerSecond <= 0 {
				t.Errorf("iperf3 through the agents: %v bit/s received (%v)", tp.BitsPerSecond, err)
			}
			frames, err := wire.Summarize(pkts)
			if err != nil {
				t.Fatal(err)
			}
			checkOpenVPNWire(t, frames, env, tt.proto, port)

			td := m
			if tt.stranger {
				td = openvpn.NewOpenVPN()
			}
			if err := td.Teardown(ctx, env); err != nil {
				t.Fatalf("Teardown through agents: %v", err)
			}
			if diff := cmp.Diff(beforeProcs, methodtest.AgentProcesses(t, pair)); diff != "" {
				t.Errorf("processes on the agents' hosts after teardown (-before +after):\n%s", diff)
			}
			if err := m.Teardown(ctx, env); err != nil {
				t.Errorf("second Teardown through agents: %v", err)
			}
			if diff := cmp.Diff(beforeLinks, links()); diff != "" {
				t.Errorf("links after teardown (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(beforeFiles, methodtest.AgentFiles(t, pair)); diff != "" {
				t.Errorf("files in the agents' run directories after teardown (-before +after):\n%s", diff)
			}
			for i, ep := range pair.Endpoints() {
				d := path.Daemons[i]
				if comm, err := ep.ReadFile(fmt.Sprintf("/proc/%d/comm", d.PID)); err == nil && strings.TrimSpace(string(comm)) == "openvpn" {
					t.Errorf("openvpn %d of side %s still runs on its host", d.PID, d.Side)
				}
			}
			if diff := cmp.Diff(outsideBefore, ovpnOutside(env.Prefix)); diff != "" {
				t.Errorf("OpenVPN state outside the run directories (-before +after):\n%s", diff)
			}
		})
	}
}
