// Package kubetest gives tests a real two-node Kubernetes cluster on this
// machine, assembled from served parts as internal/remotehost/sshtest
// assembles real sshd hosts: kube-apiserver, kube-controller-manager and
// two kubelets built from the k8s.io/kubernetes module at Version (the
// wrapper module tools/k8s, see Binaries), Debian's etcd, containerd, runc
// and CNI plugins, and two images built here (a pause image and a busybox
// image) imported into each node's containerd, so no registry is used.
//
// Layout (docs/kubernetes.md, "Layout that worked"): a control network
// namespace holds a bridge (198.19.200.1/24), etcd on its loopback,
// kube-apiserver on the bridge address and the controller manager. Each
// node is a network namespace joined to the bridge by a veth (eth0,
// 198.19.200.11/24 and .12), with ip_forward on and a static route to the
// other node's pod CIDR (198.19.201.0/24 and 198.19.202.0/24; host-gw),
// and a private mount namespace shared by its containerd and kubelet: a
// fresh sysfs (so /sys/class/net is the node's) with the host's cgroup
// tree bound back, private tmpfs over /run and /var/log, and /var/lib
// an overlay with a private upper layer, so that what containerd, its
// shims, the CNI plugins and the kubelet put there (pod network
// namespaces, shim sockets, CNI caches, the device plugin socket, log
// links)
// never reaches the machine and goes when the node's processes go. Each
// kubelet's cgroup root is a tree of its own in every cgroup hierarchy.
//
// The apiserver is reachable only from inside the control namespace: in
// process through Cluster.Dial, or through ProxyURL, a CONNECT proxy on
// the machine's loopback that RestConfig uses (client-go's WebSocket
// executor ignores rest.Config.Dial but honours rest.Config.Proxy); a
// subprocess runs inside Control (ip netns exec) with Kubeconfig.
//
// Everything an instance creates carries its prefix "tunbench-k<id>-"
// (namespaces, cgroup trees, the directory /tmp/tunbench-k<id>), so
// several clusters can run at once, and Start removes what a killed test
// left (an instance whose directory lock nobody holds). The cluster's
// t.Cleanup kills every process, deletes the namespaces, cgroup trees and
// the directory, and fails the test if any is left.
package kubetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Prefix starts the name of everything a cluster creates:
// Prefix+<id>+"-"...
const Prefix = "tunbench-k"

// Addresses of the cluster (inside its own namespaces only).
var (
	controlAddr = netip.MustParsePrefix("198.19.200.1/24")
	serviceCIDR = "198.19.255.0/24"
	nodeAddrs   = []netip.Prefix{netip.MustParsePrefix("198.19.200.11/24"), netip.MustParsePrefix("198.19.200.12/24")}
	podCIDRs    = []netip.Prefix{netip.MustParsePrefix("198.19.201.0/24"), netip.MustParsePrefix("198.19.202.0/24")}
)

// Image names the cluster's nodes hold (imported, never pulled: pods must
// use imagePullPolicy Never or IfNotPresent).
const (
	BusyboxImage = "tunbench.local/busybox:kubetest"
	PauseImage   = "tunbench.local/pause:kubetest"
	// ToolsImage holds busybox and ToolPrograms with their libraries
	// (WithToolsImage).
	ToolsImage = "tunbench.local/tools:kubetest"
)

// Programs from the machine the cluster runs.
const (
	Etcd       = "/usr/bin/etcd"
	Containerd = "/usr/bin/containerd"
	Ctr        = "/usr/bin/ctr"
	Runc       = "/usr/sbin/runc"
	CNIBinDir  = "/usr/lib/cni"
	// CNIConfDir is where each node has its CNI configuration (an
	// overlay of the node's own over the host's /etc).
	CNIConfDir = "/etc/cni/net.d"
)

// Cluster is a running two-node cluster.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig file (0600, O=system:masters).
	// Its server is reachable only from inside Control.
	Kubeconfig string
	// Server is the apiserver's URL, https://198.19.200.1:6443.
	Server string
	// Control is the control network namespace, where the apiserver
	// listens: dial it with Dial, or run a client with ip netns exec.
	Control string
	// Nodes are the two nodes, "node1" and "node2".
	Nodes []Node
	// Image is the busybox image present on both nodes.
	Image string
	// PauseImage is the sandbox image present on both nodes.
	PauseImage string
	// ToolsImage, with WithToolsImage, is an image present on both nodes
	// with busybox and this machine's ToolPrograms and their libraries
	// (for kubernetes.tools: image); empty otherwise.
	ToolsImage string
	// Dir is the instance's private directory.
	Dir string
	// CNI is the cluster's pod network, CNIBridge or CNIFlannel;
	// FlannelBackend Flannel's backend (WithCNI).
	CNI, FlannelBackend string

	t      testing.TB
	id     string
	prefix string // Prefix + id
	lock   *os.File
	ca     *ca
	admin  struct{ cert, key []byte }
	procs  []*proc
	nodes  []*node
	bins   string
	proxy  *proxy
}

// Node is one node of the cluster.
type Node struct {
	// Name is the node's name, "node1" or "node2".
	Name string
	// IP is the node's underlay address with its prefix length, on Dev.
	IP netip.Prefix
	// Dev is the node's underlay device, "eth0".
	Dev string
	// PodCIDR is the node's pod network.
	PodCIDR netip.Prefix
	// Netns is the node's network namespace.
	Netns string
}

// node is the running state of one node.
type node struct {
	Node
	dir        string
	cgroupRoot string // e.g. tunbench-k1a2b3c-node1
	socket     string // containerd's
	containerd *proc
	kubelet    *proc
	mntns      string // the mount namespace of containerd and the kubelet, "mnt:[N]"
	// mntHold holds mntns open until the cluster is destroyed: a freed
	// namespace's number is soon another's (an "ip netns exec", an
	// "unshare -m" of a test beside), and destroy, killing by that
	// number after containerd had stopped, killed another test's charon
	// (a clean-clone run, twice).
	mntHold  *os.File
	flanneld *proc // with CNIFlannel
}

// proc is a process the cluster started.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// Option changes how Start builds the cluster.
type Option func(*options)

type options struct {
	timeout      time.Duration
	tools        bool
	cni, backend string
}

// WithToolsImage builds a third image, Cluster.ToolsImage, and imports it
// on both nodes: busybox and this machine's iperf3, wireguard-go, ip and
// ping (ToolPrograms) with every shared library they load, for runs with
// kubernetes.tools: image. The image is about 19 MB; it took 0.35 s to
// build on an idle machine (1.3 s loaded) and 2 s to import into each
// node (both at once), so only the clusters that ask for it have it.
func WithToolsImage() Option { return func(o *options) { o.tools = true } }

// Timeout bounds how long Start waits for the cluster to be ready
// (default 3 minutes, not counting a build of the binaries).
func Timeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Need skips t (or fails it in strict mode) unless the machine has what a
// cluster needs: root's capabilities and the programs of Debian's
// containerd, runc, etcd-server, containernetworking-plugins and
// busybox-static.
func Need(t testing.TB) {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	for _, p := range []struct{ path, pkg string }{
		{Etcd, "etcd-server"}, {Containerd, "containerd"}, {Ctr, "containerd"},
		{"/usr/bin/containerd-shim-runc-v2", "containerd"}, {Runc, "runc"},
		{filepath.Join(CNIBinDir, "bridge"), "containernetworking-plugins"},
		{filepath.Join(CNIBinDir, "host-local"), "containernetworking-plugins"},
		{filepath.Join(CNIBinDir, "loopback"), "containernetworking-plugins"},
		{Busybox, "busybox-static"},
	} {
		if _, err := os.Stat(p.path); err != nil {
			testenv.SkipMissing(t, "kubetest: needs %s (Debian package %s; scripts/install.sh test installs it): %v", p.path, p.pkg, err)
		}
	}
	for _, p := range []string{"ip", "unshare", "nsenter", "mount", "nice"} {
		testenv.NeedProgram(t, p, "Debian packages iproute2, util-linux, mount, coreutils")
	}
	for _, h := range []string{"memory", "cpuset", "pids"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", h, "cgroup.procs")); err != nil {
			t.Skipf("kubetest: needs the cgroup v1 hierarchy %s (this harness assembles nodes for a cgroup v1 machine): %v", h, err)
		}
	}
}

// Start builds the binaries when needed (Binaries), brings a cluster up
// and waits until the apiserver is ready, both nodes are Ready and the
// default namespace has its service account. t.Cleanup tears it down.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	Need(t)
	o := options{timeout: 3 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkCNI(o.cni, o.backend); err != nil {
		t.Fatal(err)
	}
	if o.cni == "" {
		o.cni = CNIBridge
	}
	if o.cni == CNIFlannel {
		needFlannel(t, o.backend)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bins, err := Binaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := CleanLeftovers(); err != nil {
		t.Logf("kubetest: leftovers of earlier clusters: %v", err)
	}
	c := &Cluster{t: t, bins: bins, Image: BusyboxImage, PauseImage: PauseImage, CNI: o.cni, FlannelBackend: o.backend}
	if o.tools {
		for _, p := range ToolPrograms {
			testenv.NeedProgram(t, p, "scripts/install.sh test installs it")
		}
		testenv.NeedProgram(t, "ldd", "Debian package libc-bin")
		c.ToolsImage = ToolsImage
	}
	t.Cleanup(c.cleanup)
	ctx, cancel = context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := c.start(ctx); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return c
}

func (c *Cluster) start(ctx context.Context) error {
	c.id = testbed.NewID()
	c.prefix = Prefix + c.id
	c.Dir = filepath.Join(os.TempDir(), c.prefix)
	if err := os.Mkdir(c.Dir, 0o700); err != nil {
		return fmt.Errorf("create instance directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(c.Dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	c.lock = lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("lock %s: %w", c.Dir, err)
	}
	c.Control = c.prefix + "-ctl"
	c.Server = "https://" + controlAddr.Addr().String() + ":6443"
	for i := range 2 {
		name := fmt.Sprintf("node%d", i+1)
		n := &node{
			Node: Node{Name: name, IP: nodeAddrs[i], Dev: "eth0", PodCIDR: podCIDRs[i],
				Netns: fmt.Sprintf("%s-n%d", c.prefix, i+1)},
			dir:        filepath.Join(c.Dir, name),
			cgroupRoot: c.prefix + "-" + name,
		}
		n.socket = filepath.Join(n.dir, "containerd.sock")
		c.nodes = append(c.nodes, n)
		c.Nodes = append(c.Nodes, n.Node)
	}

	// Work that does not depend on the network runs beside it.
	var wg sync.WaitGroup
	var imgErr error
	wg.Add(1)
	go func() { defer wg.Done(); imgErr = c.images(ctx) }()
	err = c.network()
	if err == nil {
		err = c.pki()
	}
	wg.Wait()
	if err != nil {
		return err
	}
	if imgErr != nil {
		return imgErr
	}

	if c.proxy, err = startProxy(c.Dial); err != nil {
		return err
	}
	// Control plane.
	if err := c.startControlPlane(); err != nil {
		return err
	}
	// Nodes: containerd first (with the images), while the apiserver
	// comes up.
	errs := make([]error, len(c.nodes))
	for i, n := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.startRuntime(ctx, n) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := c.waitReadyz(ctx); err != nil {
		return err
	}
	if err := c.startControllerManager(); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := c.startKubelet(n); err != nil {
			return err
		}
	}
	if c.CNI == CNIFlannel {
		if err := c.startFlannel(ctx); err != nil {
			return err
		}
	}
	return c.waitNodes(ctx)
}

// network creates the namespaces, the bridge, the veths, addresses and
// routes.
func (c *Cluster) network() error {
	ctl := c.Control
	if err := ip("netns", "add", ctl); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"-n", ctl, "link", "set", "lo", "up"},
		{"-n", ctl, "link", "add", "kbr0", "type", "bridge"},
		{"-n", ctl, "addr", "add", controlAddr.String(), "dev", "kbr0"},
		{"-n", ctl, "link", "set", "kbr0", "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	for i, n := range c.nodes {
		if err := ip("netns", "add", n.Netns); err != nil {
			return err
		}
		port := fmt.Sprintf("kn%d", i+1)
		other := c.nodes[1-i]
		for _, args := range [][]string{
			{"-n", n.Netns, "link", "set", "lo", "up"},
			{"link", "add", port, "netns", ctl, "type", "veth", "peer", "name", n.Dev, "netns", n.Netns},
			{"-n", ctl, "link", "set", port, "master", "kbr0", "up"},
			{"-n", n.Netns, "addr", "add", n.IP.String(), "dev", n.Dev},
			{"-n", n.Netns, "link", "set", n.Dev, "up"},
			{"-n", n.Netns, "route", "add", other.PodCIDR.String(), "via", other.IP.Addr().String(), "dev", n.Dev},
			{"netns", "exec", n.Netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		} {
			if c.CNI == CNIFlannel && args[2] == "route" {
				continue // Flannel routes the pod CIDRs
			}
			if err := ip(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// pki writes the CA, the certificates, the service account keys and the
// kubeconfigs.
func (c *Cluster) pki() error {
	dir := filepath.Join(c.Dir, "pki")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	var err error
	if c.ca, err = newCA(dir); err != nil {
		return fmt.Errorf("create the CA: %w", err)
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.IP(controlAddr.Addr().AsSlice()), net.ParseIP("198.19.255.1")}
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	if _, _, err := c.ca.issue(filepath.Join(dir, "apiserver"), "kube-apiserver", nil, ips, dns); err != nil {
		return err
	}
	if _, _, err := c.ca.issue(filepath.Join(dir, "apiserver-kubelet-client"), "apiserver-kubelet-client", []string{"system:masters"}, nil, nil); err != nil {
		return err
	}
	if err := writeSAKeys(dir); err != nil {
		return err
	}
	if c.admin.cert, c.admin.key, err = c.ca.issue(filepath.Join(dir, "admin"), "admin", []string{"system:masters"}, nil, nil); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, c.ca.certPEM, c.admin.cert, c.admin.key, "admin"); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return err
		}
		cert, key, err := c.ca.issue(filepath.Join(n.dir, "node-client"), "system:node:"+n.Name, []string{"system:nodes"}, nil, nil)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(filepath.Join(n.dir, "kubelet.kubeconfig"), c.Server, c.ca.certPEM, cert, key, "system:node:"+n.Name); err != nil {
			return err
		}
		if _, _, err := c.ca.issue(filepath.Join(n.dir, "kubelet-serving"), n.Name, nil, []net.IP{net.IP(n.IP.Addr().AsSlice())}, []string{n.Name}); err != nil {
			return err
		}
	}
	return nil
}

// UserKubeconfig writes a kubeconfig for a client certificate with CN user
// and O groups (a non-admin user for RBAC tests) and returns its path.
func (c *Cluster) UserKubeconfig(user string, groups ...string) string {
	c.t.Helper()
	dir := filepath.Join(c.Dir, "users")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	base := filepath.Join(dir, fmt.Sprintf("%x", []byte(user)))
	cert, key, err := c.ca.issue(base, user, groups, nil, nil)
	if err != nil {
		c.t.Fatalf("kubetest: user certificate for %s: %v", user, err)
	}
	path := base + ".kubeconfig"
	if err := writeKubeconfig(path, c.Server, c.ca.certPEM, cert, key, user); err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	return path
}

// Dial connects from inside the Control namespace: the dial function of
// an in-process client-go rest.Config.
func (c *Cluster) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return sshtest.DialIn(c.Control)(ctx, network, addr)
}

// ProxyURL is an HTTP CONNECT proxy on the machine's loopback
// (http://127.0.0.1:PORT) that reaches the cluster's addresses from inside
// Control. client-go's WebSocket executor ignores rest.Config.Dial, so an
// in-process client that execs needs rest.Config.Proxy =
// http.ProxyURL(c.ProxyURL()), as RestConfig sets.
func (c *Cluster) ProxyURL() *url.URL { return c.proxy.url }

// RestConfig is an admin client-go configuration that reaches the
// apiserver through the cluster's proxy (ProxyURL): every client-go
// transport honours it, the WebSocket executor included.
func (c *Cluster) RestConfig() *rest.Config {
	return &rest.Config{
		Host: c.Server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: c.ca.certPEM, CertData: c.admin.cert, KeyData: c.admin.key,
		},
		Proxy:   http.ProxyURL(c.proxy.url),
		QPS:     100,
		Burst:   200,
		Timeout: 30 * time.Second,
	}
}

// Client is an admin clientset (RestConfig).
func (c *Cluster) Client() *kubernetes.Clientset {
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	return cs
}

// startControlPlane starts etcd, kube-apiserver and
// kube-controller-manager in the control namespace.
func (c *Cluster) startControlPlane() error {
	pki := filepath.Join(c.Dir, "pki")
	p := func(name string) string { return filepath.Join(pki, name) }
	if _, err := c.run("etcd", "ip", "netns", "exec", c.Control, Etcd,
		"--name", "kubetest", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "kubetest=http://127.0.0.1:2380", "--log-level", "warn"); err != nil {
		return err
	}
	addr := controlAddr.Addr().String()
	if _, err := c.run("kube-apiserver", "ip", "netns", "exec", c.Control, filepath.Join(c.bins, "kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:2379",
		"--bind-address", addr, "--advertise-address", addr, "--secure-port", "6443",
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"),
		"--client-ca-file", p("ca.crt"),
		"--kubelet-client-certificate", p("apiserver-kubelet-client.crt"), "--kubelet-client-key", p("apiserver-kubelet-client.key"),
		"--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", serviceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--allow-privileged",
		"--kubelet-preferred-address-types", "InternalIP",
		"--cert-dir", filepath.Join(c.Dir, "apiserver"),
		"--profiling=false", "-v", "1"); err != nil {
		return err
	}
	return nil
}

// startControllerManager starts kube-controller-manager, once the
// apiserver answers (it gives up on an apiserver that does not, which
// a loaded machine made happen).
func (c *Cluster) startControllerManager() error {
	pki := filepath.Join(c.Dir, "pki")
	p := func(name string) string { return filepath.Join(pki, name) }
	args := []string{"ip", "netns", "exec", c.Control, filepath.Join(c.bins, "kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig,
		"--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", "10257",
		"--cert-dir", filepath.Join(c.Dir, "kcm"),
		"--service-account-private-key-file", p("sa.key"), "--root-ca-file", p("ca.crt"),
		"--service-cluster-ip-range", serviceCIDR,
		"--leader-elect=false", "--profiling=false"}
	if c.CNI == CNIFlannel {
		// The kube subnet manager reads each node's spec.podCIDR.
		args = append(args, "--controllers", "*,-csrsigning", "--allocate-node-cidrs",
			"--cluster-cidr", FlannelNetwork.String(), "--node-cidr-mask-size", "24")
	} else {
		args = append(args, "--controllers", "*,-csrsigning,-nodeipam")
	}
	_, err := c.run("kube-controller-manager", append(args, "-v", "1")...)
	return err
}

// run starts a process of the cluster with its output in Dir/<name>.log.
func (c *Cluster) run(name string, argv ...string) (*proc, error) {
	logPath := filepath.Join(c.Dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	tmp := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "TMPDIR=" + tmp, "HOME=" + c.Dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	c.procs = append(c.procs, p)
	return p, nil
}

// stop kills p and waits until it has exited.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail is the end of p's log, for errors.
func (p *proc) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

// nodeScript runs in the node's new mount namespace (unshare -m
// --propagation private): it keeps the cgroup tree aside, enters the
// node's network namespace, mounts a sysfs of that namespace, binds the
// cgroup tree back, covers /run and /var/log with private tmpfs and
// /var/lib with an overlay whose upper layer is the node's (the kubelet's
// device plugin socket and the CNI caches have fixed paths there), /etc
// likewise (the node's CNI configuration is in /etc/cni/net.d, where a
// real node has it and tunbench's pod-network looks), and execs the
// program.
const nodeScript = `set -e
dir=$1 ns=$2
shift 2
mount --rbind /sys/fs/cgroup "$dir/cgroup"
exec nsenter --net=/run/netns/"$ns" sh -c '
set -e
dir=$1
shift
mount -t sysfs sysfs /sys
mount --rbind "$dir/cgroup" /sys/fs/cgroup
mount -t tmpfs -o mode=755 kubetest-run /run
mount -t tmpfs -o mode=755 kubetest-log /var/log
mount -t overlay -o lowerdir=/var/lib,upperdir="$dir/varlib/upper",workdir="$dir/varlib/work" kubetest-varlib /var/lib
mount -t overlay -o lowerdir=/etc,upperdir="$dir/etc/upper/etc",workdir="$dir/etc/work" kubetest-etc /etc
exec "$@"' sh "$dir" "$@"
`

// startRuntime writes the node's containerd and CNI configuration,
// creates its cgroup root, starts containerd in the node's namespaces and
// imports the images.
func (c *Cluster) startRuntime(ctx context.Context, n *node) error {
	for _, d := range []string{"cgroup", "varlib/upper", "varlib/work", "etc/upper/etc/cni/net.d", "etc/work", "cni-ipam", "containerd/root", "containerd/state", "opt", "kubelet", "pod-logs", "volume-plugins", "tmp"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			return err
		}
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": %q
    }
  }]
}
`, c.prefix+"-"+n.Name, n.PodCIDR.String(), filepath.Join(n.dir, "cni-ipam"))
	if c.CNI == CNIFlannel {
		// Flannel's network configuration where its DaemonSet mounts
		// it; the CNI configuration follows flanneld's lease
		// (startFlannel).
		dir := filepath.Join(n.dir, "etc/upper/etc/kube-flannel")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "net-conf.json"), []byte(flannelNetConf(c.FlannelBackend)), 0o644); err != nil {
			return err
		}
	} else if err := os.WriteFile(filepath.Join(n.dir, "etc/upper", CNIConfDir, "10-kubetest.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(n.dir, "containerd/root"), filepath.Join(n.dir, "containerd/state"), n.socket,
		filepath.Join(n.dir, "opt"), PauseImage, Runc, CNIBinDir, CNIConfDir)
	confPath := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(confPath, []byte(config), 0o644); err != nil {
		return err
	}
	if err := c.makeCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	p, err := c.run(n.Name+"-containerd", "unshare", "-m", "--propagation", "private",
		"sh", "-c", nodeScript, "sh", n.dir, n.Netns, Containerd, "--config", confPath)
	if err != nil {
		return err
	}
	n.containerd = p
	// Wait for containerd's socket to answer.
	for {
		if err := exec.CommandContext(ctx, Ctr, "-a", n.socket, "version").Run(); err == nil {
			break
		}
		if !p.running() {
			return fmt.Errorf("containerd of %s exited at start: %s", n.Name, p.tail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd of %s does not answer on %s: %s", n.Name, n.socket, p.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
	hold, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", p.cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("mount namespace of containerd of %s: %w", n.Name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(hold.Fd()), &st); err != nil {
		hold.Close()
		return fmt.Errorf("mount namespace of containerd of %s: %w", n.Name, err)
	}
	n.mntns, n.mntHold = fmt.Sprintf("mnt:[%d]", st.Ino), hold
	imgs := []string{"busybox.tar", "pause.tar"}
	if c.ToolsImage != "" {
		imgs = append(imgs, "tools.tar")
	}
	for _, img := range imgs {
		begin := time.Now()
		out, err := exec.CommandContext(ctx, Ctr, "-a", n.socket, "-n", "k8s.io", "images", "import", filepath.Join(c.Dir, "images", img)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("import %s into %s: %w: %s", img, n.Name, err, out)
		}
		if img == "tools.tar" {
			c.t.Logf("kubetest: tools image imported into %s in %v", n.Name, time.Since(begin).Round(time.Millisecond))
		}
	}
	return nil
}

// images writes the pause and busybox images.
func (c *Cluster) images(ctx context.Context) error {
	dir := filepath.Join(c.Dir, "images")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := busyboxImage(filepath.Join(dir, "busybox.tar"), BusyboxImage); err != nil {
		return fmt.Errorf("busybox image: %w", err)
	}
	if c.ToolsImage != "" {
		begin := time.Now()
		if err := toolsImage(filepath.Join(dir, "tools.tar"), c.ToolsImage); err != nil {
			return err
		}
		c.t.Logf("kubetest: tools image built in %v", time.Since(begin).Round(time.Millisecond))
	}
	pause, err := pauseBinary(ctx)
	if err != nil {
		return err
	}
	return pauseImage(filepath.Join(dir, "pause.tar"), PauseImage, pause)
}

// pauseBinary builds testdata/pause (static, CGO_ENABLED=0) into the
// binaries' cache directory when it is not there yet.
func pauseBinary(ctx context.Context) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "pause")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.CommandContext(ctx, goTool(), "build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, "./internal/kubehost/kubetest/testdata/pause")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the pause program: %w: %s", err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// startKubelet writes the node's kubelet configuration and starts it in
// the node's network and mount namespaces (those of its containerd).
func (c *Cluster) startKubelet(n *node) error {
	pki := filepath.Join(c.Dir, "pki")
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
tlsCertFile: %s
tlsPrivateKeyFile: %s
cgroupDriver: cgroupfs
cgroupRoot: /%s
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
protectKernelDefaults: false
podLogsDir: %s
volumePluginDir: %s
resolvConf: ""
serializeImagePulls: false
`, n.IP.Addr(), filepath.Join(pki, "ca.crt"), filepath.Join(n.dir, "kubelet-serving.crt"), filepath.Join(n.dir, "kubelet-serving.key"),
		n.cgroupRoot, n.socket, filepath.Join(n.dir, "pod-logs"), filepath.Join(n.dir, "volume-plugins"))
	confPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(confPath, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := c.run(n.Name+"-kubelet", "nsenter", "-t", strconv.Itoa(n.containerd.cmd.Process.Pid), "-m", "-n", "--",
		filepath.Join(c.bins, "kubelet"),
		"--config", confPath,
		"--kubeconfig", filepath.Join(n.dir, "kubelet.kubeconfig"),
		"--root-dir", filepath.Join(n.dir, "kubelet"),
		"--cert-dir", filepath.Join(n.dir, "kubelet", "pki"),
		"--hostname-override", n.Name,
		"--node-ip", n.IP.Addr().String(),
		"-v", "1")
	if err != nil {
		return err
	}
	n.kubelet = p
	return nil
}

// StopKubelet kills the kubelet of node (as a lost node would stop
// answering); its containerd and pods keep running.
func (c *Cluster) StopKubelet(node string) error {
	for _, n := range c.nodes {
		if n.Name == node {
			if n.kubelet == nil {
				return fmt.Errorf("kubetest: kubelet of %s not started", node)
			}
			n.kubelet.stop()
			if n.kubelet.running() {
				return fmt.Errorf("kubetest: kubelet of %s still running after SIGKILL", node)
			}
			return nil
		}
	}
	return fmt.Errorf("kubetest: no node %q", node)
}

// waitReadyz waits until the apiserver's /readyz answers ok.
func (c *Cluster) waitReadyz(ctx context.Context) error {
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.cert)
	cert, err := tls.X509KeyPair(c.admin.cert, c.admin.key)
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			DialContext:     c.Dial,
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		},
	}
	defer client.CloseIdleConnections()
	var last string
	for {
		resp, err := client.Get(c.Server + "/readyz")
		if err == nil {
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body.String())
		} else {
			last = err.Error()
		}
		for _, p := range c.procs {
			if !p.running() {
				return fmt.Errorf("%s exited: %s", p.name, p.tail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver not ready: %s", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNodes waits until both nodes are Ready and the default namespace's
// service account exists.
func (c *Cluster) waitNodes(ctx context.Context) error {
	cs := c.Client()
	var last string
	for {
		ready := 0
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, n := range nodes.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			last = fmt.Sprintf("%d of %d nodes Ready", ready, len(nodes.Items))
		} else {
			last = err.Error()
		}
		if ready == len(c.nodes) {
			if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
				return nil
			} else {
				last = "service account default/default: " + err.Error()
			}
		}
		for _, p := range c.procs {
			if !p.running() {
				return fmt.Errorf("%s exited: %s", p.name, p.tail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not ready: %s", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cgroupHierarchies lists the mounted cgroup hierarchies: every v1
// hierarchy under /sys/fs/cgroup and the unified one.
func cgroupHierarchies() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		d := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			out = append(out, d)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil { // a pure v2 machine
		out = append(out, "/sys/fs/cgroup")
	}
	return out
}

// makeCgroupRoot creates the kubelet's cgroup root in every v1 hierarchy
// (the kubelet insists on it), with cpuset's cpus and mems copied from the
// parent.
func (c *Cluster) makeCgroupRoot(name string) error {
	for _, h := range cgroupHierarchies() {
		if h == "/sys/fs/cgroup/unified" || h == "/sys/fs/cgroup" {
			continue
		}
		d := filepath.Join(h, name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				data, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), data, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %w", filepath.Join(d, f), err)
				}
			}
		}
	}
	return nil
}

// cleanup tears the cluster down and fails the test if anything is left.
func (c *Cluster) cleanup() {
	t := c.t
	if c.id == "" {
		return
	}
	start := time.Now()
	// The kubelets first, so that nothing restarts what goes next.
	for _, n := range c.nodes {
		n.kubelet.stop()
	}
	for _, p := range slices.Backward(c.procs) {
		p.stop()
	}
	c.proxy.close()
	var mnts []string
	for _, n := range c.nodes {
		if n.mntns != "" {
			mnts = append(mnts, n.mntns)
		}
	}
	if err := destroy(c.id, mnts); err != nil {
		t.Errorf("kubetest: %v", err)
	}
	for _, n := range c.nodes {
		if n.mntHold != nil {
			n.mntHold.Close()
		}
	}
	if c.lock != nil {
		c.lock.Close()
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Errorf("kubetest: remove %s: %v", c.Dir, err)
	}
	for _, left := range Leftovers(c.id) {
		t.Errorf("kubetest: left behind: %s", left)
	}
	t.Logf("kubetest: cluster %s torn down in %v", c.prefix, time.Since(start).Round(time.Millisecond))
}

// destroy kills every process of instance id (in its network namespaces,
// in its cgroup trees, in the mount namespaces mnts, or with its directory
// on the command line, such as containerd's shims), then deletes its
// network namespaces and cgroup trees. It leaves the directory.
func destroy(id string, mnts []string) error {
	prefix := Prefix + id
	dir := filepath.Join(os.TempDir(), prefix)
	var nets []string
	for _, s := range []string{"ctl", "n1", "n2"} {
		ns := filepath.Join("/run/netns", prefix+"-"+s)
		var st unix.Stat_t
		if unix.Stat(ns, &st) == nil {
			nets = append(nets, fmt.Sprintf("net:[%d]", st.Ino))
		}
	}
	// Mount namespaces of the nodes: those of processes in the nodes'
	// network namespaces (containerd, kubelet, shims), found before they
	// die.
	// The nodes' mount namespaces are private (unshare -m); the host's
	// never counts, though a process in the host's may stand in a node's
	// network namespace: /proc/PID/ns/net is that of the process's main
	// thread, which in a Go program (this test, Dial) may be a thread
	// locked into the namespace for a moment. Taking the host's mount
	// namespace for a node's SIGKILLed every process of the machine.
	host := map[string]bool{}
	for _, p := range []string{"/proc/1/ns/mnt", "/proc/self/ns/mnt"} {
		if m, err := os.Readlink(p); err == nil {
			host[m] = true
		}
	}
	mnts = slices.DeleteFunc(slices.Clone(mnts), func(m string) bool { return host[m] })
	for _, pid := range pids() {
		if ns, ok := testbed.NetNamespace(pid); ok && slices.Contains(nets, ns) {
			if m, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && !host[m] && !slices.Contains(mnts, m) {
				mnts = append(mnts, m)
			}
		}
	}
	var errs []error
	deadline := time.Now().Add(15 * time.Second)
	for {
		victims := processesOf(prefix, dir, nets, mnts)
		if len(victims) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("processes still alive 15s after SIGKILL: %v", victims))
			break
		}
		for _, pid := range victims {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range []string{"ctl", "n1", "n2"} {
		name := prefix + "-" + s
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			if err := ip("netns", "del", name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, cg := range cgroupDirs(prefix) {
		if err := removeCgroup(cg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// processesOf lists the live processes of an instance: in its network
// namespaces nets or mount namespaces mnts, in its cgroup trees, or with
// its directory on the command line.
func processesOf(prefix, dir string, nets, mnts []string) []int {
	set := map[int]bool{}
	self := os.Getpid()
	for _, pid := range pids() {
		if pid == self || !alive(pid) {
			continue
		}
		if ns, ok := testbed.NetNamespace(pid); ok && slices.Contains(nets, ns) {
			set[pid] = true
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && slices.Contains(mnts, link) {
			set[pid] = true
			continue
		}
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.Contains(cmdline, []byte(dir+"/")) {
			set[pid] = true
		}
	}
	for _, cg := range cgroupDirs(prefix) {
		_ = filepath.WalkDir(cg, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != self && alive(pid) {
					set[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(set))
	for pid := range set {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// cgroupDirs lists the instance's cgroup trees in every hierarchy.
func cgroupDirs(prefix string) []string {
	var out []string
	for _, h := range cgroupHierarchies() {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix+"-") {
				out = append(out, filepath.Join(h, e.Name()))
			}
		}
	}
	return out
}

// removeCgroup removes a cgroup tree, children first, retrying while the
// kernel still counts exiting processes.
func removeCgroup(root string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		var last error
		for _, d := range slices.Backward(dirs) {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				last = fmt.Errorf("remove cgroup %s: %w", d, err)
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var instanceName = regexp.MustCompile(`^` + Prefix + `([0-9a-f]{6})(-.*)?$`)

// Leftovers lists what instance id has left on the machine: network
// namespaces, cgroup trees, processes, its directory. With id "" it lists
// those of every instance.
func Leftovers(id string) []string {
	ids := map[string]bool{}
	if id != "" {
		ids[id] = true
	} else {
		for _, s := range instances() {
			ids[s] = true
		}
	}
	var out []string
	for id := range ids {
		prefix := Prefix + id
		dir := filepath.Join(os.TempDir(), prefix)
		var nets []string
		for _, s := range []string{"ctl", "n1", "n2"} {
			ns := filepath.Join("/run/netns", prefix+"-"+s)
			var st unix.Stat_t
			if unix.Stat(ns, &st) == nil {
				out = append(out, "network namespace "+prefix+"-"+s)
				nets = append(nets, fmt.Sprintf("net:[%d]", st.Ino))
			}
		}
		for _, cg := range cgroupDirs(prefix) {
			out = append(out, "cgroup "+cg)
		}
		for _, pid := range processesOf(prefix, dir, nets, nil) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			out = append(out, fmt.Sprintf("process %d (%s)", pid, strings.TrimSpace(string(comm))))
		}
		if _, err := os.Stat(dir); err == nil {
			out = append(out, "directory "+dir)
		}
	}
	slices.Sort(out)
	return out
}

// instances lists the ids of every instance with something on the
// machine: a namespace, a cgroup tree or a directory.
func instances() []string {
	set := map[string]bool{}
	add := func(name string) {
		if m := instanceName.FindStringSubmatch(name); m != nil {
			set[m[1]] = true
		}
	}
	for _, d := range []string{"/run/netns", os.TempDir()} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			add(e.Name())
		}
	}
	for _, h := range cgroupHierarchies() {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			add(e.Name())
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// CleanLeftovers removes what clusters of killed tests left: every
// instance whose directory lock no live process holds.
func CleanLeftovers() error {
	var errs []error
	for _, id := range instances() {
		dir := filepath.Join(os.TempDir(), Prefix+id)
		if f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0); err == nil {
			held := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
			f.Close()
			if held {
				continue // a live cluster
			}
		} else if _, err := os.Stat(dir); err == nil {
			// A directory without a lock yet: a cluster being created.
			continue
		}
		if err := destroy(id, nil); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pids lists every process.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
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

// ip runs ip(8) with args.
func ip(args ...string) error {
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
