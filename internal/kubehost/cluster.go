// Package kubehost drives the pods of a Kubernetes testbed with client-go
// alone (no kubectl): it loads a kubeconfig, checks before anything is
// created that the user may do everything a run needs
// (SelfSubjectAccessReview), describes nodes, creates one pod per node
// (an "agent" pod: privileged, host network and pid namespace, the node's
// root at /host; or an ordinary "workload" pod), waits for them to run,
// deletes a run's pods by label, and gives each pod an *remotehost.Host whose
// commands run through the pod's exec subresource (WebSocket, falling back
// to SPDY, as kubectl does), so that everything the ssh testbed does over
// SSH (commands, the agent's RPC over a long-lived session, files,
// InstallSelf, killing a cancelled command's process group) works
// unchanged in a pod.
//
// Every pod carries the labels app.kubernetes.io/name=tunbench,
// tunbench.run=<run id> and tunbench.role=<role>, and is named
// tunbench-<run id>-<role>-<node>, so that DeleteRun and Runs find what a
// killed run left.
package kubehost

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Labels every pod of a run carries.
const (
	LabelApp  = "app.kubernetes.io/name"
	AppName   = "tunbench"
	LabelRun  = "tunbench.run"
	LabelRole = "tunbench.role"
)

// Config says which cluster to talk to and where to create pods.
type Config struct {
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, then
	// ~/.kube/config).
	Kubeconfig string
	// Context is the kubeconfig context ("": its current context).
	Context string
	// Namespace is where pods are created ("": "default").
	Namespace string
	// Dial, when set, opens the TCP connections to the API server (tests
	// reach an API server inside a network namespace this way). Every
	// request, exec streams included, goes through it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timings are how often and how long the cluster's Hosts and
	// DeleteRun look and wait; zero fields take DefaultTimings'.
	Timings Timings
}

// Timings of a Cluster's watches and waits.
type Timings struct {
	// NodeCheck is how often a Host reads its node's Ready condition (a
	// node whose kubelet stopped posting status, Ready Unknown, counts
	// as lost) and asks the kubelet for an empty slice of the pod's log
	// (a kubelet that does not answer counts as lost once an exec probe
	// fails too).
	NodeCheck time.Duration
	// Probe bounds the exec of "true" that a Host sends when a stream
	// broke without an exit status, to tell a lost kubelet from a
	// passing fault, and DeleteRun's check of a pod's kubelet.
	Probe time.Duration
	// ForceAfter bounds how long DeleteRun waits for the nodes' kubelets
	// to confirm a deletion (a graceful deletion ends once the kubelet
	// has stopped the pod's containers); pods still there then are
	// deleted by force.
	ForceAfter time.Duration
}

// DefaultTimings are a Cluster's timings unless its Config says others.
var DefaultTimings = Timings{NodeCheck: 5 * time.Second, Probe: 5 * time.Second, ForceAfter: 20 * time.Second}

// orDefault fills t's zero fields from DefaultTimings.
func (t Timings) orDefault() Timings {
	if t.NodeCheck <= 0 {
		t.NodeCheck = DefaultTimings.NodeCheck
	}
	if t.Probe <= 0 {
		t.Probe = DefaultTimings.Probe
	}
	if t.ForceAfter <= 0 {
		t.ForceAfter = DefaultTimings.ForceAfter
	}
	return t
}

// Cluster is a connection to one cluster's API server.
type Cluster struct {
	cs        kubernetes.Interface
	rest      *rest.Config
	namespace string
	source    string // the kubeconfig and context, for messages
	fwd       *forwarder
	timings   Timings
}

// Open loads the kubeconfig cfg names and builds a client. It does not
// contact the API server (CheckAccess does).
func Open(cfg Config) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	source := "$KUBECONFIG or ~/.kube/config"
	if cfg.Kubeconfig != "" {
		if _, err := os.Stat(cfg.Kubeconfig); err != nil {
			return nil, fmt.Errorf("kubehost: kubeconfig: %w: give the kubeconfig of the cluster (kubeconfig:, or $KUBECONFIG)", err)
		}
		rules.ExplicitPath = cfg.Kubeconfig
		source = cfg.Kubeconfig
	} else if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		source = "$KUBECONFIG (" + env + ")"
	} else {
		source = clientcmd.RecommendedHomeFile
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubehost: load kubeconfig %s: %w", source, err)
	}
	if len(raw.Contexts) == 0 && len(raw.Clusters) == 0 {
		return nil, fmt.Errorf("kubehost: no kubeconfig: %s is missing or empty: give a kubeconfig file, or set $KUBECONFIG", source)
	}
	ctxName := cfg.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if ctxName == "" {
		return nil, fmt.Errorf("kubehost: kubeconfig %s has no current context: name one (context:) of %s", source, strings.Join(sortedKeys(raw.Contexts), ", "))
	}
	if _, ok := raw.Contexts[ctxName]; !ok {
		return nil, fmt.Errorf("kubehost: kubeconfig %s has no context %q: it has %s", source, ctxName, strings.Join(sortedKeys(raw.Contexts), ", "))
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubehost: kubeconfig %s, context %s: %w", source, ctxName, err)
	}
	source = fmt.Sprintf("%s, context %s", source, ctxName)
	ns := cfg.Namespace
	if ns == "" {
		ns = "default"
	}
	rc.QPS, rc.Burst = 50, 100
	c := &Cluster{rest: rc, namespace: ns, source: source, timings: cfg.Timings.orDefault()}
	if cfg.Dial != nil {
		// The streaming transports (WebSocket, SPDY) dial on their own
		// and ignore rest.Config.Dial: every connection goes through a
		// loopback forwarder instead, and TLS still checks the server's
		// certificate for its own name.
		u, err := url.Parse(rc.Host)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("kubehost: kubeconfig %s: server %q is not a URL", source, rc.Host)
		}
		target := u.Host
		if u.Port() == "" {
			port := "443"
			if u.Scheme == "http" {
				port = "80"
			}
			target = net.JoinHostPort(u.Hostname(), port)
		}
		fwd, err := newForwarder(target, cfg.Dial)
		if err != nil {
			return nil, fmt.Errorf("kubehost: forward to the API server %s: %w", target, err)
		}
		if rc.TLSClientConfig.ServerName == "" {
			rc.TLSClientConfig.ServerName = u.Hostname()
		}
		u.Host = fwd.addr()
		rc.Host = u.String()
		c.fwd = fwd
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("kubehost: kubeconfig %s: %w", source, err)
	}
	c.cs = cs
	return c, nil
}

// newCluster makes a Cluster over a given clientset (tests: the fake).
func newCluster(cs kubernetes.Interface, namespace string) *Cluster {
	if namespace == "" {
		namespace = "default"
	}
	return &Cluster{cs: cs, rest: &rest.Config{Host: "https://fake"}, namespace: namespace, source: "fake", timings: DefaultTimings}
}

// Close releases what Open set up (the forwarder of Config.Dial). Hosts
// made by Host should be closed first.
func (c *Cluster) Close() error {
	if c.fwd != nil {
		c.fwd.close()
	}
	return nil
}

// Namespace is where the cluster's pods are created.
func (c *Cluster) Namespace() string { return c.namespace }

// Clientset is the client-go clientset, for what this package lacks.
func (c *Cluster) Clientset() kubernetes.Interface { return c.cs }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NodeInfo describes a node.
type NodeInfo struct {
	Name string
	// InternalIP4 and InternalIP6 are the node's InternalIP addresses
	// ("" when it has none of that family).
	InternalIP4, InternalIP6 string
	KubeletVersion           string
	ContainerRuntime         string // e.g. "containerd://1.6.20"
	Kernel                   string
	OSImage                  string
	Architecture             string
	// Ready is the node's Ready condition; ReadyReason and ReadyMessage
	// say why when it is not.
	Ready                     bool
	ReadyReason, ReadyMessage string
}

// Node describes node name. An unknown node is an error listing the
// nodes that exist.
func (c *Cluster) Node(ctx context.Context, name string) (NodeInfo, error) {
	n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return NodeInfo{}, c.unknownNode(ctx, name)
	}
	if err != nil {
		return NodeInfo{}, fmt.Errorf("kubehost: get node %s: %w", name, err)
	}
	return nodeInfo(n), nil
}

func (c *Cluster) unknownNode(ctx context.Context, name string) error {
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kubehost: node %s not found (listing the nodes failed too: %v)", name, err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("kubehost: node %s not found: the cluster (%s) has no nodes", name, c.source)
	}
	return fmt.Errorf("kubehost: node %s not found: the cluster has %s", name, strings.Join(names, ", "))
}

func nodeInfo(n *corev1.Node) NodeInfo {
	ni := NodeInfo{
		Name:             n.Name,
		KubeletVersion:   n.Status.NodeInfo.KubeletVersion,
		ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion,
		Kernel:           n.Status.NodeInfo.KernelVersion,
		OSImage:          n.Status.NodeInfo.OSImage,
		Architecture:     n.Status.NodeInfo.Architecture,
	}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip := net.ParseIP(a.Address)
		switch {
		case ip == nil:
		case ip.To4() != nil && ni.InternalIP4 == "":
			ni.InternalIP4 = a.Address
		case ip.To4() == nil && ni.InternalIP6 == "":
			ni.InternalIP6 = a.Address
		}
	}
	ni.ReadyReason = "no Ready condition"
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ni.Ready = cond.Status == corev1.ConditionTrue
			ni.ReadyReason, ni.ReadyMessage = cond.Reason, cond.Message
			if cond.Status == corev1.ConditionUnknown && ni.ReadyReason == "" {
				ni.ReadyReason = "Unknown"
			}
		}
	}
	return ni
}

// forwarder listens on loopback and copies each connection to target
// through dial.
type forwarder struct {
	ln     net.Listener
	target string
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func newForwarder(target string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &forwarder{ln: ln, target: target, dial: dial, ctx: ctx, cancel: cancel, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		if f.ctx.Err() != nil {
			return false
		}
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer c.Close()
			r, err := f.dial(f.ctx, "tcp", f.target)
			if err != nil {
				return
			}
			defer r.Close()
			if !f.track(c, true) {
				return
			}
			f.track(r, true)
			defer f.track(c, false)
			defer f.track(r, false)
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(r, c); closeWrite(r); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, r); closeWrite(c); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		c.Close()
	}
}

func (f *forwarder) close() {
	f.cancel()
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
