// Package ssh is the ssh testbed (Entry): the hosts of the scenario's ssh
// section, whose checks live here too (section.go). Its code is the agent
// testbed, which the kubernetes testbed runs as well: real hosts, each
// reached over a transport (SSH for the ssh testbed, by default; a pod's
// exec stream for kubernetes, through Config.Connect). On each host tunbench runs itself
// as an agent ("tunbench agent", this binary, copied there), so the same
// plan, methods, load drivers and samplers run on the hosts unchanged: an
// endpoint on a host is a testbed.Endpoint whose commands, files, netlink
// calls and ops go to that host's agent.
//
// One connection and one agent serve a host for the whole run. Every
// object created on a host carries the run's prefix; when the controller
// goes, each agent kills what it started and removes the run's devices and
// directory there. A host whose connection is lost is cleaned (tunbench
// clean --run ID --site NAME, run there) as soon as it can be reached
// again, and "tunbench clean --testbed ssh -f scenario.yaml" does the same
// by hand. tunbench touches only the underlay device and addresses the
// scenario names, and never a host's default route; with ssh.host_changes
// it sets that device's MTU and offload features per cell and puts them
// back from a journal on the host (hostchanges.go).
package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
)

// Config is what Open needs.
type Config struct {
	// SSH is the scenario's ssh section; Families and MTUs its matrix.
	SSH      *Section
	Families []string
	MTUs     []int
	// Offloads are the matrix's offloads ("on", "off", feature sets):
	// with ssh.host_changes, any but "on" changes the hosts' devices.
	Offloads []string
	// ID is the run; BuildID identifies this binary (agents must match).
	ID, BuildID string
	// Version is what "tunbench version" prints as the version.
	Version string
	// Binary is this tunbench, copied to hosts (os.Executable when empty).
	Binary string
	// Tools are the programs every host needs (load tools, methods').
	Tools []remotehost.Tool
	// Methods are the run's methods and their requirements. Every host
	// is checked against each when the testbed opens: kernel options by
	// the host's own kernel config and modules, programs (with Tools)
	// in its PATH.
	Methods []MethodNeeds
	// CongestionControls are the TCP congestion control algorithms the
	// run asks for ("" is each host's default); every host must offer
	// them.
	CongestionControls []string
	// Dial, when set, opens the TCP connection to a site's sshd (tests
	// reach hosts inside namespaces this way).
	Dial func(site string) func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log receives notes (reconnects, cleanups); nil discards.
	Log func(format string, args ...any)
	// Connect, when set, reaches a site in place of an SSH login: it
	// returns a Host over another transport (testbed kubernetes: a pod's
	// exec stream) and the site as it is now (a pod made anew has a new
	// address). It is called for every connection, reconnections and
	// cleanups included.
	Connect func(ctx context.Context, st Site) (*remotehost.Host, Site, error)
	// Networks says, per site, where its agent serves (Hello.Network):
	// "" the host's own network stack, testbed.NetworkPod a pod's.
	Networks map[string]string
	// Testbed names the testbed in the clean command Close suggests for
	// a site it could not clean ("": ssh).
	Testbed string
}

// Testbed is the ssh testbed of one run.
type Testbed struct {
	cfg   Config
	mu    sync.Mutex
	hosts map[string]*host
}

// host is one site: its SSH connection, agent and endpoint description.
type host struct {
	site  Site
	ssh   *remotehost.Host
	sess  *remotehost.Session
	agent *agent.AgentConn
	hello agent.Hello
	exe   string
	// lost is set once the connection was lost; the site is cleaned and
	// reconnected before its next use.
	lost bool
	// changes is set when the run changes the site's device
	// (host_changes); overDev when the SSH connection runs over it
	// (control_over_dev). orig is the device's journaled state, once
	// saved.
	changes, overDev bool
	orig             *testbed.DeviceState
}

// Open connects to every site, checks it (tools, the methods' kernel
// options, congestion control, device, addresses, MTU, tunbench binary)
// and starts its agent. Problems are reported per host, all at once;
// those of the first step (everything but the underlay, which the agent
// reads) before anything is created on any host.
func Open(ctx context.Context, cfg Config) (*Testbed, error) {
	if cfg.SSH == nil || len(cfg.SSH.Sites) < 2 {
		return nil, errors.New("ssh testbed: the ssh testbed needs at least two sites")
	}
	t := &Testbed{cfg: cfg, hosts: map[string]*host{}}
	n := len(cfg.SSH.Sites)
	errs := make([]error, n)
	hosts := make([]*host, n)
	each := func(fn func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(i)
			}()
		}
		wg.Wait()
	}
	closeAll := func() {
		for _, h := range hosts {
			if h != nil {
				h.close()
			}
		}
	}
	// First every host is reached and checked for tools, congestion
	// control and the methods' kernel options, before anything is
	// copied or started on any of them.
	each(func(i int) { hosts[i], errs[i] = t.dial(ctx, cfg.SSH.Sites[i], true) })
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return nil, err
	}
	each(func(i int) { errs[i] = t.start(ctx, hosts[i], true) })
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return nil, err
	}
	for i, h := range hosts {
		t.hosts[cfg.SSH.Sites[i].Name] = h
	}
	return t, nil
}

func (t *Testbed) logf(format string, args ...any) {
	if t.cfg.Log != nil {
		t.cfg.Log(format, args...)
	}
}

// sshConfig is how to log in to st.
func (t *Testbed) sshConfig(st Site) remotehost.Config {
	c := remotehost.Config{Name: st.Name, Addr: st.Address, Port: st.Port, User: st.User,
		IdentityFile: remotehost.ExpandHome(st.Identity), KnownHosts: remotehost.ExpandHome(t.cfg.SSH.KnownHosts)}
	if t.cfg.Dial != nil {
		c.Dial = t.cfg.Dial(st.Name)
	}
	return c
}

// connect logs in to st and starts its agent; check also verifies its
// tools, device and addresses (the first time).
func (t *Testbed) connect(ctx context.Context, st Site, check bool) (*host, error) {
	h, err := t.dial(ctx, st, check)
	if err != nil {
		return nil, err
	}
	if err := t.start(ctx, h, check); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// dial logs in to st; check also checks the host for what the run needs
// (Config.checkHost): the tools, congestion control algorithms and the
// methods' kernel options.
func (t *Testbed) dial(ctx context.Context, st Site, check bool) (*host, error) {
	sh, st, err := t.login(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("site %s: %w", st.Name, err)
	}
	h := &host{site: st, ssh: sh}
	if check {
		if err := t.cfg.checkHost(ctx, st.Name, sshHost{sh}, t.logf); err != nil {
			sh.Close()
			return nil, err
		}
	}
	return h, nil
}

// login reaches st: over SSH, or through Config.Connect.
func (t *Testbed) login(ctx context.Context, st Site) (*remotehost.Host, Site, error) {
	if t.cfg.Connect != nil {
		return t.cfg.Connect(ctx, st)
	}
	c := t.sshConfig(st)
	if err := c.Validate(); err != nil {
		return nil, st, err
	}
	sh, err := remotehost.Dial(ctx, c)
	return sh, st, err
}

// start installs tunbench on h (unless given), starts its agent and, with
// check, verifies the underlay device, addresses and MTU.
func (t *Testbed) start(ctx context.Context, h *host, check bool) error {
	st, sh := h.site, h.ssh
	exe, err := t.cfg.install(ctx, sh)
	if err != nil {
		return fmt.Errorf("site %s: %w", st.Name, err)
	}
	h.exe = exe
	h.hello = agent.Hello{Version: t.cfg.BuildID, ID: t.cfg.ID, Site: st.Name, Dev: st.Dev, Exe: exe, Network: t.cfg.Networks[st.Name]}
	if p, err := st.Prefix("ipv4"); err == nil {
		h.hello.Addr4 = p
	}
	if p, err := st.Prefix("ipv6"); err == nil {
		h.hello.Addr6 = p
	}
	sess, err := sh.Start(context.WithoutCancel(ctx), exe, "agent")
	if err != nil {
		return fmt.Errorf("site %s: %w", st.Name, err)
	}
	h.sess = sess
	h.agent = agent.NewAgentConn(st.Name, sess.Stdout, sess.Stdin, sessionCloser{sess})
	if err := h.agent.Hello(ctx, h.hello); err != nil {
		return fmt.Errorf("site %s: %w", st.Name, err)
	}
	if put := h.agent.Settled(); len(put) > 0 {
		t.logf("site %s: put back what a killed run left changed: %s", st.Name, strings.Join(put, "; "))
	}
	if check {
		if err := t.checkUnderlay(h); err != nil {
			return fmt.Errorf("site %s: %w", st.Name, err)
		}
	}
	if t.cfg.SSH.ChangesHost(st.Name) {
		link, err := h.agent.Endpoint("a", h.hello).NL.LinkByName(st.Dev)
		if err != nil {
			return fmt.Errorf("site %s: underlay device %s: %w", st.Name, st.Dev, err)
		}
		if h.changes = t.changes(h, link.Attrs().MTU); h.changes {
			if err := t.checkControl(ctx, h); err != nil {
				return fmt.Errorf("site %s: %w", st.Name, err)
			}
		}
	}
	return nil
}

// sessionCloser ends the agent: EOF on its standard input makes it clean
// up and exit; Close then waits for it.
type sessionCloser struct{ s *remotehost.Session }

func (c sessionCloser) Close() error {
	_ = c.s.Stdin.Close()
	done := make(chan struct{})
	go func() {
		_ = c.s.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
	}
	return c.s.Close()
}

func (h *host) close() {
	if h.agent != nil {
		_ = h.agent.Close()
	}
	_ = h.ssh.Close()
}

// checkUnderlay verifies, on the host, that the named device exists, is
// up, carries the named addresses, and has an MTU the matrix asks for:
// tunbench configures no underlay on a real host.
func (t *Testbed) checkUnderlay(h *host) error {
	ep := h.agent.Endpoint("a", h.hello)
	link, err := ep.NL.LinkByName(h.site.Dev)
	if err != nil {
		return fmt.Errorf("underlay device %s: %w (dev names a device of this host)", h.site.Dev, err)
	}
	addrs, err := ep.NL.AddrList(link, 0)
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", h.site.Dev, err)
	}
	var have []string
	for _, a := range addrs {
		if p, ok := netip.AddrFromSlice(a.IP); ok {
			have = append(have, p.Unmap().String())
		}
	}
	for _, fam := range t.cfg.Families {
		p, err := h.site.Prefix(fam)
		if err != nil {
			continue
		}
		if !slices.Contains(have, p.Addr().String()) {
			return fmt.Errorf("%s is not an address of %s (it has %s): give the address configured on the device", p.Addr(), h.site.Dev, strings.Join(have, ", "))
		}
	}
	mtu := link.Attrs().MTU
	if t.cfg.SSH.ChangesHost(h.site.Name) {
		return nil // each cell sets it
	}
	if t.cfg.Networks[h.site.Name] == testbed.NetworkPod {
		// A pod's MTU is its CNI's (an overlay's is below the nodes'):
		// mtus are the nodes', and pod-network records the pod's as the
		// cell's overlay MTU.
		return nil
	}
	for _, m := range t.cfg.MTUs {
		if m != mtu {
			if t.cfg.Connect != nil {
				return fmt.Errorf("%s has MTU %d, and mtus asks for %d: this testbed leaves the MTU of nodes as it is: set mtus: [%d] (every node measured in one run needs the same MTU)", h.site.Dev, mtu, m, mtu)
			}
			return mtuRefusal(h.site.Dev, mtu, m)
		}
	}
	return nil
}

// Name is "ssh".
func (t *Testbed) Name() string { return "ssh" }

// Pair returns the endpoints on sites spec.A (sending) and spec.B. A site
// whose connection was lost is cleaned and reconnected first.
func (t *Testbed) Pair(ctx context.Context, spec testbed.Spec) (*testbed.Pair, error) {
	if spec.A == "" || spec.B == "" {
		return nil, errors.New("ssh testbed: a cell on the ssh testbed names its two sites")
	}
	if err := testbed.CheckNetwork("ssh", spec); err != nil {
		return nil, err
	}
	a, err := t.site(ctx, spec.A)
	if err != nil {
		return nil, err
	}
	b, err := t.site(ctx, spec.B)
	if err != nil {
		return nil, err
	}
	undo, err := t.prepareHosts(ctx, []*host{a, b}, spec.UnderlayMTU)
	if err != nil {
		return nil, errors.Join(err, undo())
	}
	epA := a.agent.Endpoint("a", a.hello)
	epB := b.agent.Endpoint("b", b.hello)
	return testbed.NewPair(epA, epB, epA.Dir, func() error {
		// The hosts' devices go back once nothing of the cell runs.
		err := errors.Join(epA.StopAll(), epB.StopAll())
		return errors.Join(err, undo())
	}), nil
}

// site returns the live host called name, reconnecting a lost one.
func (t *Testbed) site(ctx context.Context, name string) (*host, error) {
	t.mu.Lock()
	h := t.hosts[name]
	t.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("ssh testbed: unknown site %q", name)
	}
	select {
	case <-h.agent.Done():
		h.lost = true
	default:
		return h, nil
	}
	nh, err := t.recover(ctx, h)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.hosts[name] = nh
	t.mu.Unlock()
	return nh, nil
}

// recover cleans a host whose connection was lost and starts a new agent.
func (t *Testbed) recover(ctx context.Context, h *host) (*host, error) {
	h.close()
	if err := t.cleanSite(ctx, h.site, h.exe); err != nil {
		return nil, fmt.Errorf("site %s: connection lost (%v), and it cannot be cleaned yet: %w", h.site.Name, h.agent.Err(), err)
	}
	nh, err := t.connect(ctx, h.site, false)
	if err != nil {
		return nil, fmt.Errorf("site %s: connection lost, cleaned, but no new agent: %w", h.site.Name, err)
	}
	t.logf("site %s: connection was lost; cleaned and reconnected", h.site.Name)
	return nh, nil
}

// cleanSite runs "tunbench clean --run ID --site NAME" on the site over a
// fresh connection.
func (t *Testbed) cleanSite(ctx context.Context, st Site, exe string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sh, _, err := t.login(ctx, st)
	if err != nil {
		return err
	}
	defer sh.Close()
	out, _, err := sh.Run(ctx, exe, "clean", "--run", t.cfg.ID, "--site", st.Name)
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(string(out)); s != "" && s != "nothing to clean" {
		t.logf("site %s: %s", st.Name, strings.ReplaceAll(s, "\n", "; "))
	}
	return nil
}

// Close ends every agent (each cleans its host). Hosts whose connection
// was lost are cleaned over a new one, retried for a while; one still
// unreachable is named with the command that cleans it later.
func (t *Testbed) Close() error {
	t.mu.Lock()
	hosts := t.hosts
	t.hosts = map[string]*host{}
	t.mu.Unlock()
	var lost []*host
	var errs []error
	var errsMu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range hosts {
		select {
		case <-h.agent.Done():
			lost = append(lost, h)
			continue
		default:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h.changes {
				// The run's end: the device back, the journal entry out.
				errsMu.Lock()
				errs = append(errs, restoreHosts(context.Background(), []*host{h}, true))
				errsMu.Unlock()
			}
			h.close()
		}()
	}
	wg.Wait()
	for _, h := range lost {
		h.close()
		var err error
		for try := 0; try < 5; try++ {
			if err = t.cleanSite(context.Background(), h.site, h.exe); err == nil {
				t.logf("site %s: connection was lost; cleaned", h.site.Name)
				break
			}
			time.Sleep(2 * time.Second)
		}
		if err != nil {
			bed := t.cfg.Testbed
			if bed == "" {
				bed = "ssh"
			}
			errs = append(errs, fmt.Errorf("site %s: connection lost and not cleaned (%v): when it is back, run tunbench clean --testbed %s -f SCENARIO --run %s", h.site.Name, err, bed, t.cfg.ID))
		}
	}
	return errors.Join(errs...)
}

// Clean cleans every site of a scenario by hand: "tunbench clean" there
// (what killed runs left), and with id set that run's site state whatever
// its lock says.
func Clean(ctx context.Context, cfg Config, id string) ([]string, error) {
	return OnEachSite(ctx, cfg, func(site string) []string {
		if id == "" {
			return []string{"clean"}
		}
		return []string{"clean", "--run", id, "--site", site}
	})
}

// OnEachSite runs tunbench on every site of a scenario, one after the
// other, with the arguments args returns for the site (tunbench itself
// installed there as a run would), and returns their output, each line
// prefixed with the site's name. A site that cannot be reached or whose
// command fails is an error of its own; the others still run.
func OnEachSite(ctx context.Context, cfg Config, args func(site string) []string) ([]string, error) {
	t := &Testbed{cfg: cfg}
	var out []string
	var errs []error
	for _, st := range cfg.SSH.Sites {
		sh, _, err := t.login(ctx, st)
		if err != nil {
			errs = append(errs, fmt.Errorf("site %s: %w", st.Name, err))
			continue
		}
		exe, err := cfg.install(ctx, sh)
		if err != nil {
			sh.Close()
			errs = append(errs, fmt.Errorf("site %s: %w", st.Name, err))
			continue
		}
		res, _, err := sh.Run(ctx, append([]string{exe}, args(st.Name)...)...)
		sh.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("site %s: %w", st.Name, err))
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(res)), "\n") {
			out = append(out, st.Name+": "+l)
		}
	}
	return out, errors.Join(errs...)
}

// install returns the path of tunbench on the host: the scenario's binary,
// or this build copied to a directory of its own (a binary found there is
// this one). It is the one place that decides which tunbench a host runs,
// for run, clean, ebpf stats and the kubernetes testbed alike.
func (c Config) install(ctx context.Context, sh *remotehost.Host) (string, error) {
	if c.SSH.Binary != "" {
		return c.SSH.Binary, nil
	}
	dir := c.SSH.Dir
	if dir == "" {
		dir = DefaultDir
	}
	local, err := c.localBinary()
	if err != nil {
		return "", err
	}
	return sh.InstallSelf(ctx, path.Join(dir, buildDir(c.BuildID)), c.Version, local)
}

// localBinary is the tunbench copied to hosts: Config.Binary, else this
// program.
func (c Config) localBinary() (string, error) {
	if c.Binary != "" {
		return c.Binary, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("ssh testbed: find this tunbench: %w", err)
	}
	return exe, nil
}

// buildDir names the directory of one build on the hosts.
func buildDir(buildID string) string {
	_, sum, ok := strings.Cut(buildID, "+")
	if !ok || sum == "" {
		return "build"
	}
	return sum
}
