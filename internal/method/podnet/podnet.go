// Package podnet is the method pod-network: a Kubernetes cluster's own
// pod network, measured between two ordinary pods on two nodes over
// whatever CNI the cluster runs, beside native between the same nodes'
// host network. It creates nothing: the kubernetes testbed places the
// cell's endpoints in ordinary pods (testbed.NetworkPod) and the load runs
// between the pods' addresses. The method reads the CNI the nodes run
// (its configuration's network name and plugins, each plugin's version)
// so every cell records what it measured; on a node that runs Flannel,
// also Flannel's backend, overlay device, MTU and encryption (Flannel),
// and the cell's label names them: "pod-network (flannel vxlan)".
package podnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Name is the method's scenario name.
const Name = "pod-network"

// DefaultConfDir is where CNI configurations live on a node unless the
// scenario says otherwise (options: {pod-network: {cni_conf_dir: ...}}).
const DefaultConfDir = "/etc/cni/net.d"

// binDirs are where CNI plugins are looked for unless cni_bin_dir names
// the directory: the upstream default, then Debian's and Fedora's.
var binDirs = []string{"/opt/cni/bin", "/usr/lib/cni", "/usr/libexec/cni"}

// PodNetwork is the method.
type PodNetwork struct{}

func (PodNetwork) Name() string           { return Name }
func (PodNetwork) Implementation() string { return "the cluster's pod network (its CNI)" }

// Scale says pod-network measures one network (method.Scaler).
func (PodNetwork) Scale(string, method.Values) method.Scale {
	return method.Scale{Unit: "pod network", Max: 1,
		Why: "pod-network measures the cluster's own CNI between two pods and creates nothing; tunbench has no tunnels of its own to add to it"}
}

// Overhead is 0: whatever the CNI adds is already inside the pods' MTU,
// which Setup records as the cell's overlay MTU.
func (PodNetwork) Overhead(string) int { return 0 }
func (PodNetwork) Families() []string  { return []string{method.IPv4, method.IPv6} }

// Requirements is empty: the cluster's nodes carry the pod network.
func (PodNetwork) Requirements() []method.Requirement { return nil }

// Testbeds is kubernetes only: the pod network is a cluster's.
func (PodNetwork) Testbeds() ([]string, string) {
	return []string{"kubernetes"}, "measures a Kubernetes cluster's pod network between two nodes"
}

// Network places the cell's endpoints in ordinary pods.
func (PodNetwork) Network() string { return testbed.NetworkPod }

// Options declares where the CNI's configuration and plugins are on the
// nodes.
func (PodNetwork) Options() []method.Option {
	return []method.Option{
		{Name: "cni_conf_dir", Path: true, Default: DefaultConfDir,
			Help: "directory of the CNI configuration on the nodes (k3s: /var/lib/rancher/k3s/agent/etc/cni/net.d)"},
		{Name: "cni_bin_dir", Path: true,
			Help: "directory of the CNI plugins on the nodes (default: the first of " + strings.Join(binDirs, ", ") + " that has them)"},
	}
}

// Setup checks that the testbed placed both endpoints in pods and returns
// the pods' addresses, named by the CNI side a's node runs when it is
// Flannel; it creates nothing.
func (PodNetwork) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	for _, ep := range env.Endpoints() {
		if ep.Network != testbed.NetworkPod {
			return nil, fmt.Errorf("%s: endpoint %s is not in a pod: pod-network runs on testbed kubernetes", Name, ep.Side)
		}
		if !ep.Addr(env.Family).IsValid() {
			return nil, fmt.Errorf("%s: the pod of side %s has no %s address: the cluster's pod network is not dual-stack; measure the other family", Name, ep.Side, env.Family)
		}
	}
	path := &method.Path{
		A:       env.A.Addr(env.Family),
		B:       env.B.Addr(env.Family),
		Devices: map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}},
		Variant: "pod network",
	}
	// The pods' MTU is the CNI's (an overlay's is below the nodes'
	// underlay MTU, which the cell's mtu names): the cell records it as
	// its overlay MTU.
	link, err := env.A.NL.LinkByName(env.A.Dev)
	if err != nil {
		return nil, fmt.Errorf("%s: the pod's device %s on side a: %w", Name, env.A.Dev, err)
	}
	path.OverlayMTU = link.Attrs().MTU
	// The CNI and its backend name the cell (the label's data path):
	// Flannel's, read on side a's node.
	f, ok, err := flannelOn(ctx, env.A)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if ok {
		path.Variant = "pod network: " + f.String()
		path.Datapath = f.Label()
	}
	return path, nil
}

// Teardown has nothing to remove (the testbed owns the pods).
func (PodNetwork) Teardown(context.Context, *method.Env) error { return nil }

// ImplementationOn names the CNI that carries the traffic on ep's node:
// "pod network: CNI tunbench-k8slab (bridge containernetworking-plugins
// 1.1.1+ds1-3+b5, host-local ...)".
func (p PodNetwork) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	info, err := p.cniOn(ctx, ep, nil)
	if err != nil {
		// Read where the defaults say; a scenario that names other
		// directories gets its CNI recorded by Counters (cni.a, cni.b).
		return p.Implementation()
	}
	if f, ok, err := flannelOn(ctx, ep); err == nil && ok {
		return "pod network: " + f.String() + "; " + info.String()
	}
	return "pod network: " + info.String()
}

// Counters records the CNI of both nodes with the cell (cni.a, cni.b).
func (p PodNetwork) Counters(ctx context.Context, env *method.Env) (map[string]string, error) {
	vals, err := method.ParseOptions(p, env.Options)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var errs []error
	for _, ep := range env.Endpoints() {
		info, err := p.cniOn(ctx, ep, &vals)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out["cni."+ep.Side] = info.String()
		f, ok, err := flannelOn(ctx, ep)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			out["cni.flannel."+ep.Side] = f.String()
		}
	}
	return out, errors.Join(errs...)
}

// CNI is what a node's CNI configuration says, with each plugin's version.
type CNI struct {
	// File is the configuration file the runtime uses (the first in
	// lexical order, as libcni picks it).
	File string
	// Name is the network's name; SpecVersion its cniVersion.
	Name, SpecVersion string
	Plugins           []Plugin
}

// Plugin is one plugin of the configuration and its binary on the node.
type Plugin struct {
	Type string
	// Path is the binary; About the first line it prints when run
	// without a CNI command ("CNI bridge plugin v1.1.1"); Package and
	// Version the distribution package that installed it, when known.
	Path, About, Package, Version string
	// searched is set once the nodes were searched for the binary.
	searched bool
}

func (c CNI) String() string {
	var ps []string
	for _, p := range c.Plugins {
		ps = append(ps, p.String())
	}
	return fmt.Sprintf("CNI %s (%s)", c.Name, strings.Join(ps, ", "))
}

func (p Plugin) String() string {
	switch {
	case p.searched && p.Path == "":
		return p.Type + " (not found)"
	case p.Package != "":
		return p.Type + " " + p.Package + " " + p.Version
	case p.About != "":
		return p.Type + ": " + p.About
	}
	return p.Type
}

// cniOn reads the CNI of ep's node; vals nil means the defaults.
func (p PodNetwork) cniOn(ctx context.Context, ep *testbed.Endpoint, vals *method.Values) (CNI, error) {
	confDir, binDir := DefaultConfDir, ""
	if vals != nil {
		confDir, binDir = vals.String("cni_conf_dir"), vals.String("cni_bin_dir")
	}
	// A node's CNI is read once a run (ImplementationOn and Counters ask
	// the same node for every cell).
	key := ep.Host + "\x00" + confDir + "\x00" + binDir
	if c, ok := cniRead.Load(key); ok {
		return c.(CNI), nil
	}
	c, err := p.readCNI(ctx, ep, confDir, binDir)
	if err == nil {
		cniRead.Store(key, c)
	}
	return c, err
}

// cniRead caches what cniOn read, by host and directories.
var cniRead sync.Map

// readCNI reads the CNI configuration in confDir on ep's host and looks
// for its plugins in binDir (or binDirs).
func (p PodNetwork) readCNI(ctx context.Context, ep *testbed.Endpoint, confDir, binDir string) (CNI, error) {
	out, err := ep.Run(ctx, "sh", "-c", confScript, "sh", confDir)
	if err != nil {
		return CNI{}, fmt.Errorf("read the CNI configuration in %s on %s: %w", confDir, ep.Host, err)
	}
	file, data, err := splitConf(string(out))
	if err != nil {
		return CNI{}, fmt.Errorf("%s on %s: %w", confDir, ep.Host, err)
	}
	c, err := ParseConf(data)
	if err != nil {
		return CNI{}, fmt.Errorf("%s on %s: %w", file, ep.Host, err)
	}
	c.File = file
	dirs := binDirs
	if binDir != "" {
		dirs = []string{binDir}
	}
	for i, pl := range c.Plugins {
		out, err := ep.Run(ctx, append([]string{"sh", "-c", pluginScript, "sh", pl.Type}, dirs...)...)
		if err != nil {
			return CNI{}, fmt.Errorf("look for CNI plugin %s on %s: %w", pl.Type, ep.Host, err)
		}
		c.Plugins[i] = ParsePlugin(pl.Type, string(out))
	}
	return c, nil
}

// confScript prints the name of the first configuration file in $1 and
// its content.
const confScript = `for f in "$1"/*; do case "$f" in *.conf|*.conflist|*.json) printf 'file %s\n' "$f"; exec cat -- "$f";; esac; done; echo "no CNI configuration (*.conf, *.conflist, *.json)" >&2; exit 1`

// pluginScript finds plugin $1 in the directories that follow and prints
// its path, the first line it prints without a CNI command, and the
// package that installed it (Debian).
const pluginScript = `t=$1; shift; for d in "$@"; do if [ -x "$d/$t" ]; then echo "path $d/$t"; echo "about $("$d/$t" </dev/null 2>&1 | head -n1)"; if command -v dpkg-query >/dev/null 2>&1; then p=$(dpkg-query -S "$d/$t" 2>/dev/null | head -n1 | cut -d: -f1); [ -n "$p" ] && echo "package $p $(dpkg-query -W -f '${Version}' "$p")"; fi; exit 0; fi; done`

// splitConf separates confScript's output into the file name and content.
func splitConf(out string) (string, []byte, error) {
	first, rest, ok := strings.Cut(out, "\n")
	name, found := strings.CutPrefix(first, "file ")
	if !ok || !found {
		return "", nil, fmt.Errorf("no CNI configuration: %q", first)
	}
	return name, []byte(rest), nil
}

// ParseConf reads a CNI network configuration: a list (.conflist, with
// plugins) or a single plugin's (.conf).
func ParseConf(data []byte) (CNI, error) {
	var raw struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Type       string `json:"type"`
		Plugins    []struct {
			Type string `json:"type"`
			IPAM struct {
				Type string `json:"type"`
			} `json:"ipam"`
		} `json:"plugins"`
		IPAM struct {
			Type string `json:"type"`
		} `json:"ipam"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return CNI{}, fmt.Errorf("not a CNI configuration: %w", err)
	}
	c := CNI{Name: raw.Name, SpecVersion: raw.CNIVersion}
	add := func(t string) {
		if t != "" && !slices.ContainsFunc(c.Plugins, func(p Plugin) bool { return p.Type == t }) {
			c.Plugins = append(c.Plugins, Plugin{Type: t})
		}
	}
	if len(raw.Plugins) == 0 {
		add(raw.Type)
		add(raw.IPAM.Type)
	}
	for _, p := range raw.Plugins {
		add(p.Type)
		add(p.IPAM.Type)
	}
	if c.Name == "" || len(c.Plugins) == 0 {
		return CNI{}, errors.New("not a CNI configuration: it names no network or no plugin")
	}
	return c, nil
}

// ParsePlugin reads pluginScript's output for plugin typ.
func ParsePlugin(typ, out string) Plugin {
	p := Plugin{Type: typ, searched: true}
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "path":
			p.Path = path.Clean(v)
		case "about":
			p.About = strings.TrimSpace(v)
		case "package":
			p.Package, p.Version, _ = strings.Cut(v, " ")
		}
	}
	return p
}
