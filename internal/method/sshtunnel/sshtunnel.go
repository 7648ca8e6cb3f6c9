// Package sshtunnel is the ssh-tunnel method: OpenSSH's own layer-3
// tunnel (ssh -w), a TUN device on each side joined by one SSH connection
// from side a's ssh client to an sshd of the run's own on side b.
//
// It is TCP over TCP: every overlay packet travels as SSH channel data in
// one outer TCP connection, so the tunnelled flows share that
// connection's congestion control, retransmissions and send buffer. A
// loss on the underlay stalls every flow behind it, and a bulk flow's
// queue in the outer connection delays everything else (the
// latency_under_load test shows it).
package sshtunnel

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
	"golang.org/x/crypto/ssh"
)

// Name is the method's scenario name.
const Name = "ssh-tunnel"

// Ciphers (option "cipher"): OpenSSH's three AEAD ciphers. Both sides
// offer only the chosen one, so the key exchange can only pick it.
const (
	ChaCha20Poly1305 = "chacha20-poly1305@openssh.com"
	AES128GCM        = "aes128-gcm@openssh.com"
	AES256GCM        = "aes256-gcm@openssh.com"
)

// DefaultCipher is OpenSSH's own first choice (the head of the default
// Ciphers list in ssh_config(5) and sshd_config(5)), what an ssh -w
// between two stock OpenSSHs negotiates.
const DefaultCipher = ChaCha20Poly1305

var options = []method.Option{
	{Name: "cipher", Default: DefaultCipher, Values: []string{ChaCha20Poly1305, AES128GCM, AES256GCM},
		Help: "SSH cipher of both sides (Ciphers): OpenSSH's default chacha20-poly1305, or AES-GCM with a 128- or 256-bit key"},
	{Name: "port", Default: "0", Min: 0, Max: 65535,
		Help: "sshd's TCP port on b's underlay address; 0 picks a free one on b's host at set-up"},
}

// defaultInitTimeout is SSHTunnel.InitTimeout's default.
const defaultInitTimeout = 15 * time.Second

// initTimeout is m's bound of each set-up wait.
func (m *SSHTunnel) initTimeout() time.Duration {
	if m.InitTimeout > 0 {
		return m.InitTimeout
	}
	return defaultInitTimeout
}

// File names inside a side directory.
const (
	clientKeyFile  = "id_ed25519"
	knownHostsFile = "known_hosts"
	clientLogFile  = "ssh.log"
	clientPIDFile  = "ssh.pid"
	hostKeyFile    = "ssh_host_ed25519_key"
	authorizedFile = "authorized_keys"
	sshdConfigFile = "sshd_config"
	sshdLogFile    = "sshd.log"
	sshdPIDFile    = "sshd.pid"
	// madePrivsepFile marks that this run created sshd's privilege
	// separation directory, which teardown then removes.
	madePrivsepFile = "made-privsep-dir"
)

// privsepDir is the privilege separation directory Debian's sshd insists
// on (the openssh-server service creates it at boot).
const privsepDir = "/run/sshd"

// hostKeyAlias is the name under which a's known_hosts pins b's per-run
// host key (HostKeyAlias), whatever b's address and port.
const hostKeyAlias = "tunbench-ssh-tunnel"

// SSHTunnel is OpenSSH's layer-3 tunnel (ssh -w). Side b runs an sshd of
// the run's own (sshd -D, its own configuration, pid file, host key,
// authorized key and log in b's side directory; PermitTunnel
// point-to-point, root by public key only, nothing else permitted),
// listening on b's underlay address; side a runs ssh -N -w with no user
// configuration (-F /dev/null), no agent, the per-run client key and b's
// per-run host key pinned in a private known_hosts (StrictHostKeyChecking
// yes). Each side's tun device comes from OpenSSH under a free unit
// number (tunN, N picked per side among the units no device uses) and is
// renamed to the run's prefix (-ssha / -sshb) once it appears, then gets
// its MTU and overlay address.
//
// It is safe for concurrent use by runs with distinct Env.Dir.
type SSHTunnel struct {
	// InitTimeout bounds each wait of the set-up: sshd listening, the
	// tunnel devices appearing, the first ping through; zero is 15 s
	// (tests shorten it).
	InitTimeout time.Duration

	mu   sync.Mutex
	runs map[string][]*method.Process // by Env.Dir
	// pinOther, set by tests only, pins a host key other than b's.
	pinOther bool
	// units, set by tests only, are a's and b's tun units in place of
	// free ones picked at random.
	units [2]int
}

// New returns the ssh-tunnel method.
func New() *SSHTunnel { return &SSHTunnel{runs: map[string][]*method.Process{}} }

func (*SSHTunnel) Name() string { return Name }

// Scale says ssh-tunnel sets up one tunnel (method.Scaler): one SSH
// connection carrying one TUN device pair.
func (*SSHTunnel) Scale(string, method.Values) method.Scale {
	return method.Scale{Unit: "SSH connection with its TUN device pair", Max: 1,
		Why: "ssh-tunnel carries one TUN device pair over one SSH connection (ssh -w) to the run's one sshd; N would be N ssh clients and sshd sessions, which this method does not set up"}
}

// impl follows the version in the Implementation.
const impl = " (ssh -w, userspace, TUN over TCP)"

// Implementation names this machine's OpenSSH, e.g. "OpenSSH 9.2p1,
// OpenSSL 3.0.19 (ssh -w, userspace, TUN over TCP)"; a cell records its
// hosts' (ImplementationOn).
func (*SSHTunnel) Implementation() string { return programVersion.Local() + impl }

// ImplementationOn names the OpenSSH client on ep's host.
func (*SSHTunnel) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return programVersion.On(ctx, ep) + impl
}

var _ method.HostImplementer = (*SSHTunnel)(nil)

// programVersion is ParseVersion of "ssh -V" (on stderr).
var programVersion = &method.ProgramVersion{Program: "ssh", Args: []string{"-V"}, Name: "OpenSSH", Parse: ParseVersion}

// ParseVersion condenses "ssh -V" output ("OpenSSH_9.2p1 Debian-2+deb12u10,
// OpenSSL 3.0.19 27 Jan 2026") into "OpenSSH 9.2p1, OpenSSL 3.0.19";
// anything else is "OpenSSH (version unknown)".
func ParseVersion(out []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	first, rest, _ := strings.Cut(line, ",")
	f := strings.Fields(first)
	v, ok := "", false
	if len(f) > 0 {
		v, ok = strings.CutPrefix(f[0], "OpenSSH_")
	}
	if !ok || v == "" {
		return "OpenSSH (version unknown)"
	}
	s := "OpenSSH " + v
	if lib := strings.Fields(rest); len(lib) >= 2 {
		s += ", " + lib[0] + " " + lib[1]
	}
	return s
}

func (*SSHTunnel) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead is what one full-size overlay packet adds in the outer TCP
// stream, worst case over the three ciphers: outer IP (20 / 40), TCP
// (20) with Linux's timestamp option (12), and the SSH binary packet
// around it: packet length 4, padding length 1, the channel data header
// 9 (SSH_MSG_CHANNEL_DATA 1, recipient channel 4, data length 4), the
// 4-byte address family header OpenSSH puts before each tun packet,
// padding of 4 to 19 bytes (the encrypted part is a multiple of 16 bytes
// for AES-GCM, of 8 for ChaCha20-Poly1305; 19 is the most) and the
// 16-byte authentication tag: 105 bytes over IPv4, 125 over IPv6.
//
// With the overlay MTU the underlay MTU less this, the SSH packet of a
// full-size overlay packet always fits one full-size outer segment (the
// outer MSS is the underlay MTU less IP, TCP and timestamps). The outer
// TCP cuts its stream at its own MSS, whatever the packets inside, so the
// underlay is never fragmented either way; under load SSH packets
// straddle segments, and per overlay packet the wire carries about the
// same bytes as this figure says (docs/methods.md, "Ceiling arithmetic").
func (*SSHTunnel) Overhead(family string) int {
	if family == method.IPv6 {
		return 40 + sshFraming
	}
	return 20 + sshFraming
}

// sshFraming is TCP 20 + timestamps 12 + packet length 4 + padding
// length 1 + channel data header 9 + AF header 4 + padding 19 + tag 16.
const sshFraming = 20 + 12 + 4 + 1 + 9 + 4 + 19 + 16

func (*SSHTunnel) Options() []method.Option { return options }

// Listens declares the sockets a run opens (method.Listener): b's sshd on
// its underlay address (ListenAddress) at option port, or at a port the
// kernel picked free there when port is 0; a's ssh only connects.
func (*SSHTunnel) Listens(opts method.Values, _ string) []method.Listen {
	return []method.Listen{{Side: "b", Proto: "tcp", Port: opts.Int("port"), PortOption: "port",
		Addr: method.ListenUnderlay, Program: "sshd"}}
}

func (*SSHTunnel) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_TUN", Module: "tun"},
		{Program: "ssh", Package: "openssh-client"},
		{Program: "sshd", Package: "openssh-server"},
		{Program: "ip", Package: "iproute2"},
		{Program: "ping", Package: "iputils-ping"},
	}
}

// DevName is the name side ep's tun device gets once OpenSSH created it.
func DevName(env *method.Env, ep *testbed.Endpoint) string { return env.Prefix + "-ssh" + ep.Side }

// side is one side's plan.
type side struct {
	ep   *testbed.Endpoint
	dir  string
	unit int // the tunN OpenSSH creates
	dev  string
	addr netip.Prefix
}

func (s *side) path(name string) string { return filepath.Join(s.dir, name) }
func (s *side) tun() string             { return "tun" + strconv.Itoa(s.unit) }

// keys is a run's key material: the client's key pair and b's host key
// pair, OpenSSH formats.
type keys struct {
	ClientKey, ClientPub []byte // private key (PEM), authorized_keys line
	HostKey, HostPub     []byte
}

func newKeys() (*keys, error) {
	k := &keys{}
	for _, kp := range []struct {
		priv, pub *[]byte
		comment   string
	}{{&k.ClientKey, &k.ClientPub, "tunbench ssh-tunnel client"}, {&k.HostKey, &k.HostPub, "tunbench ssh-tunnel host"}} {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("ssh-tunnel: generate key: %w", err)
		}
		block, err := ssh.MarshalPrivateKey(priv, kp.comment)
		if err != nil {
			return nil, fmt.Errorf("ssh-tunnel: encode key: %w", err)
		}
		sp, err := ssh.NewPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("ssh-tunnel: encode public key: %w", err)
		}
		*kp.priv, *kp.pub = pem.EncodeToMemory(block), ssh.MarshalAuthorizedKey(sp)
	}
	return k, nil
}

// SSHDConfig renders b's sshd configuration: listen on addr:port only,
// the per-run host key, root by the per-run public key only, the tunnel
// in point-to-point mode and nothing else (no forwarding, no tty, no
// PAM), only cipher, and dead clients dropped within 15 s.
func SSHDConfig(dir string, addr netip.Addr, port int, cipher string) string {
	af := "inet"
	if addr.Is6() {
		af = "inet6"
	}
	lines := []string{
		"# tunbench ssh-tunnel server (side b), generated for one run",
		"ListenAddress " + netip.AddrPortFrom(addr, uint16(port)).String(),
		"AddressFamily " + af,
		"HostKey " + filepath.Join(dir, hostKeyFile),
		"HostKeyAlgorithms ssh-ed25519",
		"PidFile " + filepath.Join(dir, sshdPIDFile),
		"AuthorizedKeysFile " + filepath.Join(dir, authorizedFile),
		"AuthorizedPrincipalsFile none",
		"AllowUsers root",
		"PermitRootLogin prohibit-password",
		"AuthenticationMethods publickey",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"HostbasedAuthentication no",
		"GSSAPIAuthentication no",
		"StrictModes no",
		"UsePAM no",
		"PermitTunnel point-to-point",
		"AllowTcpForwarding no",
		"AllowStreamLocalForwarding no",
		"AllowAgentForwarding no",
		"X11Forwarding no",
		"PermitTTY no",
		"PermitUserRC no",
		"PermitUserEnvironment no",
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		"Ciphers " + cipher,
		"Compression no",
		"ClientAliveInterval 5",
		"ClientAliveCountMax 3",
		"LogLevel VERBOSE",
	}
	return strings.Join(lines, "\n") + "\n"
}

// ClientArgs is a's ssh command line: no user configuration, no agent,
// the per-run key, b's host key pinned, public key only, only cipher, the
// tunnel from unit ua to b's unit ub in point-to-point mode, and an exit
// when the tunnel is refused or b stops answering for 15 s.
func ClientArgs(dir string, local, remote netip.Addr, port, ua, ub int, cipher string) []string {
	af := "inet"
	if remote.Is6() {
		af = "inet6"
	}
	args := []string{"ssh", "-F", "/dev/null", "-N", "-T",
		"-p", strconv.Itoa(port), "-l", "root", "-i", filepath.Join(dir, clientKeyFile),
		"-w", fmt.Sprintf("%d:%d", ua, ub)}
	for _, o := range []string{
		"AddressFamily=" + af,
		"BindAddress=" + local.String(),
		"IdentitiesOnly=yes",
		"IdentityAgent=none",
		"ForwardAgent=no",
		"ForwardX11=no",
		"UserKnownHostsFile=" + filepath.Join(dir, knownHostsFile),
		"GlobalKnownHostsFile=/dev/null",
		"StrictHostKeyChecking=yes",
		"HostKeyAlias=" + hostKeyAlias,
		"HostKeyAlgorithms=ssh-ed25519",
		"UpdateHostKeys=no",
		"CheckHostIP=no",
		"BatchMode=yes",
		"PreferredAuthentications=publickey",
		"PasswordAuthentication=no",
		"KbdInteractiveAuthentication=no",
		"Ciphers=" + cipher,
		"Compression=no",
		"Tunnel=point-to-point",
		"ExitOnForwardFailure=yes",
		"ServerAliveInterval=5",
		"ServerAliveCountMax=3",
		"ConnectTimeout=10",
		"ControlMaster=no",
		"ControlPath=none",
		"PermitLocalCommand=no",
		"LogLevel=VERBOSE",
	} {
		args = append(args, "-o", o)
	}
	return append(args, remote.String())
}

func (m *SSHTunnel) record(env *method.Env, p *method.Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[env.Dir] = append(m.runs[env.Dir], p)
}

// Setup generates the run's keys, starts sshd on b and waits until it
// listens, starts ssh -w on a, waits for both tun devices, renames and
// configures them, and waits until a ping from a reaches b through the
// tunnel. The daemons whose CPU counts are a's ssh and b's sshd process
// of the connection (sshd's listener only accepts).
func (m *SSHTunnel) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	if !method.Supports(m, env.Family) {
		return nil, method.UnsupportedFamily(m, env.Family)
	}
	opts, err := method.ParseDeclared(Name, options, env.Options)
	if err != nil {
		return nil, err
	}
	cipher, port := opts.String("cipher"), opts.Int("port")
	k, err := newKeys()
	if err != nil {
		return nil, err
	}
	oa, ob := method.Overlay(env.Family)
	var sides [2]*side
	for i, ep := range env.Endpoints() {
		dir, err := method.SideDir(env, Name, ep)
		if err != nil {
			return nil, err
		}
		unit := m.units[i]
		if unit == 0 {
			if unit, err = freeUnit(ep); err != nil {
				return nil, err
			}
		}
		sides[i] = &side{ep: ep, dir: dir, unit: unit, dev: DevName(env, ep), addr: [2]netip.Prefix{oa, ob}[i]}
	}
	a, b := sides[0], sides[1]
	ua, ub := env.A.Addr(env.Family), env.B.Addr(env.Family)

	// b: sshd.
	sshd, err := opPrepare.Call(ctx, b.ep, b.dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.ep.Side, err)
	}
	if port == 0 {
		if port, err = opFreePort.Call(ctx, b.ep, ub.String()); err != nil {
			return nil, fmt.Errorf("%s: pick a free port for sshd: %w", b.ep.Side, err)
		}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{hostKeyFile, k.HostKey},
		{authorizedFile, k.ClientPub},
		{sshdConfigFile, []byte(SSHDConfig(b.dir, ub, port, cipher))},
	} {
		if err := method.WriteSecret(b.ep, b.path(f.name), f.data); err != nil {
			return nil, fmt.Errorf("%s: %w", b.ep.Side, err)
		}
	}
	if out, err := b.ep.Run(ctx, sshd, "-t", "-f", b.path(sshdConfigFile)); err != nil {
		return nil, fmt.Errorf("%s: sshd refuses its configuration: %w\n%s", b.ep.Side, err, out)
	}
	server, err := method.StartDaemon(b.ep, "sshd", b.path(sshdLogFile), nil, sshd, "-D", "-e", "-f", b.path(sshdConfigFile))
	if err != nil {
		return nil, err
	}
	m.record(env, server)
	if err := b.ep.WaitListening(ctx, server.PID(), port, m.initTimeout()); err != nil {
		if aerr := server.Alive(); aerr != nil {
			err = aerr
		}
		return nil, server.Failure("listen on "+netip.AddrPortFrom(ub, uint16(port)).String(), err)
	}

	// a: ssh -w.
	pin := k.HostPub
	if m.pinOther {
		other, err := newKeys()
		if err != nil {
			return nil, err
		}
		pin = other.HostPub
	}
	known := hostKeyAlias + " " + string(pin)
	for _, f := range []struct {
		name string
		data []byte
	}{{clientKeyFile, k.ClientKey}, {knownHostsFile, []byte(known)}} {
		if err := method.WriteSecret(a.ep, a.path(f.name), f.data); err != nil {
			return nil, fmt.Errorf("%s: %w", a.ep.Side, err)
		}
	}
	client, err := method.StartDaemon(a.ep, "ssh", a.path(clientLogFile), nil, ClientArgs(a.dir, ua, ub, port, a.unit, b.unit, cipher)...)
	if err != nil {
		return nil, err
	}
	m.record(env, client)
	// A pid file of its own, so that a teardown by another value, or on
	// the host after a crash, finds the client (sshd writes its own).
	if err := a.ep.WriteFile(a.path(clientPIDFile), []byte(strconv.Itoa(client.PID())+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("%s: write ssh pid file: %w", a.ep.Side, err)
	}
	procs := []*method.Process{client, server}
	for _, s := range sides {
		err := method.WaitFor(ctx, m.initTimeout(), fmt.Sprintf("%s on %s", s.tun(), s.ep.Side), func() (bool, error) {
			for _, p := range procs {
				if err := p.Alive(); err != nil {
					return false, err
				}
			}
			_, err := s.ep.NL.LinkByName(s.tun())
			if testbed.IsLinkNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return nil, errors.Join(client.Failure("tunnel", err), server.Failure("peer of a", nil))
		}
	}
	for _, s := range sides {
		if err := configure(ctx, s, env.OverlayMTU); err != nil {
			return nil, err
		}
	}
	if err := waitPing(ctx, a, b, procs, m.initTimeout()); err != nil {
		return nil, err
	}
	conn, err := opConnection.Call(ctx, b.ep, server.PID())
	if err != nil {
		return nil, server.Failure("find the connection's processes", err)
	}
	return &method.Path{
		A:        a.addr.Addr(),
		B:        b.addr.Addr(),
		Devices:  map[string][]string{"a": {a.dev, env.A.Dev}, "b": {b.dev, env.B.Dev}},
		Daemons:  []method.Daemon{client.Daemon(), {Side: b.ep.Side, Role: "sshd", PID: conn.PID}},
		Variant:  variant(ctx, env, cipher),
		Datapath: method.DatapathUserspace,
	}, nil
}

// variant is the OpenSSH of the sides' hosts (one, or each when they
// differ) and the cipher.
func variant(ctx context.Context, env *method.Env, cipher string) string {
	va, vb := programVersion.On(ctx, env.A), programVersion.On(ctx, env.B)
	v := va
	if va != vb {
		v = env.A.Side + ": " + va + "; " + env.B.Side + ": " + vb
	}
	return v + ", " + cipher + ", tun point-to-point, TCP over TCP"
}

// freeUnit picks a tun unit no device on ep's host uses, at random among
// 100 to 99999 so that concurrent runs on one host do not race for the
// same one.
func freeUnit(ep *testbed.Endpoint) (int, error) {
	links, err := nic.Dump(ep.NL.LinkList)
	if err != nil {
		return 0, fmt.Errorf("%s: list links: %w", ep.Side, err)
	}
	used := map[string]bool{}
	for _, l := range links {
		used[l.Attrs().Name] = true
	}
	for range 1000 {
		n := 100 + mrand.IntN(99900)
		if !used["tun"+strconv.Itoa(n)] {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no free tun unit", ep.Side)
}

// configure renames s's tunN to the run's name (it is down as OpenSSH
// leaves it), sets its MTU and overlay address and brings it up.
func configure(ctx context.Context, s *side, mtu int) error {
	if out, err := s.ep.Run(ctx, "ip", "link", "set", "dev", s.tun(), "name", s.dev); err != nil {
		return fmt.Errorf("%s: rename %s to %s: %w\n%s", s.ep.Side, s.tun(), s.dev, err, out)
	}
	link, err := s.ep.NL.LinkByName(s.dev)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", s.ep.Side, s.dev, err)
	}
	if err := s.ep.NL.LinkSetMTU(link, mtu); err != nil {
		return fmt.Errorf("%s: set mtu %d on %s: %w", s.ep.Side, mtu, s.dev, err)
	}
	if err := method.AddAddr(s.ep, link, s.addr); err != nil {
		return err
	}
	if err := s.ep.NL.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: set %s up: %w", s.ep.Side, s.dev, err)
	}
	return nil
}

// waitPing pings b's overlay address from a until it answers.
func waitPing(ctx context.Context, a, b *side, procs []*method.Process, timeout time.Duration) error {
	var last error
	err := method.WaitFor(ctx, timeout, "ssh tunnel", func() (bool, error) {
		for _, p := range procs {
			if err := p.Alive(); err != nil {
				return false, err
			}
		}
		_, last = a.ep.Run(ctx, "ping", "-c", "1", "-W", "1", b.addr.Addr().String())
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("no ping through the ssh tunnel from %s (%s) to %s (%s)", a.ep.Side, a.addr.Addr(), b.ep.Side, b.addr.Addr())
	if last != nil {
		what += fmt.Sprintf(" (last: %v)", last)
	}
	return errors.Join(procs[0].Failure(what, err), procs[1].Failure("peer of a", nil))
}

// Connection is b's process of the SSH connection: the one sshd forks
// per connection, which, for root, also carries the session (OpenSSH
// forks no unprivileged child for a root login), reading and writing the
// tun device.
type Connection struct{ PID int }

// opPrepare, on b's host, finds sshd (which must be started by its
// absolute path) and creates its privilege separation directory when
// the host has none, noting so in dir for teardown.
var opPrepare = testbed.NewOp("ssh-tunnel.prepare", func(_ context.Context, _ *testbed.Endpoint, dir string) (string, error) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		return "", fmt.Errorf("find sshd: %w", err)
	}
	if abs, err := filepath.Abs(sshd); err == nil {
		sshd = abs
	}
	if _, err := os.Stat(privsepDir); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(filepath.Join(dir, madePrivsepFile), nil, 0o600); err != nil {
			return "", err
		}
		if err := os.Mkdir(privsepDir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create sshd's privilege separation directory: %w", err)
		}
	}
	return sshd, nil
})

// opFreePort, on b's host and in its namespace, returns a TCP port free
// on addr (the kernel's choice).
var opFreePort = testbed.NewOp("ssh-tunnel.free-port", func(_ context.Context, ep *testbed.Endpoint, addr string) (int, error) {
	port := 0
	err := ep.Do(func() error {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			return err
		}
		port = l.Addr().(*net.TCPAddr).Port
		return l.Close()
	})
	return port, err
})

// opConnection, on b's host, finds the connection's processes below the
// sshd listener pid.
var opConnection = testbed.NewOp("ssh-tunnel.connection", func(_ context.Context, _ *testbed.Endpoint, pid int) (Connection, error) {
	var c Connection
	var tree []string
	for _, d := range descendants(pid) {
		tree = append(tree, fmt.Sprintf("%d %q", d, cmdline(d)))
	}
	kids := children(pid)
	if len(kids) != 1 || len(tree) != 1 || !strings.HasPrefix(cmdline(kids[0]), "sshd: root") {
		return c, fmt.Errorf("want one process \"sshd: root\" below sshd %d, find %s", pid, strings.Join(tree, ", "))
	}
	c.PID = kids[0]
	return c, nil
})

// cmdline is pid's command line, arguments joined by spaces.
func cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(data)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

// descendants lists pid's descendants, deepest last.
func descendants(pid int) []int {
	var all []int
	for _, c := range children(pid) {
		all = append(all, c)
		all = append(all, descendants(c)...)
	}
	return all
}

// opKill, on a side's host, kills what the side directory dir's pid
// files name (a's ssh, b's sshd with the connection's processes below
// it), when they still run from that directory, and removes sshd's
// privilege separation directory if this run created it and it is
// empty. It returns the pids it killed.
var opKill = testbed.NewOp("ssh-tunnel.kill", func(_ context.Context, _ *testbed.Endpoint, dir string) ([]int, error) {
	var killed []int
	var errs []error
	for _, name := range []string{clientPIDFile, sshdPIDFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || !strings.Contains(cmdline(pid), dir) {
			continue // gone, or the pid is another process's now
		}
		// The connection's processes first: sshd starts each in a
		// session of its own, and the listener's death leaves them.
		// The listener, still there, reaps them.
		for _, group := range [][]int{descendants(pid), {pid}} {
			for _, v := range group {
				if err := syscall.Kill(v, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("kill %d: %w", v, err))
				}
			}
			for _, v := range group {
				if err := waitGone(v); err != nil {
					errs = append(errs, err)
				}
			}
			killed = append(killed, group...)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, madePrivsepFile)); err == nil {
		_ = os.Remove(privsepDir) // only when empty
		_ = os.Remove(filepath.Join(dir, madePrivsepFile))
	}
	return killed, errors.Join(errs...)
})

// waitGone waits until pid is gone: reaped, or after a second a zombie
// (whose parent, killed too, leaves it to init).
func waitGone(pid int) error {
	for i := range 250 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		if j := strings.LastIndexByte(string(data), ')'); i >= 50 && j > 0 && j+2 < len(data) && (data[j+2] == 'Z' || data[j+2] == 'X') {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pid %d still runs after SIGKILL", pid)
}

// Teardown stops a's ssh (its tun device goes with it, and b's session
// ends), then sshd with any process of the connection left, deletes any
// device left under the run's names and removes the side directories
// (keys, configuration, logs). Processes another value started are found
// by their pid files, on their hosts.
func (m *SSHTunnel) Teardown(ctx context.Context, env *method.Env) error {
	m.mu.Lock()
	procs := m.runs[env.Dir]
	delete(m.runs, env.Dir)
	m.mu.Unlock()
	var errs []error
	// The client first: a closed connection ends b's session by itself.
	for _, p := range procs {
		if p.Role != "ssh" {
			continue
		}
		if err := p.Stop(3 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ep := range []*testbed.Endpoint{env.A, env.B} {
		if ep == nil {
			continue
		}
		dir := filepath.Join(method.SideRoot(env, ep), Name+"-"+ep.Side)
		if _, err := opKill.Call(context.WithoutCancel(ctx), ep, dir); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep.Side, err))
		}
	}
	for _, p := range procs {
		if err := p.Stop(3 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ep := range env.Endpoints() {
		if ep == nil {
			continue
		}
		errs = append(errs, method.DelLinks(ep, DevName(env, ep)))
		dir := filepath.Join(method.SideRoot(env, ep), Name+"-"+ep.Side)
		if err := ep.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("%s: remove %s: %w", ep.Side, dir, err))
		}
	}
	return errors.Join(errs...)
}
