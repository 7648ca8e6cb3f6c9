package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testenv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CNIs of the cluster (WithCNI).
const (
	// CNIBridge is the default: the CNI bridge plugin with host-local
	// addresses from each node's fixed pod CIDR and a static route on
	// each node to the other's (host-gw by hand; no overlay).
	CNIBridge = "bridge"
	// CNIFlannel is Flannel: flanneld on each node with the kube subnet
	// manager, the controller manager allocating the nodes' pod CIDRs.
	CNIFlannel = "flannel"
)

// FlannelBackends are the backends WithCNI takes for Flannel. vxlan and
// host-gw run on this machine's kernel; wireguard needs the kernel's
// WireGuard module (flanneld configures a kernel wireguard device), which
// this host's kernel lacks (the kernel lab's has it, but the test cluster
// runs on the host).
var FlannelBackends = []string{"vxlan", "host-gw", "wireguard"}

// Flanneld is the Flannel daemon scripts/install.sh builds from the
// wrapper module tools/flannel.
const Flanneld = "/usr/local/bin/flanneld"

// FlannelVersion is the flannel module version tools/flannel pins.
const FlannelVersion = "v0.28.10"

// FlannelNetwork is the cluster's pod network under Flannel: the
// controller manager gives each node a /24 of it.
var FlannelNetwork = netip.MustParsePrefix("198.19.208.0/20")

// WithCNI chooses the cluster's pod network: CNIBridge (the default) or
// CNIFlannel with one of FlannelBackends.
func WithCNI(cni, backend string) Option {
	return func(o *options) { o.cni, o.backend = cni, backend }
}

// checkCNI refuses a CNI choice the harness does not know, before
// anything is created.
func checkCNI(cni, backend string) error {
	switch cni {
	case "", CNIBridge:
		if backend != "" {
			return fmt.Errorf("kubetest: CNI %s takes no backend (got %q): only %s has backends", CNIBridge, backend, CNIFlannel)
		}
	case CNIFlannel:
		if !slices.Contains(FlannelBackends, backend) {
			return fmt.Errorf("kubetest: Flannel backend %q: want one of %s", backend, strings.Join(FlannelBackends, ", "))
		}
	default:
		return fmt.Errorf("kubetest: CNI %q: want %s or %s", cni, CNIBridge, CNIFlannel)
	}
	return nil
}

// needFlannel skips t (fails it in strict mode) without flanneld, and
// skips the wireguard backend on a kernel without WireGuard.
func needFlannel(t testing.TB, backend string) {
	t.Helper()
	if _, err := os.Stat(Flanneld); err != nil {
		testenv.SkipMissing(t, "kubetest: needs %s (scripts/install.sh test builds it from tools/flannel): %v", Flanneld, err)
	}
	if backend == "wireguard" {
		if _, err := os.Stat("/sys/module/wireguard"); err != nil {
			if out, err := exec.Command("modprobe", "-n", "wireguard").CombinedOutput(); err != nil {
				t.Skipf("kubetest: Flannel's wireguard backend needs the kernel's WireGuard module, which this kernel lacks (modprobe -n wireguard: %v: %s)", err, bytes.TrimSpace(out))
			}
		}
	}
}

// flannelNetConf is Flannel's network configuration (net-conf.json) for
// backend.
func flannelNetConf(backend string) string {
	return fmt.Sprintf(`{
  "Network": %q,
  "Backend": {"Type": %q}
}
`, FlannelNetwork, backend)
}

// startFlannel waits until the controller manager gave each node its pod
// CIDR, starts flanneld on each node (in the node's network and mount
// namespaces, as a DaemonSet's hostNetwork pod would run it, with the
// kube subnet manager), waits for its subnet file and writes the node's
// CNI configuration from it.
func (c *Cluster) startFlannel(ctx context.Context) error {
	cs := c.Client()
	for i, n := range c.nodes {
		var last string
		for {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err == nil && node.Spec.PodCIDR != "" {
				p, err := netip.ParsePrefix(node.Spec.PodCIDR)
				if err != nil {
					return fmt.Errorf("node %s: pod CIDR %q: %w", n.Name, node.Spec.PodCIDR, err)
				}
				n.PodCIDR, c.Nodes[i].PodCIDR = p, p
				break
			}
			if err != nil {
				last = err.Error()
			} else {
				last = "no spec.podCIDR yet"
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s has no pod CIDR from the controller manager: %s", n.Name, last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	for _, n := range c.nodes {
		p, err := c.run(n.Name+"-flanneld", "nsenter", "-t", strconv.Itoa(n.containerd.cmd.Process.Pid), "-m", "-n", "--",
			"env", "NODE_NAME="+n.Name, Flanneld,
			"--kube-subnet-mgr", "--kubeconfig-file", c.Kubeconfig,
			"--iface", n.Dev, "--ip-masq", "-v", "1")
		if err != nil {
			return err
		}
		n.flanneld = p
	}
	for _, n := range c.nodes {
		env, err := c.waitSubnetFile(ctx, n)
		if err != nil {
			return err
		}
		if err := c.writeFlannelCNI(ctx, n, env); err != nil {
			return err
		}
	}
	// The kernel gives Flannel's device its IPv6 link-local address (and
	// that address its local route) once duplicate address detection is
	// done, a second or two later: a node's state is settled only then.
	for _, n := range c.nodes {
		for {
			out, err := exec.CommandContext(ctx, "ip", "-n", n.Netns, "-6", "addr", "show", "tentative").Output()
			if err == nil && len(bytes.TrimSpace(out)) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: addresses still tentative: %s", n.Name, out)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// FlannelSubnetFile is where flanneld writes the node's lease, as on a
// real node.
const FlannelSubnetFile = "/run/flannel/subnet.env"

// waitSubnetFile waits for flanneld's subnet file on n and returns its
// variables.
func (c *Cluster) waitSubnetFile(ctx context.Context, n *node) (map[string]string, error) {
	for {
		out, err := c.OnNode(ctx, n.Name, "cat", FlannelSubnetFile)
		if err == nil {
			env := map[string]string{}
			for _, l := range strings.Split(string(out), "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
					env[k] = v
				}
			}
			if env["FLANNEL_SUBNET"] != "" && env["FLANNEL_MTU"] != "" {
				return env, nil
			}
		}
		if !n.flanneld.running() {
			return nil, fmt.Errorf("flanneld of %s exited: %s", n.Name, n.flanneld.tail())
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("flanneld of %s wrote no %s: %s", n.Name, FlannelSubnetFile, n.flanneld.tail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeFlannelCNI writes n's CNI configuration from flanneld's subnet
// file. Flannel's own CNI plugin (github.com/flannel-io/cni-plugin) is
// not served by the Go module proxy, so the configuration is what that
// plugin delegates for each pod: the bridge plugin (cni0, the pods'
// gateway, Flannel's MTU, no masquerade of its own since flanneld's
// --ip-masq does it) with host-local addresses from FLANNEL_SUBNET and
// a route to FLANNEL_NETWORK, then portmap, as flannel's conflist does.
func (c *Cluster) writeFlannelCNI(ctx context.Context, n *node, env map[string]string) error {
	mtu, err := strconv.Atoi(env["FLANNEL_MTU"])
	if err != nil {
		return fmt.Errorf("%s of %s: FLANNEL_MTU %q: %w", FlannelSubnetFile, n.Name, env["FLANNEL_MTU"], err)
	}
	// FLANNEL_SUBNET is the node's gateway address in its lease
	// (198.19.209.1/24); host-local wants the network.
	subnet, err := netip.ParsePrefix(env["FLANNEL_SUBNET"])
	if err != nil {
		return fmt.Errorf("%s of %s: FLANNEL_SUBNET %q: %w", FlannelSubnetFile, n.Name, env["FLANNEL_SUBNET"], err)
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "cbr0",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "isDefaultGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "mtu": %d,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q}]],
      "routes": [{"dst": %q}],
      "dataDir": %q
    }
  }, {
    "type": "portmap",
    "capabilities": {"portMappings": true}
  }]
}
`, mtu, subnet.Masked().String(), env["FLANNEL_NETWORK"], filepath.Join(n.dir, "cni-ipam"))
	// Into the node's /etc (an overlay in its mount namespace), where
	// containerd watches for it.
	cmd := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(n.containerd.cmd.Process.Pid), "-m", "--",
		"sh", "-c", `cat > "$1.tmp" && mv "$1.tmp" "$1"`, "sh", filepath.Join(CNIConfDir, "10-flannel.conflist"))
	cmd.Stdin = strings.NewReader(conflist)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("write the CNI configuration of %s: %w: %s", n.Name, err, out)
	}
	return nil
}

// OnNode runs argv on node (its network and mount namespaces: its /run,
// /etc and /var/lib) and returns its standard output.
func (c *Cluster) OnNode(ctx context.Context, node string, argv ...string) ([]byte, error) {
	for _, n := range c.nodes {
		if n.Name != node {
			continue
		}
		if n.containerd == nil {
			return nil, fmt.Errorf("kubetest: %s not started", node)
		}
		cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(n.containerd.cmd.Process.Pid), "-m", "-n", "--"}, argv...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("%s on %s: %w: %s", strings.Join(argv, " "), node, err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	return nil, fmt.Errorf("kubetest: no node %q", node)
}
