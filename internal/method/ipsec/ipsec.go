package ipsec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// IPsec is IKEv2 with a per-run pre-shared key between two strongSwan
// charon daemons, one per side, each with its own private /run, control
// (vici) socket, configuration and log in the run directory. ESP runs in
// tunnel mode between the overlay addresses (host addresses on lo) or in
// transport mode between the underlay addresses.
//
// charon routes through a routing table and rule priority of the run's
// own, chosen free on each host (runTable), never its default table 220
// and rule priority 220, which a host running strongSwan has: the host's
// rule and routes there stay as they are.
//
// The data path is the kernel's xfrm ESP where the kernel has it (probed by
// adding a throwaway SA with the chosen AEAD), and strongSwan's
// kernel-libipsec otherwise: userspace ESP in charon, cleartext through a
// TUN device, ESP always in UDP 4500. This machine's kernel lacks
// CONFIG_INET_ESP, so here the method runs on kernel-libipsec; the xfrm
// path runs in the kernel lab.
//
// kernel-libipsec reads at most 1400-byte packets from its TUN device
// (libipsecMaxMTU), so on that path the overlay MTU is min(env.OverlayMTU,
// 1400) and Variant says so when it is capped. On the xfrm path the
// overlay MTU is on the route to the peer's overlay address (charon's
// kernel-netlink "mtu" option), or in transport mode on a host route to the
// peer.
//
// The tunnels dimension (Env.Tunnels = N, method.Scaler): one tunnel is
// one CHILD_SA, all N under the one IKE_SA between the two charons, each
// with traffic selectors of its own: host addresses on lo, the measured
// one the single tunnel's (method.Overlay), the others
// method.ScaleOverlay's. They are initiated one by one in index order
// (swanctl --initiate per CHILD_SA, each add timed into Path.Adds) and
// Setup returns once both charons list all N INSTALLED. At most
// maxIPsecChildren (vici's message size); transport mode has one. Grow
// adds one more within the running IKE_SA.
//
// Options:
//
//	mode      tunnel (default) | transport (xfrm only: libipsec has no transport mode)
//	cipher    aes256gcm (default) | chacha20poly1305
//	natt      off (default) | on: force UDP encapsulation (encap = yes)
//	datapath  auto (default) | xfrm | libipsec
//
// Use NewIPsec: the method keeps the daemons of each set-up Env.
type IPsec struct {
	runs ipsecRuns
	// configHook, set by tests only (through a constructor in
	// export_test.go), may change a side's PSK before it is written:
	// fault injection, such as a PSK the peer does not have.
	configHook func(side string, psk *string)
}

// NewIPsec returns the "ipsec" method.
func NewIPsec() *IPsec { return &IPsec{} }

// ipsec-ecmp adds xfrm interfaces through the endpoint's netlink, which
// for a remote endpoint sends the link to the agent as a gob-encoded
// netlink.Link.
func init() { gob.Register(&netlink.Xfrmi{}) }

// Paths of strongSwan's charon and its plugins (Debian).
const (
	charonPath      = "/usr/lib/ipsec/charon"
	strongswanPlugs = "/usr/lib/ipsec/plugins"
)

// ipsecPackages installs charon, swanctl, the kernel-libipsec plugin
// (libcharon-extra-plugins) and the openssl plugin that provides AES-GCM
// and ChaCha20-Poly1305 (libstrongswan-standard-plugins).
const ipsecPackages = "apt-get install -y --no-install-recommends strongswan-charon strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins"

// ipsecHandshakeTimeout bounds the IKE handshake and every wait for a daemon.
const ipsecHandshakeTimeout = 15 * time.Second

func (*IPsec) Name() string       { return "ipsec" }
func (*IPsec) Families() []string { return []string{method.IPv4, method.IPv6} }

func (*IPsec) Implementation() string { return ipsecImplementation(programVersion.Local()) }

// ImplementationOn names the strongSwan of ep's host.
func (*IPsec) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return ipsecImplementation(programVersion.On(ctx, ep))
}

func ipsecImplementation(version string) string {
	return version + " charon, IKEv2 PSK; ESP by kernel xfrm or kernel-libipsec (userspace, TUN)"
}

// Overhead is for the default options (tunnel mode, AES-256-GCM, data path
// auto) and the worst case of the two data paths it may pick:
// kernel-libipsec always adds UDP, so outer IP + UDP 8 + ESP 8 + IV 8 +
// padding 3 + trailer 2 + ICV 16 = 65 (IPv4) or 85 (IPv6); see
// ipsecOverhead. Options lower it: xfrm without NAT-T adds 57/77,
// transport mode 37 (45 with UDP). ChaCha20-Poly1305 has the same IV and
// ICV sizes.
func (*IPsec) Overhead(family string) int { return ipsecOverhead(family, "tunnel", true) }

// HeaderOverhead follows the options that change the framing: transport
// mode has no outer IP header; the 8 bytes of UDP are there only with
// natt on or the kernel-libipsec data path (which always encapsulates ESP
// in UDP 4500).
func (*IPsec) HeaderOverhead(family string, opts map[string]string, variant string) int {
	return ipsecHeaderOverhead(family, opts, variant)
}

func ipsecHeaderOverhead(family string, opts map[string]string, variant string) int {
	mode := opts["mode"]
	if mode == "" {
		mode = "tunnel"
	}
	udp := opts["natt"] == "on" || opts["datapath"] == ipsecLibipsec || strings.Contains(variant, "UDP")
	return ipsecOverhead(family, mode, udp)
}

func (*IPsec) Requirements() []method.Requirement { return ipsecRequirements() }

// Options declares the scenario options (see Option).
func (*IPsec) Options() []method.Option { return ipsecDeclared(false) }

// Listens declares the sockets a run opens (method.Listener): each side's
// charon opens IKE (500) and NAT-T (4500) on the wildcard address of the
// run's family only.
func (*IPsec) Listens(method.Values, string) []method.Listen {
	return []method.Listen{charonListen(500, ""), charonListen(4500, "")}
}

// charonWhy is why charon's sockets are wildcard ones.
const charonWhy = "strongSwan's socket-default plugin binds no address, only a port: the run opens the run's family alone (use_ipv4/use_ipv6)"

// charonListen is one of charon's UDP sockets (port 0: one it picks).
func charonListen(port int, what string) method.Listen {
	prog := "charon (IKE)"
	if port != 500 && port != 0 {
		prog = "charon (NAT-T, ESP in UDP)"
	}
	if what != "" {
		prog += ", " + what
	}
	return method.Listen{Proto: "udp", Port: port, Addr: method.ListenWildcard, Families: "run", Program: prog, Why: charonWhy}
}

func ipsecRequirements() []method.Requirement {
	return []method.Requirement{
		{Program: charonPath, Package: "strongswan-charon", Install: ipsecPackages},
		{Program: "swanctl", Package: "strongswan-swanctl", Install: ipsecPackages},
		{Program: "unshare", Package: "util-linux"},
		// kernel-libipsec's TUN device, the fallback that runs everywhere.
		// The kernel xfrm path also needs CONFIG_INET_ESP/CONFIG_INET6_ESP
		// and the AEAD; Setup probes for them (probeXfrm) rather than
		// listing them here, since either path will do.
		{Kernel: "CONFIG_TUN", Module: "tun"},
		// xfrm netlink: the probe, and teardown's flush.
		{Kernel: "CONFIG_XFRM_USER", Module: "xfrm_user"},
	}
}

// programVersion turns the first line of "charon --version" ("Linux
// strongSwan 5.9.8") into "strongSwan 5.9.8", and any other output into
// "strongSwan".
var programVersion = &method.ProgramVersion{Program: charonPath, Name: "strongSwan", Parse: func(out []byte) string {
	if _, v, ok := strings.Cut(method.FirstLine(out), "strongSwan "); ok {
		if f := strings.Fields(v); len(f) > 0 {
			return "strongSwan " + f[0]
		}
	}
	return "strongSwan"
}}

// ipsecRuns keeps the state of every set-up Env of one method value.
type ipsecRuns struct {
	mu sync.Mutex
	m  map[*method.Env]*ipsecRun
}

func (r *ipsecRuns) put(env *method.Env, run *ipsecRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[*method.Env]*ipsecRun{}
	}
	r.m[env] = run
}

func (r *ipsecRuns) get(env *method.Env) *ipsecRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[env]
}

func (r *ipsecRuns) take(env *method.Env) *ipsecRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.m[env]
	delete(r.m, env)
	return run
}

// ipsecRun is what Setup started for one Env.
type ipsecRun struct {
	mu      sync.Mutex
	charons []*charon
	// tables are the routing table and rule of the run's charons, per
	// side (chooseRunTable).
	tables map[string]runTable
	// restore undoes namespace changes that Teardown cannot infer.
	restore []func() error
}

// table returns the run's routing table on ep's host, choosing it (and
// journaling it) on the first call for ep's side.
func (r *ipsecRun) table(ep *testbed.Endpoint, seed string) (runTable, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.tables[ep.Side]; ok {
		return t, nil
	}
	t, err := chooseRunTable(ep, seed)
	if err != nil {
		return t, err
	}
	if r.tables == nil {
		r.tables = map[string]runTable{}
	}
	r.tables[ep.Side] = t
	return t, nil
}

// tableOf is the table chosen for side, if any.
func (r *ipsecRun) tableOf(side string) (runTable, bool) {
	if r == nil {
		return runTable{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tables[side]
	return t, ok
}

func (r *ipsecRun) add(c *charon) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.charons = append(r.charons, c)
}

// charon is one running charon daemon.
type charon struct {
	ep *testbed.Endpoint
	// run is charon's private /run on the host: strongswan.conf, the pid
	// file, the vici socket and the log live there.
	run  string
	proc *method.Process
	// tun is the kernel-libipsec TUN device ("" on the xfrm path).
	tun string
	// conn is the connection loaded (ipsec: Grow loads it again with one
	// more child). It holds the PSK: never log it.
	conn swanctlConfig
}

func (c *charon) conf() string    { return filepath.Join(c.run, "strongswan.conf") }
func (c *charon) vici() string    { return filepath.Join(c.run, "charon.vici") }
func (c *charon) logPath() string { return filepath.Join(c.run, "charon.log") }

// startCharon writes cfg to dir/run/strongswan.conf and starts charon in
// ep's namespace and in a mount namespace of its own where dir/run is
// mounted on /run: charon's pid file (fixed at /run/charon.pid) and
// everything else it writes stay in dir. It returns once charon answers on
// its vici socket.
func startCharon(ctx context.Context, ep *testbed.Endpoint, dir string, cfg charonConfig) (*charon, error) {
	c := &charon{ep: ep, run: filepath.Join(dir, "run")}
	if err := ep.MkdirAll(c.run, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", c.run, err)
	}
	if err := ep.WriteFile(c.conf(), []byte(cfg.render()), 0o600); err != nil {
		return nil, fmt.Errorf("write strongswan.conf: %w", err)
	}
	// unshare execs sh, which execs charon: the pid stays charon's.
	p, err := method.StartDaemon(ep, "charon", c.logPath(),
		[]string{"STRONGSWAN_CONF=" + charonRun + "/strongswan.conf"},
		"unshare", "--mount", "--propagation", "private",
		"sh", "-c", `mount --bind "$0" /run && exec "$1"`, c.run, charonPath)
	if err != nil {
		return nil, err
	}
	c.proc = p
	err = method.WaitFor(ctx, method.DaemonStartTimeout, ep.Side+" charon vici socket", func() (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		return method.SocketAccepts(ctx, ep, c.vici())
	})
	if err != nil {
		return c, p.Failure("not ready", err)
	}
	return c, nil
}

// swanctl runs swanctl against this charon's vici socket and returns its
// standard output; a failure quotes argv and both outputs. (swanctl
// reports harmless things on stderr, such as missing credential
// directories next to swanctl.conf.)
func (c *charon) swanctl(ctx context.Context, args ...string) ([]byte, error) {
	// A charon that accepts the connection but never answers must not
	// hang Setup or Teardown.
	ctx, cancel := context.WithTimeout(ctx, ipsecHandshakeTimeout+5*time.Second)
	defer cancel()
	argv := append([]string{"swanctl"}, args...)
	argv = append(argv, "--uri", "unix://"+c.vici())
	cmd := c.ep.Command(ctx, argv...)
	cmd.Env = append(cmd.Env, "STRONGSWAN_CONF="+c.conf())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := c.ep.Start(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	c.ep.Forget(cmd)
	if err != nil {
		return nil, &testbed.CommandError{Side: c.ep.Side, Argv: cmd.Args, Output: stdout.String() + stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// load writes the connections cfgs (they hold the PSK) 0600 next to
// charon's run directory and loads them with swanctl.
func (c *charon) load(ctx context.Context, cfgs ...swanctlConfig) error {
	path := filepath.Join(filepath.Dir(c.run), "swanctl.conf")
	if err := method.WriteSecret(c.ep, path, []byte(renderSwanctl(cfgs))); err != nil {
		return fmt.Errorf("%s: %w", c.ep.Side, err)
	}
	if _, err := c.swanctl(ctx, "--load-all", "--noprompt", "--file", path); err != nil {
		return c.proc.Failure("load swanctl.conf", err)
	}
	return nil
}

// listSAs returns charon's IKE and CHILD SAs.
func (c *charon) listSAs(ctx context.Context) ([]ikeSA, error) {
	out, err := c.swanctl(ctx, "--list-sas", "--pretty")
	if err != nil {
		return nil, err
	}
	sas, err := parseListSAs(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.ep.Side, err)
	}
	return sas, nil
}

// waitInstalled waits until charon lists the CHILD_SA child as INSTALLED.
func (c *charon) waitInstalled(ctx context.Context, child string) (childSA, error) {
	var got childSA
	err := method.WaitFor(ctx, ipsecHandshakeTimeout, c.ep.Side+" CHILD_SA "+child+" INSTALLED", func() (bool, error) {
		if err := c.proc.Alive(); err != nil {
			return false, err
		}
		sas, err := c.listSAs(ctx)
		if err != nil {
			return false, err
		}
		ch, ok := installedChild(sas, child)
		got = ch
		return ok, nil
	})
	if err != nil {
		return got, c.proc.Failure("CHILD_SA "+child+" not installed", err)
	}
	return got, nil
}

// waitAllInstalled waits until charon lists every CHILD_SA of children
// as INSTALLED, each once.
func (c *charon) waitAllInstalled(ctx context.Context, children []ipsecChild) error {
	var missing []string
	err := method.WaitFor(ctx, ipsecHandshakeTimeout, fmt.Sprintf("%s: %d CHILD_SAs INSTALLED", c.ep.Side, len(children)), func() (bool, error) {
		if err := c.proc.Alive(); err != nil {
			return false, err
		}
		sas, err := c.listSAs(ctx)
		if err != nil {
			return false, err
		}
		missing = missingChildren(sas, children)
		return len(missing) == 0, nil
	})
	if err != nil {
		return c.proc.Failure(fmt.Sprintf("%d of %d CHILD_SAs not installed (first: %s)", len(missing), len(children), strings.Join(missing[:min(len(missing), 5)], " ")), err)
	}
	return nil
}

// tunDevice returns the name of the TUN device charon holds open
// (kernel-libipsec creates it as ipsec%d when it loads).
func (c *charon) tunDevice(ctx context.Context) (string, error) {
	var name string
	err := method.WaitFor(ctx, ipsecHandshakeTimeout, c.ep.Side+" kernel-libipsec TUN device", func() (bool, error) {
		if err := c.proc.Alive(); err != nil {
			return false, err
		}
		n, err := opTUNOf.Call(ctx, c.ep, c.proc.PID())
		name = n
		return err == nil && n != "", nil
	})
	if err != nil {
		return "", c.proc.Failure("no TUN device", err)
	}
	return name, nil
}

// opTUNOf finds, on the endpoint's host, the TUN device charon (pid
// there) holds open (tunOfProcess).
var opTUNOf = testbed.NewOp("ipsec.tun-of", func(_ context.Context, _ *testbed.Endpoint, pid int) (string, error) {
	return tunOfProcess(pid)
})

// tunOfProcess finds the TUN device an open file of pid is attached to
// ("iff:" in /proc/PID/fdinfo), on this machine: run it through opTUNOf.
func tunOfProcess(pid int) (string, error) {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "iff:"); ok {
				return strings.TrimSpace(v), nil
			}
		}
	}
	return "", nil
}

// handshake initiates child from a and waits until both sides have it
// INSTALLED. A failure names the side and quotes both charons' logs.
func handshake(ctx context.Context, a, b *charon, child string) error {
	if err := initiate(ctx, a, b, child); err != nil {
		return err
	}
	for _, c := range []*charon{a, b} {
		if _, err := c.waitInstalled(ctx, child); err != nil {
			return err
		}
	}
	return nil
}

// initiate initiates child from a: swanctl returns once a has it
// established (b installed it before it answered). A failure names the
// side and quotes both charons' logs.
func initiate(ctx context.Context, a, b *charon, child string) error {
	timeout := fmt.Sprint(int(ipsecHandshakeTimeout / time.Second))
	if _, err := a.swanctl(ctx, "--initiate", "--child", child, "--timeout", timeout); err != nil {
		return errors.Join(a.proc.Failure("initiate CHILD_SA "+child, err),
			b.proc.Failure("responder of CHILD_SA "+child, nil))
	}
	return nil
}

// newPSK returns 32 random bytes in swanctl's base64 form ("0s...").
func newPSK() (string, error) {
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		return "", fmt.Errorf("generate pre-shared key: %w", err)
	}
	return "0s" + base64.StdEncoding.EncodeToString(k[:]), nil
}

// chooseDatapath resolves datapath "auto" (xfrm when the kernels of both
// sides have ESP, else libipsec) and checks a forced one, on each side's
// host. Transport mode needs xfrm: kernel-libipsec answers "IPsec SA:
// unsupported mode".
func chooseDatapath(ctx context.Context, env *method.Env, o ipsecOptions) (string, error) {
	var xfrmErr error
	if o.Datapath != ipsecLibipsec {
		xfrmErr = probeXfrm(env, o)
	}
	dp := o.Datapath
	switch {
	case dp == ipsecXfrm && xfrmErr != nil:
		return "", fmt.Errorf("%w: datapath=xfrm: %v (needs CONFIG_INET_ESP/CONFIG_INET6_ESP and the AEAD; run it in the kernel lab)", method.ErrNotSupported, xfrmErr)
	case dp == ipsecAuto && xfrmErr == nil:
		dp = ipsecXfrm
	case dp == ipsecAuto:
		dp = ipsecLibipsec
	}
	if dp == ipsecLibipsec {
		if o.Mode == "transport" {
			why := "datapath=libipsec"
			if xfrmErr != nil {
				why = xfrmErr.Error()
			}
			return "", fmt.Errorf("%w: transport mode needs the kernel xfrm data path, strongSwan's kernel-libipsec supports tunnel mode only (%s); run it in the kernel lab", method.ErrNotSupported, why)
		}
		for _, ep := range env.Endpoints() {
			problem, err := opLibipsecProblem.Call(ctx, ep, struct{}{})
			if err != nil {
				return "", fmt.Errorf("%s: check kernel-libipsec: %w", ep.Side, err)
			}
			if problem != "" {
				return "", fmt.Errorf("%w: %s: %s", method.ErrNotSupported, hostOf(ep), problem)
			}
		}
	}
	return dp, nil
}

// opLibipsecProblem says, on the endpoint's host, why strongSwan's
// kernel-libipsec cannot run there ("" when it can).
var opLibipsecProblem = testbed.NewOp("ipsec.libipsec-problem", func(_ context.Context, _ *testbed.Endpoint, _ struct{}) (string, error) {
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Sprintf("strongSwan's kernel-libipsec needs /dev/net/tun (CONFIG_TUN; modprobe tun): %v", err), nil
	}
	if _, err := os.Stat(filepath.Join(strongswanPlugs, "libstrongswan-kernel-libipsec.so")); err != nil {
		return fmt.Sprintf("strongSwan's kernel-libipsec plugin is missing (fix: %s)", ipsecPackages), nil
	}
	return "", nil
})

// hostOf names ep's side and, when it is on another machine, that host.
func hostOf(ep *testbed.Endpoint) string {
	if ep.Host != "" {
		return ep.Side + " (host " + ep.Host + ")"
	}
	return ep.Side
}

// probeXfrmSPI is the SPI of the throwaway SA of probeXfrm.
const probeXfrmSPI = 0x7462

// probeXfrm reports whether the kernels of both sides (two hosts may run
// two kernels) run ESP with the AEAD of o.Cipher for env.Family: on each
// it adds a throwaway SA (a zero key, never used) and deletes it again.
// Loading esp4/esp6 and the AEAD modules happens on the way where the
// kernel has them as modules.
func probeXfrm(env *method.Env, o ipsecOptions) error {
	for _, ep := range env.Endpoints() {
		if err := probeXfrmOn(env, ep, o); err != nil {
			return err
		}
	}
	return nil
}

func probeXfrmOn(env *method.Env, ep *testbed.Endpoint, o ipsecOptions) error {
	peer, family := env.Peer(ep), env.Family
	name, keyLen, icv := xfrmAEAD(o.Cipher)
	mode := netlink.XFRM_MODE_TUNNEL
	if o.Mode == "transport" {
		mode = netlink.XFRM_MODE_TRANSPORT
	}
	st := &netlink.XfrmState{
		Src:   net.IP(ep.Addr(family).AsSlice()),
		Dst:   net.IP(peer.Addr(family).AsSlice()),
		Proto: netlink.XFRM_PROTO_ESP,
		Mode:  mode,
		Spi:   probeXfrmSPI,
		Aead:  &netlink.XfrmStateAlgo{Name: name, Key: make([]byte, keyLen), ICVLen: icv},
	}
	if o.NATT {
		st.Encap = &netlink.XfrmStateEncap{Type: netlink.XFRM_ENCAP_ESPINUDP, SrcPort: 4500, DstPort: 4500}
	}
	option := "CONFIG_INET_ESP"
	if family == method.IPv6 {
		option = "CONFIG_INET6_ESP"
	}
	err := env.FakeKernelErr(option, unix.EPROTONOSUPPORT)
	if err == nil {
		err = ep.NL.XfrmStateAdd(st)
	}
	if err != nil {
		return fmt.Errorf("%s: kernel xfrm cannot add an ESP SA with %s (%s): %w", hostOf(ep), name, family, err)
	}
	if err := ep.NL.XfrmStateDel(st); err != nil {
		return fmt.Errorf("%s: delete probe ESP SA: %w", ep.Side, err)
	}
	return nil
}

// ipsecVariant names the data path that runs.
func ipsecVariant(dp string, encap bool, mtu, wanted int) string {
	if dp == ipsecXfrm {
		if encap {
			return "kernel xfrm, ESP in UDP 4500"
		}
		return "kernel xfrm, ESP"
	}
	v := "kernel-libipsec, ESP in UDP 4500 (always)"
	if mtu < wanted {
		v += fmt.Sprintf(", TUN MTU %d (capped from %d)", mtu, wanted)
	}
	return v
}

// ipsecDatapath is dp as Path.Datapath names it.
func ipsecDatapath(dp string) string {
	if dp == ipsecXfrm {
		return method.DatapathKernel
	}
	return method.DatapathLibipsec
}

// ipsecTS is a traffic selector for one address.
func ipsecTS(a netip.Addr) string { return method.HostPrefix(a).String() }

// ipsecID is the IKE identity of a side.
func ipsecID(ep *testbed.Endpoint) string { return "tunbench-" + ep.Side }

// ipsecMTU is the MTU the overlay gets on dp: env.OverlayMTU, but at most
// what kernel-libipsec can read from its TUN device.
func ipsecMTU(env *method.Env, dp string) int {
	if dp == ipsecLibipsec && env.OverlayMTU > libipsecMaxMTU {
		return libipsecMaxMTU
	}
	return env.OverlayMTU
}

// Setup starts one charon per side, loads the connection and its PSK,
// initiates the CHILD_SA from a and waits until both sides installed it.
func (m *IPsec) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	o, err := parseIPsecOptions(env.Options, false)
	if err != nil {
		return nil, err
	}
	if err := checkScale("ipsec", env, ipsecScale(env.Family, o.Mode)); err != nil {
		return nil, err
	}
	dp, err := chooseDatapath(ctx, env, o)
	if err != nil {
		return nil, err
	}
	psk, err := newPSK()
	if err != nil {
		return nil, err
	}
	run := &ipsecRun{}
	m.runs.put(env, run)
	encap := o.NATT || dp == ipsecLibipsec
	mtu := ipsecMTU(env, dp)
	oa, ob := method.Overlay(env.Family)
	children := ipsecChildren(env.Family, env.N())
	path := &method.Path{Devices: map[string][]string{}, Variant: ipsecVariant(dp, encap, mtu, env.OverlayMTU), Datapath: ipsecDatapath(dp), OverlayMTU: mtu}
	var cs []*charon
	for i, ep := range env.Endpoints() {
		peer := env.Peer(ep)
		mine, theirs := oa.Addr(), ob.Addr()
		if i == 1 {
			mine, theirs = theirs, mine
		}
		if o.Mode == "transport" {
			mine, theirs = ep.Addr(env.Family), peer.Addr(env.Family)
			// The host route to the peer carries the overlay MTU plus the
			// ESP transport overhead: the kernel takes the xfrm path MTU
			// as the route's MTU minus ESP, which is then the overlay MTU
			// (up to 3 bytes more: ESP pads to 4 bytes).
			routeMTU := env.OverlayMTU + ipsecOverhead(env.Family, "transport", encap)
			if err := addMTURoute(ep, run, theirs, mine, min(routeMTU, env.UnderlayMTU)); err != nil {
				return nil, err
			}
		} else if err := addLoAddr(ep, mine); err != nil {
			return nil, err
		}
		// The other CHILD_SAs' addresses (the tunnels dimension).
		for j, ch := range children {
			if j == env.Measured() {
				continue
			}
			if err := addLoAddr(ep, ch.local(ep.Side)); err != nil {
				return nil, err
			}
		}
		if i == 0 {
			path.A, path.B = mine, theirs
		}
		dir, err := method.SideDir(env, "ipsec", ep)
		if err != nil {
			return nil, err
		}
		table, err := run.table(ep, env.Prefix)
		if err != nil {
			return nil, err
		}
		c, err := startCharon(ctx, ep, dir, charonConfig{
			Datapath: dp, Port: 500, PortNATT: 4500, RouteMTU: mtu, InstallRoutes: true, Table: table, Family: env.Family,
		})
		if c != nil && c.proc != nil {
			run.add(c)
			path.Daemons = append(path.Daemons, c.proc.Daemon())
		}
		if err != nil {
			return nil, err
		}
		if dp == ipsecLibipsec {
			if c.tun, err = c.tunDevice(ctx); err != nil {
				return nil, err
			}
			if err := setLinkMTU(ep, c.tun, mtu); err != nil {
				return nil, err
			}
			path.Devices[ep.Side] = append(path.Devices[ep.Side], c.tun)
		}
		path.Devices[ep.Side] = append(path.Devices[ep.Side], ep.Dev)
		sideKey := psk
		if m.configHook != nil {
			m.configHook(ep.Side, &sideKey)
		}
		c.conn = swanctlConfig{
			Name:      "tunbench",
			LocalAddr: ep.Addr(env.Family).String(), RemoteAddr: peer.Addr(env.Family).String(),
			LocalID: ipsecID(ep), RemoteID: ipsecID(peer),
			Encap: encap,
			PSK:   sideKey,
		}
		for j, ch := range children {
			conf := ipsecChildConf(ch, ep.Side, o)
			if j == env.Measured() {
				// Transport mode selects the underlay addresses.
				conf.LocalTS, conf.RemoteTS = ipsecTS(mine), ipsecTS(theirs)
			}
			c.conn.Children = append(c.conn.Children, conf)
		}
		if err := c.load(ctx, c.conn); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	// The CHILD_SAs come up in index order, so that the measured one is
	// in the middle of whatever the data path searches. One timer: a
	// CHILD_SA is one exchange between the two charons, the responder
	// installing its side before it answers. The first add brings up
	// the IKE_SA too.
	var timer method.AddTimer
	timer.Start()
	if err := handshake(ctx, cs[0], cs[1], children[0].Name); err != nil {
		return nil, err
	}
	timer.Done()
	if len(children) > 1 {
		for _, ch := range children[1:] {
			if err := initiate(ctx, cs[0], cs[1], ch.Name); err != nil {
				return nil, err
			}
			timer.Done()
		}
		for _, c := range cs {
			if err := c.waitAllInstalled(ctx, children); err != nil {
				return nil, err
			}
		}
		path.Adds = timer.Adds()
	}
	return path, nil
}

// ipsecChildConf is the swanctl.conf section of CHILD_SA ch on side.
func ipsecChildConf(ch ipsecChild, side string, o ipsecOptions) swanctlChild {
	return swanctlChild{
		Name: ch.Name, Mode: o.Mode,
		LocalTS: ipsecTS(ch.local(side)), RemoteTS: ipsecTS(ch.remote(side)),
		ESPProposal: espProposal(o.Cipher),
	}
}

// Scale says what one tunnel of ipsec is (a CHILD_SA, method.Scaler) and
// how many one IKE_SA carries here (ipsecScale).
func (*IPsec) Scale(family string, opts method.Values) method.Scale {
	return ipsecScale(family, opts.String("mode"))
}

// Grow adds CHILD_SA env.N() (method.Grower): its addresses on lo on
// both sides, its section in both swanctl.conf files, loaded again on b
// first (the responder must know it), then initiated from a within the
// running IKE_SA. The existing CHILD_SAs stay as they are.
func (m *IPsec) Grow(ctx context.Context, env *method.Env) (string, error) {
	n := env.N()
	ch := ipsecChildOf(env.Family, n, env.Measured())
	how := fmt.Sprintf("CHILD_SA %s (%s <-> %s): swanctl --load-all with one more child on b then a, swanctl --initiate --child %s", ch.Name, ch.A, ch.B, ch.Name)
	run := m.runs.get(env)
	if run == nil {
		return how, errors.New("ipsec: grow: not set up")
	}
	o, err := parseIPsecOptions(env.Options, false)
	if err != nil {
		return how, err
	}
	run.mu.Lock()
	cs := slices.Clone(run.charons)
	run.mu.Unlock()
	if len(cs) != 2 {
		return how, errors.New("ipsec: grow: no charon pair running")
	}
	for _, c := range cs {
		if err := addLoAddr(c.ep, ch.local(c.ep.Side)); err != nil {
			return how, err
		}
	}
	for _, c := range []*charon{cs[1], cs[0]} {
		conf := c.conn
		conf.Children = append(slices.Clone(conf.Children), ipsecChildConf(ch, c.ep.Side, o))
		if err := c.load(ctx, conf); err != nil {
			return how, err
		}
		c.conn = conf
	}
	// charon learns the new lo addresses from netlink on its own time: a
	// responder that has not seen its one yet cannot route the new
	// policy and answers TS_UNACCEPTABLE (seen on a loaded host), so a
	// refused initiate is tried again, a few times.
	for try := 1; ; try++ {
		err := initiate(ctx, cs[0], cs[1], ch.Name)
		if err == nil {
			break
		}
		if try == 5 || ctx.Err() != nil {
			return how, err
		}
		time.Sleep(time.Duration(try) * 200 * time.Millisecond)
	}
	for _, c := range cs {
		if _, err := c.waitInstalled(ctx, ch.Name); err != nil {
			return how, err
		}
	}
	return how, nil
}

// Rekey makes side a's charon rekey the CHILD_SA (method.Rekeyer): a new
// SA pair is negotiated and installed, and the old one deleted.
func (m *IPsec) Rekey(ctx context.Context, env *method.Env) (string, error) {
	return ipsecRekey(ctx, m.runs.get(env), "tunbench")
}

func ipsecRekey(ctx context.Context, run *ipsecRun, child string) (string, error) {
	how := "swanctl --rekey --child " + child
	if run == nil {
		return how, errors.New("ipsec: rekey: not set up")
	}
	run.mu.Lock()
	var a *charon
	if len(run.charons) > 0 {
		a = run.charons[0]
	}
	run.mu.Unlock()
	if a == nil {
		return how, errors.New("ipsec: rekey: no charon running")
	}
	if _, err := a.swanctl(ctx, "--rekey", "--child", child); err != nil {
		return how, a.proc.Failure("rekey CHILD_SA "+child, err)
	}
	return how, nil
}

// Teardown stops both charons (they remove their SAs, routes, rule and
// TUN devices), then removes whatever a killed charon or a partial Setup
// left: the overlay addresses on lo, the run's routing table and its rule,
// xfrm state, and the run directories.
func (m *IPsec) Teardown(ctx context.Context, env *method.Env) error {
	return ipsecTeardown(env, m.runs.take(env), "ipsec")
}

func ipsecTeardown(env *method.Env, run *ipsecRun, name string) error {
	var errs []error
	if run != nil {
		for _, c := range run.charons {
			if err := c.proc.Stop(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		for i := len(run.restore) - 1; i >= 0; i-- {
			if err := run.restore[i](); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ep := range env.Endpoints() {
		if ep == nil || ep.NL == nil {
			continue
		}
		// Without the run (a second Teardown) the run's table on a
		// host is left to the journal, which knows which it is.
		table, ok := run.tableOf(ep.Side)
		if err := ipsecCleanNamespace(ep, table); err != nil {
			errs = append(errs, err)
		} else if ok {
			if err := ep.ForgetUndo(table.undoName()); err != nil {
				errs = append(errs, err)
			}
		}
		if err := ep.RemoveAll(filepath.Join(method.SideRoot(env, ep), name+"-"+ep.Side)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// charonTable is the routing table a strongSwan host's charon installs
// its routes in, with a rule of priority 220 to it. The IPsec methods
// never touch either: their charons use a table of the run's own
// (runTable).
const charonTable = 220

// runTable is a routing table and the priority of the one rule to it (in
// each family) that a run's charons on one host use in place of charon's
// default table 220 (strongswan.conf routing_table and
// routing_table_prio). A host running strongSwan has a rule to table 220
// and routes in it; a charon of the run using table 220 too would find
// its rule there already and, when it stops, delete the host's rule. The
// run's table and priority are chosen free on the host at Setup
// (chooseRunTable), so everything in that table, and the rule of that
// priority to it, is the run's to remove.
type runTable struct {
	Table, Priority int
}

// The run's tables are runTableBase ... runTableBase+runTableSpan-1 (the
// first free one from an offset that the run's device prefix picks, so
// that two runs on one host seldom try the same), and the rule's priority
// the highest free one from runPrioTop down to runPrioBottom: just ahead
// of charon's 220, behind the local table's 0. The table holds only host
// routes to the overlay addresses (in the benchmarking ranges), so the
// rule sends no other traffic anywhere else.
const (
	runTableBase  = 22000
	runTableSpan  = 1000
	runPrioTop    = charonTable - 1
	runPrioBottom = 100
)

// undoName names the journal entry of the run's table.
func (t runTable) undoName() string { return fmt.Sprintf("ipsec-table-%d", t.Table) }

// chooseRunTable picks, on ep's host, a routing table that no rule (IPv4
// or IPv6) looks up and no route is in, and a rule priority no rule has,
// and, on a host's own namespace (an endpoint that is not Local: a
// testbed namespace goes with everything in it), journals that the table's
// routes and the rule of that priority to it must go should the run die
// (testbed.UndoDelTable) before any charon adds them.
func chooseRunTable(ep *testbed.Endpoint, seed string) (runTable, error) {
	usedTables, usedPrios := map[int]bool{}, map[int]bool{}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := ep.NL.RuleList(fam)
		if err != nil {
			return runTable{}, fmt.Errorf("%s: list rules: %w", ep.Side, err)
		}
		for _, r := range rules {
			usedTables[r.Table] = true
			usedPrios[r.Priority] = true
		}
		routes, err := ep.NL.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return runTable{}, fmt.Errorf("%s: list routes: %w", ep.Side, err)
		}
		for _, r := range routes {
			usedTables[r.Table] = true
		}
	}
	var t runTable
	h := fnv.New32a()
	h.Write([]byte(seed))
	start := int(h.Sum32() % runTableSpan)
	for i := range runTableSpan {
		if n := runTableBase + (start+i)%runTableSpan; !usedTables[n] {
			t.Table = n
			break
		}
	}
	for p := runPrioTop; p >= runPrioBottom; p-- {
		if !usedPrios[p] {
			t.Priority = p
			break
		}
	}
	if t.Table == 0 || t.Priority == 0 {
		return t, fmt.Errorf("%s: no free routing table in %d-%d or rule priority in %d-%d for charon", ep.Side,
			runTableBase, runTableBase+runTableSpan-1, runPrioBottom, runPrioTop)
	}
	if ep.Local() {
		return t, nil
	}
	return t, ep.RecordUndo(t.undoName(), testbed.Undo{Kind: testbed.UndoDelTable, Table: t.Table, Priority: t.Priority})
}

// ipsecCleanNamespace removes from ep's namespace what the IPsec methods
// may have left, and nothing else (on the ssh testbed the namespace is a
// host's own, which may run IPsec of its own): the overlay host addresses
// on lo, every route in the run's table t and the rule of t's priority to
// it (nothing when t is zero: no run to ask), the xfrm policies whose
// selectors are both the run's (runSelector: an overlay address's host
// prefix) and the xfrm states those policies' templates name (reqid,
// source and destination alike). Table 220 and its rules, a host's
// strongSwan's, and a host's own policies and SAs elsewhere in the
// benchmarking ranges are never touched.
func ipsecCleanNamespace(ep *testbed.Endpoint, t runTable) error {
	var errs []error
	lo, err := ep.NL.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: find lo: %w", ep.Side, err)
	}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		addrs, err := ep.NL.AddrList(lo, fam)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: list addresses of lo: %w", ep.Side, err))
			continue
		}
		for _, a := range addrs {
			ip, _ := netip.AddrFromSlice(a.IP)
			ip = ip.Unmap()
			if !overlayAddr(ip) {
				continue
			}
			if err := ep.NL.AddrDel(lo, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				errs = append(errs, fmt.Errorf("%s: delete %s from lo: %w", ep.Side, ip, err))
			}
		}
		if t.Table == 0 {
			continue
		}
		routes, err := ep.NL.RouteListFiltered(fam, &netlink.Route{Table: t.Table}, netlink.RT_FILTER_TABLE)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: list routes of table %d: %w", ep.Side, t.Table, err))
		}
		for _, r := range routes {
			if err := ep.NL.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("%s: delete route %s from table %d: %w", ep.Side, r.Dst, t.Table, err))
			}
		}
		rules, err := ep.NL.RuleList(fam)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: list rules: %w", ep.Side, err))
		}
		for _, r := range rules {
			if r.Table != t.Table || r.Priority != t.Priority {
				continue
			}
			if err := ep.NL.RuleDel(&r); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("%s: delete rule %d to table %d: %w", ep.Side, t.Priority, t.Table, err))
			}
		}
	}
	// The SAs of a run's policies: their templates' reqid and endpoints.
	type sa struct {
		reqid    int
		src, dst string
	}
	sas := map[sa]bool{}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		policies, err := ep.NL.XfrmPolicyList(fam)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: list xfrm policies: %w", ep.Side, err))
		}
		for _, p := range policies {
			if !runSelector(p.Src) || !runSelector(p.Dst) {
				continue
			}
			for _, t := range p.Tmpls {
				sas[sa{t.Reqid, t.Src.String(), t.Dst.String()}] = true
			}
			if err := ep.NL.XfrmPolicyDel(&p); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("%s: delete xfrm policy %s -> %s: %w", ep.Side, p.Src, p.Dst, err))
			}
		}
	}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		states, err := ep.NL.XfrmStateList(fam)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: list xfrm states: %w", ep.Side, err))
		}
		for _, st := range states {
			if !sas[sa{st.Reqid, st.Src.String(), st.Dst.String()}] {
				continue
			}
			if err := ep.NL.XfrmStateDel(&st); err != nil && !errors.Is(err, unix.ESRCH) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("%s: delete xfrm state %s -> %s spi %#x: %w", ep.Side, st.Src, st.Dst, st.Spi, err))
			}
		}
	}
	return errors.Join(errs...)
}

// runSelector reports whether n is a selector of the IPsec methods'
// CHILD_SAs: the host prefix (/32, /128) of an overlay address
// (overlayAddr: a single tunnel's, or one in the tunnels dimension's
// blocks, which are tunbench's alone). A host's own IPsec policies
// elsewhere in the benchmarking ranges are never one.
func runSelector(n *net.IPNet) bool {
	if n == nil {
		return false
	}
	if ones, bits := n.Mask.Size(); bits == 0 || ones != bits {
		return false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	return ok && overlayAddr(a.Unmap())
}

// overlayAddr reports whether a is one of the overlay addresses the
// IPsec methods put on lo and select their traffic by: a single tunnel's
// (method.Overlay), or one of the tunnels dimension's other CHILD_SAs
// (method.ScaleOverlay's blocks).
func overlayAddr(a netip.Addr) bool {
	return a == method.OverlayA4.Addr() || a == method.OverlayB4.Addr() || a == method.OverlayA6.Addr() || a == method.OverlayB6.Addr() ||
		method.ScaleBlock4.Contains(a) || method.ScaleBlock6.Contains(a)
}

// checkScale refuses env's tunnel count above s.Max (validation refuses
// it first; this keeps a direct caller from half a set-up).
func checkScale(name string, env *method.Env, s method.Scale) error {
	if env.N() > s.Max {
		return fmt.Errorf("%s: tunnels %d: at most %d (one tunnel is one %s; %s)", name, env.N(), s.Max, s.Unit, s.Why)
	}
	return nil
}

// addLoAddr adds addr as a host address on lo.
func addLoAddr(ep *testbed.Endpoint, addr netip.Addr) error {
	lo, err := ep.NL.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: find lo: %w", ep.Side, err)
	}
	return method.AddAddr(ep, lo, method.HostPrefix(addr))
}

// addMTURoute adds a host route to dst over the underlay with the given
// source address and MTU, and records its removal in run.
func addMTURoute(ep *testbed.Endpoint, run *ipsecRun, dst, src netip.Addr, mtu int) error {
	under, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		return fmt.Errorf("%s: find underlay %s: %w", ep.Side, ep.Dev, err)
	}
	r := &netlink.Route{
		LinkIndex: under.Attrs().Index,
		Dst:       testbed.PrefixNet(method.HostPrefix(dst)),
		Src:       net.IP(src.AsSlice()),
		MTU:       mtu,
	}
	if err := method.RouteAdd(ep, r); err != nil {
		return err
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	run.restore = append(run.restore, func() error {
		if err := ep.NL.RouteDel(r); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("%s: delete route to %s: %w", ep.Side, dst, err)
		}
		return nil
	})
	return nil
}

// setLinkMTU sets the MTU of the named link.
func setLinkMTU(ep *testbed.Endpoint, name string, mtu int) error {
	link, err := ep.NL.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", ep.Side, name, err)
	}
	if err := ep.NL.LinkSetMTU(link, mtu); err != nil {
		return fmt.Errorf("%s: set mtu %d on %s: %w", ep.Side, mtu, name, err)
	}
	return nil
}
