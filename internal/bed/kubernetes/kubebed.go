// Package kubernetes is the kubernetes testbed (Entry, and its scenario
// section's checks in section.go): the nodes of a cluster,
// reached through its API server with client-go (internal/kubehost). On
// each node tunbench creates one privileged pod (host network and pids,
// the node's root file system mounted, pinned with nodeName, labelled
// with the run id) and starts "tunbench agent" in it through the exec
// subresource, on the node's own file system (chroot) or, with
// kubernetes.tools: image, in the agent container with the image's tools,
// with the same stdin/stdout protocol as over SSH. From there on the ssh testbed's code
// runs unchanged (the ssh testbed's agent code, package ssh, over an exec transport): host checks, the agent,
// pairs, lost hosts cleaned and reconnected, the end of the run.
//
// The method pod-network asks for endpoints in ordinary pods
// (testbed.NetworkPod): for those cells the testbed also keeps one
// ordinary pod per node and runs a second agent in that pod's network
// namespace (entered from the node's agent pod), so load runs between
// the pods' addresses over the cluster's pod network.
//
// Everything carries the run id as a label; the pods are deleted at the
// end of the run, on Ctrl-C and by "tunbench clean --testbed kubernetes".
// A pod that is deleted or evicted, or a node whose kubelet stops
// answering, fails the cell that was using it, naming the node; the next
// cell on that node gets a new pod, cleaned first, and the run goes on.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/kubehost"
	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/testbed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config is what Open needs.
type Config struct {
	// Kube is the scenario's kubernetes section; Families and MTUs its
	// matrix.
	Kube     *Section
	Families []string
	MTUs     []int
	// Underlay are the families of the addresses every node needs (the
	// methods' underlay families, scenario.UnderlayFamilies; srv6 needs
	// IPv6 whatever it carries): Families when empty. Ordinary pods
	// (pod-network) need Families.
	Underlay []string
	// UnderlayBy names, per underlay family, the methods that need it.
	UnderlayBy map[string][]string
	// ID is the run; BuildID identifies this binary (agents must match);
	// Version is what "tunbench version" prints.
	ID, BuildID, Version string
	// Binary is this tunbench, copied to the nodes (os.Executable when
	// empty).
	Binary string
	// Tools, Methods and CongestionControls are checked on every node as
	// on ssh hosts (ssh.Config).
	Tools              []remotehost.Tool
	Methods            []ssh.MethodNeeds
	CongestionControls []string
	// PodNetwork is set when the run measures the pod network: an
	// ordinary pod per node is kept as well.
	PodNetwork bool
	// Dial, when set, opens the connections to the API server (tests).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log receives notes; nil discards.
	Log func(format string, args ...any)
}

// podSuffix makes the site name of a node's ordinary pod.
const podSuffix = ".pod"

// PodSite is the site name of node's ordinary pod (pod-network cells).
func PodSite(node string) string { return node + podSuffix }

// Testbed is the kubernetes testbed of one run.
type Testbed struct {
	cfg   Config
	cl    *kubehost.Cluster
	inner *ssh.Testbed

	mu    sync.Mutex
	sites map[string]*site
}

// site is one agent of the run: a node's own stack (its agent pod) or a
// node's ordinary pod (entered from the agent pod).
type site struct {
	name, node string
	want       Node
	info       kubehost.NodeInfo
	// agent is the node's agent pod; workload the ordinary pod (pod
	// sites only).
	agent, workload *kubehost.Pod
}

// Open checks access and the nodes, creates the run's pods, and starts an
// agent on every node (ssh.Open over exec streams). Problems are
// reported per node, all at once; the access check and the nodes' state
// before anything is created in the cluster.
func Open(ctx context.Context, cfg Config) (tb *Testbed, err error) {
	k := cfg.Kube
	if k == nil || len(k.Nodes) < 2 {
		return nil, errors.New("kubernetes testbed: the kubernetes testbed needs at least two nodes")
	}
	cl, err := openCluster(cfg)
	if err != nil {
		return nil, err
	}
	t := &Testbed{cfg: cfg, cl: cl, sites: map[string]*site{}}
	defer func() {
		if err != nil {
			t.deletePods()
			_ = cl.Close()
		}
	}()
	if err := cl.CheckAccess(ctx); err != nil {
		return nil, err
	}
	var errs []error
	for _, n := range k.Nodes {
		info, err := cl.Node(ctx, n.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
			continue
		}
		if !info.Ready {
			errs = append(errs, fmt.Errorf("node %s is not Ready (%s: %s): measure between Ready nodes", n.Name, info.ReadyReason, info.ReadyMessage))
			continue
		}
		// Every address family the methods need on the underlay, before
		// any pod is created.
		for _, fam := range cfg.underlay() {
			if v := map[string]string{"ipv4": n.IPv4 + info.InternalIP4, "ipv6": n.IPv6 + info.InternalIP6}[fam]; v == "" {
				errs = append(errs, fmt.Errorf("node %s has no %s InternalIP, and the run needs an %s underlay (%s): give kubernetes.nodes[].%s for it, or drop what needs it", n.Name, fam, fam, strings.Join(cfg.needs(fam), ", "), fam))
			}
		}
		t.sites[n.Name] = &site{name: n.Name, node: n.Name, want: n, info: info}
		if cfg.PodNetwork {
			t.sites[PodSite(n.Name)] = &site{name: PodSite(n.Name), node: n.Name, want: n, info: info}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The pods, all at once.
	var pods []*kubehost.Pod
	for _, n := range k.Nodes {
		p, err := t.createPod(ctx, n.Name, kubehost.RoleAgent)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p)
		t.sites[n.Name].agent = p
		if cfg.PodNetwork {
			w, err := t.createPod(ctx, n.Name, kubehost.RoleWorkload)
			if err != nil {
				return nil, err
			}
			pods = append(pods, w)
			ps := t.sites[PodSite(n.Name)]
			ps.agent, ps.workload = p, w
		}
	}
	if err := cl.WaitRunning(ctx, pods...); err != nil {
		return nil, err
	}
	for _, n := range k.Nodes {
		t.prepare(ctx, t.sites[n.Name].agent)
	}
	// The sites as the ssh testbed sees them: device and addresses
	// found on each node (and in each ordinary pod).
	hosts := &ssh.Section{Dir: k.Dir, Binary: k.Binary}
	networks := map[string]string{}
	for _, name := range t.siteNames() {
		st, err := t.locate(ctx, t.sites[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		hosts.Sites = append(hosts.Sites, st)
		if t.sites[name].workload != nil {
			networks[name] = testbed.NetworkPod
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	inner, err := ssh.Open(ctx, ssh.Config{
		SSH: hosts, Families: cfg.underlay(), MTUs: cfg.MTUs, Offloads: []string{"on"},
		ID: cfg.ID, BuildID: cfg.BuildID, Version: cfg.Version, Binary: cfg.Binary,
		Tools: cfg.Tools, Methods: cfg.Methods, CongestionControls: cfg.CongestionControls,
		Log: cfg.Log, Connect: t.connect, Networks: networks, Testbed: "kubernetes",
	})
	if err != nil {
		return nil, err
	}
	t.inner = inner
	return t, nil
}

// underlay are the families every node needs an address of.
func (c Config) underlay() []string {
	if len(c.Underlay) > 0 {
		return c.Underlay
	}
	return c.Families
}

// needs names what needs an underlay of family: "families" when the
// matrix lists it, else the methods whose underlay it is.
func (c Config) needs(family string) []string {
	if slices.Contains(c.Families, family) {
		return []string{"families lists " + family}
	}
	return c.UnderlayBy[family]
}

// openCluster reads the kubeconfig the scenario names and builds a client
// for its namespace.
func openCluster(cfg Config) (*kubehost.Cluster, error) {
	k := cfg.Kube
	return kubehost.Open(kubehost.Config{Kubeconfig: remotehost.ExpandHome(k.Kubeconfig), Context: k.Context, Namespace: k.NamespaceOrDefault(), Dial: cfg.Dial})
}

// siteNames returns the sites in scenario order, each node's own before
// its pod's.
func (t *Testbed) siteNames() []string {
	var out []string
	for _, n := range t.cfg.Kube.Nodes {
		out = append(out, n.Name)
		if _, ok := t.sites[PodSite(n.Name)]; ok {
			out = append(out, PodSite(n.Name))
		}
	}
	return out
}

func (t *Testbed) logf(format string, args ...any) {
	if t.cfg.Log != nil {
		t.cfg.Log(format, args...)
	}
}

func (t *Testbed) createPod(ctx context.Context, node, role string) (*kubehost.Pod, error) {
	return t.cl.CreatePod(ctx, kubehost.PodSpec{Node: node, RunID: t.cfg.ID, Role: role, Image: t.cfg.Kube.ImageOrDefault()})
}

// nodePrefix runs commands on the node's own file system and stack.
var nodePrefix = []string{"chroot", kubehost.HostRoot}

// prefix is what every command on a node runs behind: nodePrefix with
// the node's tools (kubernetes.tools: node), nothing with the image's
// (tools: image: the agent container itself, which still has the node's
// network and pids).
func (t *Testbed) prefix() []string {
	if t.cfg.Kube.ToolsOrDefault() == ToolsImage {
		return nil
	}
	return nodePrefix
}

// prepare readies a new agent pod. With the image's tools it binds the
// node's kernel modules and /boot over the container's own (its mount
// namespace only), so that the methods' kernel options are checked by
// the node's modules and kernel config, and the image's modprobe finds
// them; an image without mount is noted and checked by its own files.
func (t *Testbed) prepare(ctx context.Context, agent *kubehost.Pod) {
	if t.cfg.Kube.ToolsOrDefault() != ToolsImage {
		return
	}
	h := t.cl.Host(agent, agent.Node)
	defer h.Close()
	if _, _, err := h.Run(ctx, "sh", "-c", bindScript, "sh", kubehost.HostRoot); err != nil {
		t.logf("node %s: the node's /lib/modules and /boot are not mounted in %s (%v): the methods' kernel options are checked by the image's own files, and one the node lacks fails at set-up", agent.Node, agent, err)
	}
}

// bindScript binds $1/lib/modules (or $1/usr/lib/modules) and $1/boot,
// when the node has them, over the container's.
const bindScript = `r=$1; for d in /lib/modules /boot; do s=$r$d; [ -d "$s" ] || s=$r/usr$d; [ -d "$s" ] || continue; mkdir -p "$d" && mount --bind "$s" "$d" || exit 1; done`

// nodeHost is a Host on st's node (its agent pod).
func (t *Testbed) nodeHost(st *site) *remotehost.Host {
	return t.cl.Host(st.agent, st.node, t.prefix()...)
}

// locate finds the site's underlay: the node's device carrying its
// address (the scenario's, else the node's InternalIP), or the ordinary
// pod's interface and address; prefix lengths as configured there.
func (t *Testbed) locate(ctx context.Context, st *site) (ssh.Site, error) {
	out := ssh.Site{Name: st.name, Address: st.node, Dev: st.want.Dev}
	var h *remotehost.Host
	want := map[string]string{"ipv4": st.want.IPv4, "ipv6": st.want.IPv6}
	if st.workload == nil {
		h = t.nodeHost(st)
		if want["ipv4"] == "" {
			want["ipv4"] = st.info.InternalIP4
		}
		if want["ipv6"] == "" {
			want["ipv6"] = st.info.InternalIP6
		}
	} else {
		var err error
		if h, err = t.podHost(ctx, st); err != nil {
			return out, err
		}
		p, err := t.cl.Clientset().CoreV1().Pods(st.workload.Namespace).Get(ctx, st.workload.Name, metav1.GetOptions{})
		if err != nil {
			return out, fmt.Errorf("node %s: %s: %w", st.node, st.workload, err)
		}
		want = map[string]string{}
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				want[map[bool]string{true: "ipv4", false: "ipv6"}[a.Is4()]] = a.String()
			}
		}
		out.Dev = ""
	}
	defer h.Close()
	addrs, _, err := h.Run(ctx, "ip", "-o", "addr", "show")
	if err != nil {
		return out, fmt.Errorf("node %s: read its addresses: %w", st.node, err)
	}
	have := ParseAddrs(string(addrs))
	fams := t.cfg.Families
	if st.workload == nil {
		fams = t.cfg.underlay()
	}
	for _, fam := range fams {
		v := want[fam]
		if v == "" {
			if st.workload != nil {
				return out, fmt.Errorf("node %s: %s has no %s address: the cluster's pod network is not dual-stack; drop %s from families", st.node, st.workload, fam, fam)
			}
			return out, fmt.Errorf("node %s has no %s InternalIP: give kubernetes.nodes[].%s for it, or drop %s from families", st.node, fam, fam, fam)
		}
		a, err := ParseAddrOrPrefix(v)
		if err != nil {
			return out, fmt.Errorf("node %s: address %q: %w", st.node, v, err)
		}
		i := slices.IndexFunc(have, func(x Addr) bool { return x.Prefix.Addr() == a && (out.Dev == "" || x.Dev == out.Dev) })
		if i < 0 {
			return out, fmt.Errorf("node %s: no device carries %s%s: give kubernetes.nodes[].dev and the address configured on it", st.node, a, map[bool]string{true: " on " + out.Dev, false: ""}[out.Dev != ""])
		}
		out.Dev = have[i].Dev
		if fam == "ipv4" {
			out.IPv4 = have[i].Prefix.String()
		} else {
			out.IPv6 = have[i].Prefix.String()
		}
	}
	return out, nil
}

// podHost is a Host in st's ordinary pod's network namespace, entered
// from the node's agent pod (host pids) with nsenter: the node's, or the
// image's with tools: image.
func (t *Testbed) podHost(ctx context.Context, st *site) (*remotehost.Host, error) {
	h := t.nodeHost(st)
	defer h.Close()
	out, _, err := h.Run(ctx, "sh", "-c", pidScript, "sh", string(st.workload.UID))
	if err != nil {
		return nil, fmt.Errorf("node %s: find the processes of %s: %w", st.node, st.workload, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 1 {
		return nil, fmt.Errorf("node %s: no process of %s found on the node (by its uid %s in /proc/*/cgroup)", st.node, st.workload, st.workload.UID)
	}
	return t.cl.Host(st.agent, st.name, append(slices.Clone(t.prefix()), "nsenter", "-t", strconv.Itoa(pid), "-n")...), nil
}

// pidScript prints the pid of a process of the pod whose uid is $1, found
// by its cgroup (cgroupfs "pod<uid>", systemd "pod<uid with _>").
const pidScript = `u=$1; s=$(echo "$u" | tr - _); for f in /proc/[0-9]*/cgroup; do if grep -q -e "pod$u" -e "pod$s" "$f" 2>/dev/null; then p=${f#/proc/}; echo "${p%/cgroup}"; exit 0; fi; done; exit 0`

// connect is the agent testbed's Config.Connect (package ssh): a Host on the site, its pods made
// anew when they are gone (deleted, evicted), and the site as it is now.
func (t *Testbed) connect(ctx context.Context, st ssh.Site) (*remotehost.Host, ssh.Site, error) {
	t.mu.Lock()
	s := t.sites[st.Name]
	t.mu.Unlock()
	if s == nil {
		return nil, st, fmt.Errorf("kubernetes testbed: unknown site %q", st.Name)
	}
	renewed, err := t.ensurePods(ctx, s)
	if err != nil {
		return nil, st, err
	}
	if renewed {
		nst, err := t.locate(ctx, s)
		if err != nil {
			return nil, st, err
		}
		st = nst
	}
	if s.workload == nil {
		return t.nodeHost(s), st, nil
	}
	h, err := t.podHost(ctx, s)
	return h, st, err
}

// ensurePods makes sure the site's pods run, creating again those that
// are gone; renewed reports whether any was.
func (t *Testbed) ensurePods(ctx context.Context, s *site) (renewed bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fix := func(p **kubehost.Pod, role string) error {
		got, err := t.cl.Clientset().CoreV1().Pods((*p).Namespace).Get(ctx, (*p).Name, metav1.GetOptions{})
		if err == nil && got.DeletionTimestamp == nil && got.Status.Phase == corev1.PodRunning && got.UID == (*p).UID {
			return nil
		}
		if err == nil {
			// Ended or on its way out: gone before it is made anew.
			if err := t.cl.DeletePod(ctx, *p); err != nil {
				return err
			}
		}
		// A node that cannot run it fails the cell at once, one slow to
		// within a bound.
		if ni, err := t.cl.Node(ctx, s.node); err != nil {
			return err
		} else if !ni.Ready {
			return fmt.Errorf("%s is gone and the node is not Ready (%s: %s): no new pod there", *p, ni.ReadyReason, ni.ReadyMessage)
		}
		np, err := t.createPod(ctx, s.node, role)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, PodStartTimeout)
		err = t.cl.WaitRunning(wctx, np)
		cancel()
		if err != nil {
			return err
		}
		if role == kubehost.RoleAgent {
			t.prepare(ctx, np)
		}
		t.logf("node %s: %s was gone; made anew", s.node, *p)
		// Every site of the node shares its pods.
		for _, o := range t.sites {
			if o.agent == *p {
				o.agent = np
			}
			if o.workload == *p {
				o.workload = np
			}
		}
		renewed = true
		return nil
	}
	if err := fix(&s.agent, kubehost.RoleAgent); err != nil {
		return renewed, fmt.Errorf("node %s: %w", s.node, err)
	}
	if s.workload != nil {
		if err := fix(&s.workload, kubehost.RoleWorkload); err != nil {
			return renewed, fmt.Errorf("node %s: %w", s.node, err)
		}
	}
	return renewed, nil
}

// PodStartTimeout bounds the wait for a pod made anew mid-run (issue 25
// asks for pod and agent start under 10 s once the images are present).
const PodStartTimeout = 60 * time.Second

// Name is "kubernetes".
func (t *Testbed) Name() string { return "kubernetes" }

// Pair returns the endpoints on nodes spec.A (sending) and spec.B: the
// nodes' own stacks, or with spec.Network = testbed.NetworkPod their
// ordinary pods.
func (t *Testbed) Pair(ctx context.Context, spec testbed.Spec) (*testbed.Pair, error) {
	switch spec.Network {
	case "":
	case testbed.NetworkPod:
		if !t.cfg.PodNetwork {
			return nil, errors.New("kubernetes testbed: this run keeps no ordinary pods (pod-network is not among its methods)")
		}
		spec.A, spec.B, spec.Network = PodSite(spec.A), PodSite(spec.B), ""
	default:
		return nil, fmt.Errorf("kubernetes testbed: unknown network %q", spec.Network)
	}
	pair, err := t.inner.Pair(ctx, spec)
	if err != nil {
		return nil, err
	}
	pair.Notes = t.notes(spec.A, spec.B)
	return pair, nil
}

// notes describe the pods and nodes of sites a and b for the cell's
// record: kubernetes.pod.a "default/tunbench-...-agent-node1",
// kubernetes.node.a "node1 (kubelet v1.34.4, containerd://1.6.20, ...)".
func (t *Testbed) notes(a, b string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]string{}
	for side, name := range map[string]string{"a": a, "b": b} {
		s := t.sites[name]
		if s == nil {
			continue
		}
		pod := s.agent
		if s.workload != nil {
			pod = s.workload
		}
		out["kubernetes.pod."+side] = pod.Namespace + "/" + pod.Name
		i := s.info
		out["kubernetes.node."+side] = fmt.Sprintf("%s (kubelet %s, %s, %s)", s.node, i.KubeletVersion, i.ContainerRuntime, i.OSImage)
	}
	return out
}

// Close ends every agent (each cleans its node or pod), then deletes the
// run's pods and waits until they are gone.
func (t *Testbed) Close() error {
	var err error
	if t.inner != nil {
		err = t.inner.Close()
	}
	err = errors.Join(err, t.deletePods())
	return errors.Join(err, t.cl.Close())
}

func (t *Testbed) deletePods() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := t.cl.DeleteRun(ctx, t.cfg.ID)
	for _, n := range names {
		if strings.Contains(n, " (forced: ") {
			t.logf("deleted pod %s/%s", t.cl.Namespace(), n)
		}
	}
	if err != nil {
		return fmt.Errorf("delete the run's pods: %w (tunbench clean --testbed kubernetes -f SCENARIO --run %s deletes them)", err, t.cfg.ID)
	}
	return nil
}
