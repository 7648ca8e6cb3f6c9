package openvpn

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// OpenVPN is OpenVPN 2.6 as a classic TLS VPN: side b runs a server
// (--mode server, --tls-server), side a a client (--client) that connects
// to it, both on a TUN device in their namespace. Each run generates its
// own CA, server and client certificates (ECDSA P-256, see
// openvpn_pki.go) and a tls-crypt key, in Go. The data channel runs in
// userspace: data channel offload is disabled explicitly (--disable-dco;
// the host kernel has no ovpn module either).
//
// The server gives the client its overlay address through a
// --client-config-dir entry (ifconfig-push), with --ccd-exclusive so that
// no other certificate is admitted. OpenVPN configures its TUN device
// itself over netlink, so no script runs (--script-security 0). Each side's
// configuration file, certificates, keys, pid file, status file and log
// live in its side directory; nothing is written elsewhere.
//
// Server mode rather than --mode p2p, because that is how OpenVPN is
// normally deployed; measured side by side here, p2p with the same
// options carried the same throughput. Socket buffers are left at
// OpenVPN's default (the kernel's, 208 KiB), as in a stock deployment:
// under load the receiving side then drops UDP datagrams
// (UdpRcvbufErrors) and TCP in the tunnel retransmits.
//
// Options:
//   - "proto": "udp" (default) or "tcp" (b is the TCP server);
//   - "cipher": data channel cipher, "AES-256-GCM" (default) or
//     "CHACHA20-POLY1305" (--data-ciphers on both sides, so the
//     negotiation can only pick it);
//   - "tls-crypt": "on" (default) wraps the control channel with a
//     per-run key (--tls-crypt), "off" leaves it without;
//   - "port": the server's port (default 1194).
//
// It is safe for concurrent use by runs with distinct Env.Dir.
type OpenVPN struct {
	// InitTimeout bounds each wait for a daemon to complete its
	// initialisation; zero is 15 s (tests shorten it).
	InitTimeout time.Duration

	mu   sync.Mutex
	runs map[string][]*method.Process // by Env.Dir
}

// NewOpenVPN returns the openvpn method.
func NewOpenVPN() *OpenVPN { return &OpenVPN{runs: map[string][]*method.Process{}} }

// OpenVPNPort is the IANA OpenVPN port, the default of option "port".
const OpenVPNPort = 1194

// Data channel ciphers (option "cipher").
const (
	OpenVPNAES256GCM = "AES-256-GCM"
	OpenVPNChaCha20  = "CHACHA20-POLY1305"
)

// ovpnInitTimeout is OpenVPN.InitTimeout's default.
const ovpnInitTimeout = 15 * time.Second

// initTimeout is m's wait for a daemon's initialisation.
func (m *OpenVPN) initTimeout() time.Duration {
	if m.InitTimeout > 0 {
		return m.InitTimeout
	}
	return ovpnInitTimeout
}

// ovpnStatusTimeout bounds the wait for the server's status file to list
// the connected client (it is rewritten every second).
const ovpnStatusTimeout = 5 * time.Second

// ovpnInitDone is what OpenVPN logs once it is up: for the client, once
// the TLS handshake, the pushed options and its TUN device are done.
const ovpnInitDone = "Initialization Sequence Completed"

func (*OpenVPN) Name() string { return "openvpn" }

// Scale says openvpn sets up one tunnel (method.Scaler): one server and
// one client daemon, each with its certificate.
func (*OpenVPN) Scale(string, method.Values) method.Scale {
	return method.Scale{Unit: "client (TLS session to the server)", Max: 1,
		Why: "openvpn runs one server daemon on b and one client daemon on a, each with its own certificate; N clients would be N client daemons, certificates and TUN devices on a, which this method does not set up"}
}

// Implementation names the version installed on this machine and its
// crypto library, e.g. "OpenVPN 2.6.14, OpenSSL 3.0.19 (userspace, TUN)",
// for descriptions (tunbench methods); a cell records its host's
// (ImplementationOn).
func (*OpenVPN) Implementation() string { return programVersion.Local() + ovpnImpl }

// ImplementationOn names the OpenVPN of ep's host and its crypto library.
func (*OpenVPN) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return programVersion.On(ctx, ep) + ovpnImpl
}

// ovpnImpl follows the version in the Implementation.
const ovpnImpl = " (userspace, TUN)"

var _ method.HostImplementer = (*OpenVPN)(nil)

// programVersion is ParseOpenVPNVersion of "openvpn --version" (older
// releases exit 1 after it; the output is what counts).
var programVersion = &method.ProgramVersion{Program: "openvpn", Name: "OpenVPN", Parse: ParseOpenVPNVersion}

// ParseOpenVPNVersion condenses "openvpn --version" output into
// "OpenVPN 2.6.14, OpenSSL 3.0.19"; unknown output gives "OpenVPN
// (version unknown)".
func ParseOpenVPNVersion(out []byte) string {
	lines := strings.Split(string(out), "\n")
	f := strings.Fields(lines[0])
	if len(f) < 2 || f[0] != "OpenVPN" {
		return "OpenVPN (version unknown)"
	}
	v := "OpenVPN " + f[1]
	for _, l := range lines[1:] {
		libs, ok := strings.CutPrefix(l, "library versions: ")
		if !ok {
			continue
		}
		// "OpenSSL 3.0.19 27 Jan 2026, LZO 2.10": keep the crypto library.
		first, _, _ := strings.Cut(libs, ",")
		if lf := strings.Fields(first); len(lf) >= 2 {
			v += ", " + lf[0] + " " + lf[1]
		}
		break
	}
	return v
}

func (*OpenVPN) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead is the outer IP header (20 for IPv4, 40 for IPv6), UDP (8) and
// the data channel's AEAD packet format (P_DATA_V2): opcode, key id and
// peer id (4), packet id (4, the AEAD nonce's counter part) and the
// authentication tag (16, both for AES-256-GCM and ChaCha20-Poly1305):
// 52 bytes over IPv4, 72 over IPv6. No compression framing is added (no
// --compress), and AEAD ciphers need no padding.
//
// Option proto=tcp frames each packet with a 2-byte length in a TCP stream
// instead (20 + TCP 20, plus 12 of timestamp option on Linux + 2 + 24 = 78
// bytes per packet over IPv4, amortised), but the outer TCP stream is cut
// into segments by its own MSS, independently of the tunnelled packets, so
// the overlay MTU can never cause IP fragmentation on the underlay; the
// UDP figure is kept so that both protos run with the same overlay MTU.
//
// The TUN device's MTU is set explicitly to env.OverlayMTU (--tun-mtu), so
// that a full-size overlay packet becomes an underlay packet of exactly
// the underlay MTU, and --mssfix is off (0): TCP's own MSS, derived from
// the TUN MTU, already fits, and OpenVPN 2.6's default (1492 mtu) would
// clamp it 8 bytes lower than necessary.
func (*OpenVPN) Overhead(family string) int {
	if family == method.IPv6 {
		return 40 + 8 + ovpnDataOverhead
	}
	return 20 + 8 + ovpnDataOverhead
}

// HeaderOverhead is Overhead over UDP; over TCP the outer TCP header is
// 20 bytes, not UDP's 8, and each packet carries a 2-byte length prefix.
func (o *OpenVPN) HeaderOverhead(family string, opts map[string]string, _ string) int {
	if opts["proto"] == "tcp" {
		return o.Overhead(family) - 8 + 20 + 2
	}
	return o.Overhead(family)
}

// ovpnDataOverhead is the P_DATA_V2 AEAD framing: opcode+peer id 4,
// packet id 4, tag 16.
const ovpnDataOverhead = 4 + 4 + 16

func (*OpenVPN) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_TUN", Module: "tun"},
		{Program: "openvpn", Package: "openvpn"},
	}
}

// OpenVPNOptions are the parsed options of the openvpn method.
type OpenVPNOptions struct {
	Proto    string // "udp" or "tcp"
	Cipher   string // OpenVPNAES256GCM or OpenVPNChaCha20
	TLSCrypt bool
	Port     int
}

// openvpnOptions are the options of the openvpn method.
var openvpnOptions = []method.Option{
	{Name: "proto", Default: "udp", Values: []string{"udp", "tcp"},
		Help: "transport between the peers (tcp: b is the server)"},
	{Name: "cipher", Default: OpenVPNAES256GCM, Values: []string{OpenVPNAES256GCM, OpenVPNChaCha20}, Fold: true,
		Help: "data channel cipher (--data-ciphers on both sides)"},
	{Name: "tls-crypt", Default: "on", Values: []string{"on", "off"},
		Help: "wrap the control channel with a per-run key (--tls-crypt)"},
	{Name: "port", Default: strconv.Itoa(OpenVPNPort), Min: 1, Max: 65535,
		Help: "the server's port"},
}

// Options declares the scenario options (see Option).
func (*OpenVPN) Options() []method.Option { return openvpnOptions }

// Listens declares the sockets a run opens (method.Listener): b's server
// socket on its underlay address (--local, --lport) and, over UDP, a's
// client socket on its own underlay address at a port the kernel picks
// (--local, --lport 0; over TCP a's socket is a connection, not a
// listener).
func (*OpenVPN) Listens(opts method.Values, _ string) []method.Listen {
	proto := opts.String("proto")
	ls := []method.Listen{{Side: "b", Proto: proto, Port: opts.Int("port"), PortOption: "port",
		Addr: method.ListenUnderlay, Program: "openvpn (server)"}}
	if proto == "udp" {
		ls = append(ls, method.Listen{Side: "a", Proto: "udp", Addr: method.ListenUnderlay, Program: "openvpn (client)"})
	}
	return ls
}

// ParseOpenVPNOptions validates opts (see OpenVPN) and fills in defaults.
func ParseOpenVPNOptions(opts map[string]string) (OpenVPNOptions, error) {
	v, err := method.ParseDeclared("openvpn", openvpnOptions, opts)
	if err != nil {
		return OpenVPNOptions{}, err
	}
	return OpenVPNOptions{
		Proto:    v.String("proto"),
		Cipher:   v.String("cipher"),
		TLSCrypt: v.On("tls-crypt"),
		Port:     v.Int("port"),
	}, nil
}

// Variant describes what runs, e.g. "AES-256-GCM, udp, tls-crypt,
// userspace data channel (no DCO)".
func (o OpenVPNOptions) Variant() string {
	control := "tls-crypt"
	if !o.TLSCrypt {
		control = "plain TLS control channel"
	}
	return fmt.Sprintf("%s, %s, %s, userspace data channel (no DCO)", o.Cipher, o.Proto, control)
}

func ovpnDevName(env *method.Env) string { return env.Prefix + "-ovpn" }

// File names inside a side directory.
const (
	ovpnConfigFile   = "openvpn.conf"
	ovpnLogFile      = "openvpn.log"
	ovpnPIDFile      = "openvpn.pid"
	ovpnStatusFile   = "openvpn-status.txt"
	ovpnCCDDir       = "ccd"
	ovpnCAFile       = "ca.crt"
	ovpnTLSCryptFile = "tls-crypt.key"
)

// ovpnSide is the configuration of one side; its rendering (Config) holds
// only paths to the key material, never the material itself.
type ovpnSide struct {
	Server bool
	Dir    string // side directory
	Dev    string
	MTU    int
	Family string
	// Local is the side's own underlay address, the one its socket is
	// bound to; Remote the one the client connects to.
	Local, Remote netip.Addr
	Port          int
	Opts          OpenVPNOptions
	// Overlay is this side's overlay address; Peer the other side's.
	Overlay, Peer netip.Prefix
}

func (s *ovpnSide) path(name string) string { return filepath.Join(s.Dir, name) }

// certName is the name of this side's certificate and key files.
func (s *ovpnSide) certName() string {
	if s.Server {
		return "server"
	}
	return "client"
}

// ovpnQuote quotes a path for an OpenVPN configuration file.
func ovpnQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Config renders the side's OpenVPN configuration file.
func (s *ovpnSide) Config() string {
	var b strings.Builder
	line := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	v6 := s.Family == method.IPv6
	proto := s.Opts.Proto
	if proto == "tcp" {
		if s.Server {
			proto += "-server"
		} else {
			proto += "-client"
		}
	}
	// udp4, tcp6-server, ...: the socket family follows the underlay.
	if v6 {
		proto = strings.Replace(proto, s.Opts.Proto, s.Opts.Proto+"6", 1)
	} else {
		proto = strings.Replace(proto, s.Opts.Proto, s.Opts.Proto+"4", 1)
	}
	role := "client (side a)"
	if s.Server {
		role = "server (side b)"
	}
	line("# tunbench openvpn %s, generated for one run", role)
	if s.Server {
		line("mode server")
		line("tls-server")
	} else {
		line("client")
	}
	line("dev-type tun")
	line("dev %s", s.Dev)
	line("disable-dco")
	line("proto %s", proto)
	if s.Server {
		line("local %s", s.Local)
		line("lport %d", s.Port)
	} else {
		line("remote %s %d", s.Remote, s.Port)
		// Bound to a's underlay address on a port the kernel picks, not
		// --nobind's 0.0.0.0, which any address of the host reaches.
		line("local %s", s.Local)
		line("lport 0")
		line("connect-retry 1 1")
	}
	line("tun-mtu %d", s.MTU)
	line("mssfix 0")
	if s.Server {
		line("topology subnet")
		if v6 {
			line("ifconfig-ipv6 %s %s", s.Overlay, s.Peer.Addr())
		} else {
			line("ifconfig %s %s", s.Overlay.Addr(), ovpnNetmask(s.Overlay))
		}
		line("push %q", "topology subnet")
		line("client-config-dir %s", ovpnQuote(s.path(ovpnCCDDir)))
		line("ccd-exclusive")
		line("keepalive 10 60")
		line("dh none")
		line("remote-cert-tls client")
		line("verify-x509-name %s name", ovpnClientName)
	} else {
		line("remote-cert-tls server")
		line("verify-x509-name %s name", ovpnServerName)
	}
	line("ca %s", ovpnQuote(s.path(ovpnCAFile)))
	line("cert %s", ovpnQuote(s.path(s.certName()+".crt")))
	line("key %s", ovpnQuote(s.path(s.certName()+".key")))
	if s.Opts.TLSCrypt {
		line("tls-crypt %s", ovpnQuote(s.path(ovpnTLSCryptFile)))
	}
	line("data-ciphers %s", s.Opts.Cipher)
	line("script-security 0")
	line("writepid %s", ovpnQuote(s.path(ovpnPIDFile)))
	line("status %s 1", ovpnQuote(s.path(ovpnStatusFile)))
	if s.Server {
		line("status-version 2")
	}
	line("verb 3")
	return b.String()
}

// CCD renders the server's client-config-dir entry for the client: its
// overlay address (the server's Peer).
func (s *ovpnSide) CCD() string {
	if s.Family == method.IPv6 {
		return fmt.Sprintf("ifconfig-ipv6-push %s %s\n", s.Peer, s.Overlay.Addr())
	}
	return fmt.Sprintf("ifconfig-push %s %s\n", s.Peer.Addr(), ovpnNetmask(s.Peer))
}

// ovpnNetmask is p's IPv4 netmask in dotted quad form.
func ovpnNetmask(p netip.Prefix) string {
	m := ^uint32(0) << (32 - p.Bits())
	return netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String()
}

// ovpnPlan returns the sides' configuration: a the client, b the server.
func ovpnPlan(env *method.Env, o OpenVPNOptions) [2]*ovpnSide {
	oa, ob := method.Overlay(env.Family)
	dev := ovpnDevName(env)
	client := &ovpnSide{Dev: dev, MTU: env.OverlayMTU, Family: env.Family, Port: o.Port, Opts: o,
		Local: env.A.Addr(env.Family), Remote: env.B.Addr(env.Family), Overlay: oa, Peer: ob}
	server := &ovpnSide{Server: true, Dev: dev, MTU: env.OverlayMTU, Family: env.Family, Port: o.Port, Opts: o,
		Local: env.B.Addr(env.Family), Overlay: ob, Peer: oa}
	return [2]*ovpnSide{client, server}
}

// writeFiles writes the side's configuration and its key material (all
// 0600) into its directory.
func (s *ovpnSide) writeFiles(ep *testbed.Endpoint, pki *ovpnPKI) error {
	side := ep.Side
	files := map[string][]byte{ovpnConfigFile: []byte(s.Config()), ovpnCAFile: pki.CACert}
	if s.Server {
		files["server.crt"], files["server.key"] = pki.ServerCert, pki.ServerKey
		if err := ep.MkdirAll(s.path(ovpnCCDDir), 0o700); err != nil {
			return fmt.Errorf("%s: create %s: %w", side, ovpnCCDDir, err)
		}
		files[filepath.Join(ovpnCCDDir, ovpnClientName)] = []byte(s.CCD())
	} else {
		files["client.crt"], files["client.key"] = pki.ClientCert, pki.ClientKey
	}
	if s.Opts.TLSCrypt {
		files[ovpnTLSCryptFile] = pki.TLSCrypt
	}
	for name, data := range files {
		if err := method.WriteSecret(ep, s.path(name), data); err != nil {
			return fmt.Errorf("%s: %w", side, err)
		}
	}
	return nil
}

func (m *OpenVPN) record(env *method.Env, p *method.Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[env.Dir] = append(m.runs[env.Dir], p)
}

// Setup generates the run's PKI, starts the server on b and waits until it
// is up, then the client on a, waits until the client has completed its
// initialisation and the server's status lists it with the requested
// cipher.
func (m *OpenVPN) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	o, err := ParseOpenVPNOptions(env.Options)
	if err != nil {
		return nil, err
	}
	pki, err := newOVPNPKI(time.Now())
	if err != nil {
		return nil, err
	}
	sides := ovpnPlan(env, o)
	var procs [2]*method.Process
	// Server first, so that the client's first packet finds it.
	for _, i := range []int{1, 0} {
		ep, s := env.Endpoints()[i], sides[i]
		if s.Dir, err = method.SideDir(env, m.Name(), ep); err != nil {
			return nil, err
		}
		if err := s.writeFiles(ep, pki); err != nil {
			return nil, err
		}
		p, err := method.StartDaemon(ep, "openvpn", s.path(ovpnLogFile), nil, "openvpn", "--config", s.path(ovpnConfigFile))
		if err != nil {
			return nil, err
		}
		m.record(env, p)
		procs[i] = p
		if err := ovpnWaitInit(ctx, ep, p, m.initTimeout()); err != nil {
			return nil, err
		}
	}
	client, err := ovpnWaitClient(ctx, env.B, procs[1], sides[1].path(ovpnStatusFile), o.Cipher)
	if err != nil {
		return nil, err
	}
	if client.Cipher != "" && client.Cipher != o.Cipher {
		return nil, procs[1].Failure(fmt.Sprintf("data channel cipher %s negotiated, want %s", client.Cipher, o.Cipher), nil)
	}
	for i, ep := range env.Endpoints() {
		if err := ovpnCheckDev(ep, sides[i].Dev, env.OverlayMTU, sides[i].Overlay); err != nil {
			return nil, err
		}
	}
	return &method.Path{
		A:        sides[0].Overlay.Addr(),
		B:        sides[1].Overlay.Addr(),
		Devices:  map[string][]string{"a": {sides[0].Dev, env.A.Dev}, "b": {sides[1].Dev, env.B.Dev}},
		Daemons:  []method.Daemon{procs[0].Daemon(), procs[1].Daemon()},
		Variant:  o.Variant(),
		Datapath: method.DatapathUserspace,
	}, nil
}

// ovpnWaitInit waits until p, started on ep, logs that its initialisation
// is complete (its log is read on ep's host). An exit, a completion "With
// Errors" or the timeout is an error quoting the log.
func ovpnWaitInit(ctx context.Context, ep *testbed.Endpoint, p *method.Process, timeout time.Duration) error {
	err := method.WaitFor(ctx, timeout, fmt.Sprintf("%q in %s", ovpnInitDone, filepath.Base(p.Log)), func() (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		data, err := ep.ReadFile(p.Log)
		if err != nil {
			return false, err
		}
		i := strings.Index(string(data), ovpnInitDone)
		if i < 0 {
			return false, nil
		}
		if rest := string(data[i+len(ovpnInitDone):]); strings.HasPrefix(rest, " With Errors") {
			return false, errors.New("initialization completed with errors")
		}
		return true, nil
	})
	if err != nil {
		return p.Failure("start", err)
	}
	return nil
}

// ovpnWaitClient waits until the server's status file, on ep's host where
// server runs, lists the client.
func ovpnWaitClient(ctx context.Context, ep *testbed.Endpoint, server *method.Process, statusFile, cipher string) (*OpenVPNClient, error) {
	var client *OpenVPNClient
	var parseErr error // the last one, reported on timeout
	err := method.WaitFor(ctx, ovpnStatusTimeout, "client "+ovpnClientName+" in "+filepath.Base(statusFile), func() (bool, error) {
		if err := server.Alive(); err != nil {
			return false, err
		}
		data, err := ep.ReadFile(statusFile)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		st, err := ParseOpenVPNStatus(data)
		if err != nil {
			// Most likely read while being rewritten: try again.
			parseErr = err
			return false, nil
		}
		for i := range st.Clients {
			if st.Clients[i].CommonName == ovpnClientName {
				client = &st.Clients[i]
				// Until the pushed options are applied the status file
				// may still show the placeholder cipher (BF-CBC): wait
				// for the negotiated one.
				return client.Cipher == "" || client.Cipher == cipher, nil
			}
		}
		return false, nil
	})
	if err != nil && client != nil {
		// The client is there with another cipher: the caller reports it.
		return client, nil
	}
	if err != nil {
		if parseErr != nil {
			err = fmt.Errorf("%w (last read: %w)", err, parseErr)
		}
		return nil, server.Failure("client connection", err)
	}
	return client, nil
}

// ovpnCheckDev checks that OpenVPN created dev with the requested MTU and
// overlay address.
func ovpnCheckDev(ep *testbed.Endpoint, dev string, mtu int, addr netip.Prefix) error {
	link, err := ep.NL.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", ep.Side, dev, err)
	}
	if got := link.Attrs().MTU; got != mtu {
		return fmt.Errorf("%s: %s has mtu %d, want %d (tun-mtu)", ep.Side, dev, got, mtu)
	}
	addrs, err := ep.NL.AddrList(link, 0)
	if err != nil {
		return fmt.Errorf("%s: list addresses of %s: %w", ep.Side, dev, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr.Addr() {
			return nil
		}
	}
	return fmt.Errorf("%s: %s lacks overlay address %s", ep.Side, dev, addr.Addr())
}

// Teardown stops both daemons (which removes their TUN devices), deletes
// any device left, and removes the side directories with their keys.
// Daemons of this run that another OpenVPN value started are found by
// their pid files, on their hosts (opKillByPIDFile).
func (m *OpenVPN) Teardown(ctx context.Context, env *method.Env) error {
	m.mu.Lock()
	procs := m.runs[env.Dir]
	delete(m.runs, env.Dir)
	m.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.Stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ep := range env.Endpoints() {
		if ep == nil {
			continue
		}
		dir := filepath.Join(method.SideRoot(env, ep), m.Name()+"-"+ep.Side)
		if _, err := opKillByPIDFile.Call(context.WithoutCancel(ctx), ep, dir); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep.Side, err))
		}
		errs = append(errs, method.DelLinks(ep, ovpnDevName(env)))
		if err := ep.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// opKillByPIDFile runs ovpnKillByPIDFile on the endpoint's host, where
// the pid file and /proc are; it returns the pid it killed, 0 if none.
var opKillByPIDFile = testbed.NewOp("openvpn.kill-by-pidfile", func(_ context.Context, _ *testbed.Endpoint, dir string) (int, error) {
	return ovpnKillByPIDFile(dir)
})

// ovpnKillByPIDFile kills the openvpn whose pid file is in dir, if it
// still runs and was started with that directory's configuration, and
// waits until it is gone. It reads this machine's /proc: call it on the
// daemon's host (opKillByPIDFile). It returns the pid it killed, 0 if
// none.
func ovpnKillByPIDFile(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, ovpnPIDFile))
	if err != nil {
		return 0, nil // no pid file: nothing started, or stopped already
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), filepath.Join(dir, ovpnConfigFile)) {
		return 0, nil // gone, or the pid now belongs to another process
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("kill openvpn (pid %d): %w", pid, err)
	}
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return pid, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pid, fmt.Errorf("openvpn (pid %d) still runs after SIGKILL", pid)
}
