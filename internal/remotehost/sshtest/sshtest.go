// Package sshtest gives tests real SSH "hosts": network namespaces, joined
// by a veth pair (two sites) or a bridge in a namespace of its own (three
// or more), each running a real OpenSSH server (/usr/sbin/sshd) on its
// underlay address with a fresh host key, a known_hosts file that knows
// them, and a client key they accept for root. Commands run over SSH live
// in the site's network namespace; the filesystem and pid space are the
// test's own.
//
// Everything carries the project's prefixes, so `tunbench clean` finds
// what a killed test left: namespaces are named testbed.NamespaceName(id,
// "a"|"b") (two namespaces per run id, each id's lock held for the test's
// lifetime so that a concurrent clean leaves them alone), devices start
// with testbed.DevicePrefix, and files live in /run/tunbench/<id>.
// t.Cleanup kills every sshd and its children, deletes the namespaces and
// files, and fails the test if any is left.
package sshtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/vishvananda/netns"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"
)

// SSHD is the OpenSSH server the sites run.
const SSHD = "/usr/sbin/sshd"

// Sites are the hosts of one test.
type Sites struct {
	// Site lists the hosts in order; site i has address 198.18.0.(i+1).
	Site []*Site
	// Dir is the private directory (0700) holding keys, configs and logs.
	Dir string
	// KnownHosts is the known_hosts file that knows every site.
	KnownHosts string
	// IdentityFile is the client key every site accepts for root.
	IdentityFile string
	// Namespaces lists every namespace created, the bridge's and the
	// control namespace's included.
	Namespaces []string
	// Control is the control namespace of sites built with Management,
	// else "".
	Control string

	t     testing.TB
	ids   []string
	locks []*os.File
}

// Site is one host: a namespace running sshd.
type Site struct {
	// Config dials this site's sshd as root with the test's key and
	// known_hosts; its Dial connects from inside the site's namespace
	// (the test process itself lives outside every site).
	Config remotehost.Config
	// Namespace is the site's network namespace.
	Namespace string
	// Dev is the site's underlay device.
	Dev string
	// Addr4 and Addr6 are the underlay addresses, without prefix length
	// (/24 and /64).
	Addr4, Addr6 string
	// Mgmt4 is the site's management address (sites built with
	// Management), where its sshd listens too, else "".
	Mgmt4 string
	// HostKey is the public host key sshd offers.
	HostKey ssh.PublicKey

	dir    string // the site's files
	config string // its sshd_config
	sshd   *exec.Cmd
	exited chan struct{}
	// kernelView, when set, is the directory whose config.gz and
	// boot/ sshd's mount namespace shows as /proc/config.gz and /boot
	// (PresentKernelConfig).
	kernelView string
	// private is set for sites built with PrivateFiles; shared is the
	// test's directory (Sites.Dir), kept visible there.
	private bool
	shared  string
}

// privateDirs are the directories PrivateFiles makes private to a site:
// testbed.DefaultRoot and ssh.DefaultDir of internal/bed/ssh (not imported:
// that package is far above this one).
var privateDirs = []string{testbed.DefaultRoot, "/var/tmp/tunbench"}

// Path is where the test sees path p as the site's sessions see it: p
// itself, or for a site with PrivateFiles, p under the root of its sshd
// (/proc/PID/root/p) while that runs.
func (site *Site) Path(p string) string {
	if !site.private {
		return p
	}
	return filepath.Join("/proc", strconv.Itoa(site.SSHDPid()), "root", p)
}

// Option changes how New builds the sites.
type Option func(*options)

type options struct{ management, private bool }

// PrivateFiles gives every site a file system of its own where tunbench
// writes: its sshd runs in a mount namespace of its own where
// testbed.DefaultRoot (/run/tunbench: run directories and journals; the
// run locks in testbed.LockDir stay the machine's, as its network
// namespaces do) and ssh.DefaultDir (/var/tmp/tunbench: the tunbench copied to
// the host) are fresh tmpfs mounts only that site's sessions see, as on
// separate hosts. Nothing of a run is then visible to the test, the
// controller or another site at the same path; Site.Path shows a site's
// view. The mounts go with the site's sshd and the processes it started
// (a restart of sshd starts with them empty, like a rebooted host).
func PrivateFiles() Option { return func(o *options) { o.private = true } }

// Management gives the sites a management network apart from their
// underlay, as hosts with a management interface have: a control
// namespace (Sites.Control) joined to each site by a veth pair of its
// own, the site's end addressed 198.19.254.(4i+2)/30 (Site.Mgmt4), where
// its sshd listens too. A controller run in the control namespace reaches
// every site without crossing any site's underlay device, so a method
// that takes the underlay's addresses away (OVS's netdev datapath) does
// not cut it off.
func Management() Option { return func(o *options) { o.management = true } }

// New creates n sites (n >= 1) and removes them when the test ends. It
// skips the test when the process cannot create namespaces or sshd is not
// installed.
func New(t testing.TB, n int, opts ...Option) *Sites {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	if _, err := os.Stat(SSHD); err != nil {
		testenv.SkipMissing(t, "needs the OpenSSH server %s (Debian package openssh-server; scripts/install.sh test installs it): %v", SSHD, err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.SkipMissing(t, "needs ip (iproute2): %v", err)
	}
	if n < 1 {
		t.Fatalf("sshtest.New: n = %d, want at least 1", n)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Sites{t: t}
	t.Cleanup(s.cleanup)
	if err := s.build(n, o); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	return s
}

func (s *Sites) build(n int, o options) error {
	// sshd (OpenSSH 9.2) insists on its privilege separation directory;
	// the openssh-server service would create it at boot. It is empty and
	// shared, so it stays.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return fmt.Errorf("create sshd's privilege separation directory: %w", err)
	}
	nsCount := n
	if n >= 3 {
		nsCount++ // the bridge's own namespace
	}
	if o.management {
		nsCount++ // the control namespace, last
	}
	for len(s.ids)*2 < nsCount {
		id := testbed.NewID()
		lock, err := lockID(id)
		if err != nil {
			return err
		}
		s.ids = append(s.ids, id)
		s.locks = append(s.locks, lock)
	}
	for k := 0; k < nsCount; k++ {
		s.Namespaces = append(s.Namespaces, testbed.NamespaceName(s.ids[k/2], []string{"a", "b"}[k%2]))
	}
	s.Dir = filepath.Join(testbed.DefaultRoot, s.ids[0])
	if err := os.MkdirAll(testbed.DefaultRoot, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	for _, ns := range s.Namespaces {
		if err := ip("netns", "add", ns); err != nil {
			return err
		}
		if err := ip("-n", ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	prefix := testbed.DevicePrefix(s.ids[0])
	for i := 0; i < n; i++ {
		s.Site = append(s.Site, &Site{
			Namespace: s.Namespaces[i],
			Dev:       fmt.Sprintf("%ss%d", prefix, i),
			Addr4:     fmt.Sprintf("198.18.0.%d", i+1),
			Addr6:     fmt.Sprintf("2001:2::%d", i+1),
			dir:       filepath.Join(s.Dir, fmt.Sprintf("s%d", i)),
			private:   o.private,
			shared:    s.Dir,
		})
	}
	if err := s.link(n, prefix); err != nil {
		return err
	}
	if o.management {
		s.Control = s.Namespaces[len(s.Namespaces)-1]
		if err := s.manage(prefix); err != nil {
			return err
		}
	}

	// The client key, accepted by every site.
	clientPub, err := writeKey(filepath.Join(s.Dir, "id_ed25519"), "tunbench-sshtest-client")
	if err != nil {
		return err
	}
	s.IdentityFile = filepath.Join(s.Dir, "id_ed25519")
	authorized := filepath.Join(s.Dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		return err
	}
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	var known []string
	for i, site := range s.Site {
		if err := os.Mkdir(site.dir, 0o700); err != nil {
			return err
		}
		hostKey := filepath.Join(site.dir, "ssh_host_ed25519_key")
		if site.HostKey, err = writeKey(hostKey, "tunbench-sshtest-"+site.Namespace); err != nil {
			return err
		}
		names := []string{site.Addr4, "[" + site.Addr6 + "]:22"}
		listen := []string{"ListenAddress " + site.Addr4 + ":22", "ListenAddress [" + site.Addr6 + "]:22"}
		if site.Mgmt4 != "" {
			names = append(names, site.Mgmt4)
			listen = append(listen, "ListenAddress "+site.Mgmt4+":22")
		}
		known = append(known, knownhosts.Line(names, site.HostKey))
		site.config = filepath.Join(site.dir, "sshd_config")
		conf := strings.Join([]string{
			"# sshd of sshtest site " + strconv.Itoa(i) + " in namespace " + site.Namespace,
			strings.Join(listen, "\n"),
			"HostKey " + hostKey,
			"PidFile " + filepath.Join(site.dir, "sshd.pid"),
			"AuthorizedKeysFile " + authorized,
			"PermitRootLogin prohibit-password",
			"PubkeyAuthentication yes",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"StrictModes no",
			"UsePAM no",
			"PrintMotd no",
			"UseDNS no",
			"",
		}, "\n")
		if err := os.WriteFile(site.config, []byte(conf), 0o600); err != nil {
			return err
		}
		if out, err := exec.Command(SSHD, "-t", "-f", site.config).CombinedOutput(); err != nil {
			return fmt.Errorf("%s -t -f %s: %v: %s", SSHD, site.config, err, out)
		}
		site.Config = remotehost.Config{
			Name:         fmt.Sprintf("s%d", i),
			Addr:         site.Addr4,
			Port:         22,
			User:         "root",
			IdentityFile: s.IdentityFile,
			KnownHosts:   s.KnownHosts,
			Dial:         DialIn(site.Namespace),
		}
	}
	if err := os.WriteFile(s.KnownHosts, []byte(strings.Join(known, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	for _, site := range s.Site {
		if err := site.startSSHD(); err != nil {
			return err
		}
	}
	return nil
}

// link joins the sites' underlay: a veth pair for two sites, a bridge in
// the last namespace for three or more.
func (s *Sites) link(n int, prefix string) error {
	switch {
	case n == 2:
		a, b := s.Site[0], s.Site[1]
		if err := ip("link", "add", a.Dev, "netns", a.Namespace, "type", "veth", "peer", "name", b.Dev, "netns", b.Namespace); err != nil {
			return err
		}
	case n >= 3:
		br := s.Namespaces[n]
		brDev := prefix + "br"
		if err := ip("-n", br, "link", "add", brDev, "type", "bridge"); err != nil {
			return err
		}
		if err := ip("-n", br, "link", "set", brDev, "up"); err != nil {
			return err
		}
		for i, site := range s.Site {
			port := fmt.Sprintf("%sp%d", prefix, i)
			if err := ip("link", "add", site.Dev, "netns", site.Namespace, "type", "veth", "peer", "name", port, "netns", br); err != nil {
				return err
			}
			if err := ip("-n", br, "link", "set", port, "master", brDev, "up"); err != nil {
				return err
			}
		}
	default: // one site: a veth pair inside it (the kernel may lack dummy)
		a := s.Site[0]
		if err := ip("-n", a.Namespace, "link", "add", a.Dev, "type", "veth", "peer", "name", a.Dev+"p"); err != nil {
			return err
		}
		if err := ip("-n", a.Namespace, "link", "set", a.Dev+"p", "up"); err != nil {
			return err
		}
	}
	for _, site := range s.Site {
		for _, args := range [][]string{
			{"addr", "add", site.Addr4 + "/24", "dev", site.Dev},
			{"-6", "addr", "add", site.Addr6 + "/64", "dev", site.Dev, "nodad"},
			{"link", "set", site.Dev, "up"},
		} {
			if err := ip(append([]string{"-n", site.Namespace}, args...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// manage builds the management network of Management.
func (s *Sites) manage(prefix string) error {
	for i, site := range s.Site {
		ctl, mine := fmt.Sprintf("%sc%d", prefix, i), fmt.Sprintf("%sm%d", prefix, i)
		site.Mgmt4 = fmt.Sprintf("198.19.254.%d", 4*i+2)
		if err := ip("link", "add", mine, "netns", site.Namespace, "type", "veth", "peer", "name", ctl, "netns", s.Control); err != nil {
			return err
		}
		for _, args := range [][]string{
			{"-n", site.Namespace, "addr", "add", site.Mgmt4 + "/30", "dev", mine},
			{"-n", site.Namespace, "link", "set", mine, "up"},
			{"-n", s.Control, "addr", "add", fmt.Sprintf("198.19.254.%d/30", 4*i+1), "dev", ctl},
			{"-n", s.Control, "link", "set", ctl, "up"},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// startSSHD starts the site's sshd and waits until it accepts connections.
func (site *Site) startSSHD() error {
	logf, err := os.OpenFile(filepath.Join(site.dir, "sshd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	// ip netns exec execs sshd: the child is sshd itself (through sh's
	// exec when the site presents a kernel config of its own).
	argv := []string{"ip", "netns", "exec", site.Namespace}
	if site.private {
		argv = append(argv, "sh", "-c", privateScript, "sh", site.shared, filepath.Join(site.dir, "private"), privateDirs[0], privateDirs[1], testbed.LockDir)
	}
	if site.kernelView != "" {
		argv = append(argv, "sh", "-c", kernelViewScript, "sh", site.kernelView)
	}
	argv = append(argv, SSHD, "-D", "-e", "-f", site.config)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd of %s: %w", site.Namespace, err)
	}
	site.sshd, site.exited = cmd, make(chan struct{})
	go func(c chan struct{}) { _ = cmd.Wait(); close(c) }(site.exited)
	deadline := time.Now().Add(10 * time.Second)
	dial := DialIn(site.Namespace)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := dial(ctx, "tcp", net.JoinHostPort(site.Addr4, "22"))
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-site.exited:
			log, _ := os.ReadFile(filepath.Join(site.dir, "sshd.log"))
			return fmt.Errorf("sshd of %s exited at start: %s", site.Namespace, log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd of %s does not accept connections on %s:22 after 10s: %v", site.Namespace, site.Addr4, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kernelViewScript runs in the mount namespace "ip netns exec" gives the
// site's sshd (its own, a slave of the machine's: nothing mounted there
// reaches the machine), before it execs sshd: it shows the kernel config
// in $1 where the kernel config is read, /proc/config.gz (when this
// kernel has one) and /boot/config-$(uname -r).
const kernelViewScript = `set -e
view=$1
shift
if [ -e /proc/config.gz ]; then mount --bind "$view/config.gz" /proc/config.gz; fi
mount --bind "$view/boot" /boot
exec "$@"`

// privateScript runs, like kernelViewScript, in the mount namespace "ip
// netns exec" gives the site's sshd, and makes $3 and $4 fresh tmpfs
// mounts there (PrivateFiles). $3 (/run/tunbench) holds the test's own
// directory $1 (keys, sshd_config), which must stay visible: the tmpfs
// is mounted on a staging directory $2 first, $1 bound into it, and the
// whole moved onto $3.
//
// The lock directory $5 (testbed.LockDir) stays the machine's, bound into
// the tmpfs: network namespaces are the machine's too, and a "tunbench
// clean" on a site must see every live run's lock, this test's and those
// of other tests on the machine, to leave their namespaces alone.
const privateScript = `set -e
shared=$1 stage=$2 run=$3 inst=$4 locks=$5
shift 5
mkdir -p "$stage" "$inst"
mount -t tmpfs -o mode=0755 tunbench-sshtest "$stage"
mkdir -p "$stage/${shared##*/}" "$stage/${locks##*/}"
mount --bind "$shared" "$stage/${shared##*/}"
mount --bind "$locks" "$stage/${locks##*/}"
mount --move "$stage" "$run"
mount -t tmpfs -o mode=0755 tunbench-sshtest "$inst"
exec "$@"`

// PresentKernelConfig makes the site a host whose kernel config is
// config (the text of a kernel .config), and restarts its sshd so that
// every session from then on sees it.
//
// The sites share this machine's kernel, so a test of a host whose kernel
// lacks an option needs a host that says so where a host says it: in its
// kernel config files. sshd runs in a mount namespace of its own (the one
// "ip netns exec" creates), so the site's /proc/config.gz (when this
// kernel has one) and /boot are bind mounts of files holding config
// there, and only there: whatever reads the config on the host (cat over
// SSH, an agent, tunbench itself) reads config, with no command or PATH
// replaced. The release (uname -r), /proc/modules and /lib/modules stay
// this machine's, and so does what the kernel can really do: only the
// config says otherwise.
func (site *Site) PresentKernelConfig(config []byte) error {
	if st, err := os.Stat("/boot"); err != nil || !st.IsDir() {
		return fmt.Errorf("sshtest: present a kernel config: /boot must be a directory to mount over: %v", err)
	}
	rel, err := kernelRelease()
	if err != nil {
		return err
	}
	view := filepath.Join(site.dir, "kernel")
	if err := os.MkdirAll(filepath.Join(view, "boot"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(view, "boot", "config-"+rel), config, 0o644); err != nil {
		return err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(config); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(view, "config.gz"), gz.Bytes(), 0o444); err != nil {
		return err
	}
	site.kernelView = view
	return site.RestartSSHD()
}

// KernelConfigWithout returns this machine's kernel config (from
// /proc/config.gz, else /boot/config-$(uname -r); empty when it has
// neither) with each of options marked "is not set": the config of a
// kernel like this one built without them, for PresentKernelConfig.
func KernelConfigWithout(options ...string) ([]byte, error) {
	rel, err := kernelRelease()
	if err != nil {
		return nil, err
	}
	var text []byte
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("sshtest: read /proc/config.gz: %w", err)
		}
		if text, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("sshtest: read /proc/config.gz: %w", err)
		}
	} else if text, err = os.ReadFile("/boot/config-" + rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sshtest: read the kernel config: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(text), "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(l, "# "), "=")
		name, _, _ = strings.Cut(name, " ")
		if !slices.Contains(options, name) {
			out = append(out, l)
		}
	}
	for _, o := range options {
		out = append(out, "# "+o+" is not set")
	}
	return []byte(strings.Join(out, "\n") + "\n"), nil
}

// kernelRelease is uname -r.
func kernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("sshtest: uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

// SSHDPid is the pid of the site's listening sshd, 0 when it is not running.
func (site *Site) SSHDPid() int {
	if site.sshd == nil {
		return 0
	}
	select {
	case <-site.exited:
		return 0
	default:
		return site.sshd.Process.Pid
	}
}

// SignalSSHD sends sig to the site's listening sshd and all its
// descendants (the per-connection sshd processes and the commands they
// run). With SIGSTOP the host falls silent without closing connections.
func (site *Site) SignalSSHD(sig syscall.Signal) error {
	pid := site.SSHDPid()
	if pid == 0 {
		return fmt.Errorf("sshd of %s is not running", site.Namespace)
	}
	var errs []error
	for _, p := range tree(pid) {
		if err := syscall.Kill(p, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KillSSHD kills the site's sshd and all its descendants with SIGKILL
// and waits until they are gone: to the client, the host went down.
func (site *Site) KillSSHD() error {
	pid := site.SSHDPid()
	if pid == 0 {
		return nil
	}
	// Stop the tree first so that no process forks or is reparented
	// while it is collected, then kill it.
	var procs []int
	for {
		_ = site.SignalSSHD(syscall.SIGSTOP)
		now := tree(pid)
		if slices.Equal(now, procs) {
			break
		}
		procs = now
	}
	for _, p := range procs {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	<-site.exited
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range procs {
		for alive(p) {
			if time.Now().After(deadline) {
				return fmt.Errorf("sshd process %d of %s still alive 5s after SIGKILL", p, site.Namespace)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// RestartSSHD kills the site's sshd (if it runs) and starts it again with
// the same configuration and host key.
func (site *Site) RestartSSHD() error {
	if err := site.KillSSHD(); err != nil {
		return err
	}
	return site.startSSHD()
}

// tree returns pid and its descendants, sorted.
func tree(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppid(p); ok {
			parent[p] = pp
		}
	}
	in := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if !in[p] && in[pp] {
				in[p], changed = true, true
			}
		}
	}
	var out []int
	for p := range in {
		if _, ok := parent[p]; ok || p == pid {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ppid reads the parent of pid from /proc/PID/stat.
func ppid(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	return end >= 0 && end+2 < len(s) && s[end+2] != 'Z' && s[end+2] != 'X'
}

// DialIn returns a dial function whose sockets are created inside the
// named network namespace (the calling goroutine's thread enters it for
// the dial only).
func DialIn(namespace string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target, err := netns.GetFromName(namespace)
		if err != nil {
			return nil, fmt.Errorf("open namespace %s: %w", namespace, err)
		}
		defer target.Close()
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("enter namespace %s: %w", namespace, err)
		}
		conn, dialErr := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err := netns.Set(orig); err != nil {
			// The thread stays locked, so it dies with the goroutine
			// rather than serving others in the wrong namespace.
			if conn != nil {
				conn.Close()
			}
			return nil, fmt.Errorf("return from namespace %s: %w", namespace, err)
		}
		runtime.UnlockOSThread()
		return conn, dialErr
	}
}

// writeKey writes a fresh ed25519 private key (OpenSSH format, 0600) and
// its .pub, and returns the public key.
func writeKey(path, comment string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " " + comment + "\n"
	return sp, os.WriteFile(path+".pub", []byte(line), 0o644)
}

// lockID creates and holds the lock localns.Clean checks, so that a clean
// run meanwhile leaves this test's namespaces and directory alone.
func lockID(id string) (*os.File, error) {
	return testbed.TakeLock(id, unix.LOCK_EX)
}

// cleanup kills every sshd and what runs in the namespaces, deletes the
// namespaces and files, and fails the test if any is left.
func (s *Sites) cleanup() {
	t := s.t
	for _, site := range s.Site {
		if err := site.KillSSHD(); err != nil {
			t.Errorf("sshtest: %v", err)
		}
	}
	for _, name := range s.Namespaces {
		if ns, err := netns.GetFromName(name); err == nil {
			if err := localns.KillInNamespace(ns); err != nil {
				t.Errorf("sshtest: kill processes in %s: %v", name, err)
			}
			ns.Close()
		}
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			if err := ip("netns", "del", name); err != nil {
				t.Errorf("sshtest: %v", err)
			}
		}
	}
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			t.Errorf("sshtest: remove %s: %v", s.Dir, err)
		}
	}
	for i, f := range s.locks {
		_ = os.Remove(filepath.Join(testbed.LockDir, s.ids[i]+".lock"))
		f.Close()
	}
	// Empty directories go too; one another test still uses stays.
	_ = os.Remove(testbed.LockDir)
	_ = os.Remove(testbed.DefaultRoot)
	// What must be gone.
	for _, name := range s.Namespaces {
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			t.Errorf("sshtest: namespace %s left behind", name)
		}
	}
	for _, site := range s.Site {
		if site.config == "" {
			continue
		}
		if pids := processesWith(site.config); len(pids) > 0 {
			t.Errorf("sshtest: sshd of %s left running: pids %v", site.Namespace, pids)
		}
	}
	if s.Dir != "" {
		if _, err := os.Stat(s.Dir); err == nil {
			t.Errorf("sshtest: %s left behind", s.Dir)
		}
	}
}

// processesWith returns the processes whose command line holds arg.
func processesWith(arg string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || !alive(p) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		// sshd rewrites its command line into a title ("sshd: ARGS
		// [listener] ..."), so look for arg anywhere in it.
		if err == nil && strings.Contains(string(cmdline), arg) {
			pids = append(pids, p)
		}
	}
	return pids
}

// ip runs ip(8) with args.
func ip(args ...string) error {
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
