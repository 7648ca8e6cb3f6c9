package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"golang.org/x/sys/unix"
)

func TestCluster(t *testing.T) {
	var c *Cluster
	t.Cleanup(func() { // registered first, so it runs after the cluster's own cleanup
		if c == nil {
			return
		}
		if left := Leftovers(c.id); len(left) > 0 {
			t.Errorf("left behind after cleanup: %v", left)
		}
		if _, err := os.Stat(c.Dir); err == nil {
			t.Errorf("%s left behind", c.Dir)
		}
	})
	begin := time.Now()
	c = Start(t)
	t.Logf("cluster up in %v", time.Since(begin).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := c.Client()

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes, want 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		info := n.Status.NodeInfo
		if info.KubeletVersion != Version {
			t.Errorf("node %s: kubeletVersion %q, want %q", n.Name, info.KubeletVersion, Version)
		}
		if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
			t.Errorf("node %s: containerRuntimeVersion %q, want containerd://...", n.Name, info.ContainerRuntimeVersion)
		}
		t.Logf("node %s: kubelet %s, runtime %s, addresses %v", n.Name, info.KubeletVersion, info.ContainerRuntimeVersion, n.Status.Addresses)
	}

	// A user without RBAC grants is refused.
	ucfg, err := clientcmd.BuildConfigFromFlags("", c.UserKubeconfig("alice", "tunbench-testers"))
	if err != nil {
		t.Fatal(err)
	}
	ucfg.Proxy = http.ProxyURL(c.ProxyURL())
	alice := kubernetes.NewForConfigOrDie(ucfg)
	if _, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice lists pods: err %v, want Forbidden", err)
	}
	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("alice's self subject review: %v", err)
	} else if u := review.Status.UserInfo; u.Username != "alice" || !slices.Contains(u.Groups, "tunbench-testers") {
		t.Errorf("alice is %q in %v", u.Username, u.Groups)
	}

	privileged := true
	hostPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "host-node1", Labels: map[string]string{"tunbench.run": "kubetest"}},
		Spec: corev1.PodSpec{
			NodeName:                      "node1",
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: new(int64),
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
			Containers: []corev1.Container{{
				Name: "agent", Image: c.Image, ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sleep", "3600"},
				SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
				VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
			}},
		},
	}
	plain := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeName:                      node,
				TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{
					Name: "bb", Image: c.Image, ImagePullPolicy: corev1.PullNever,
					Command: []string{"sleep", "3600"},
				}},
			},
		}
	}
	pods := []*corev1.Pod{hostPod, plain("bb-node1", "node1"), plain("bb-node2", "node2")}
	created := time.Now()
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	running := map[string]*corev1.Pod{}
	for len(running) < len(pods) {
		for _, p := range pods {
			if running[p.Name] != nil {
				continue
			}
			got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase == corev1.PodRunning {
				running[p.Name] = got
				t.Logf("pod %s on %s Running %v after creation (pod IP %s)", p.Name, got.Spec.NodeName, time.Since(created).Round(time.Millisecond), got.Status.PodIP)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("pods not Running: %v", ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// How fast they start is a benchmark's target (docs/performance.md,
	// "pods Running and agents started"), not this test's: a loaded
	// clean-clone run took 10.3 s here.
	t.Logf("pods Running %v after creation", time.Since(created).Round(time.Millisecond))

	// The hostNetwork pod sees the node's underlay through the node's
	// own ip.
	out, stderr, err := execIn(ctx, c.RestConfig(), cs, "default", "host-node1", "chroot", "/host", "ip", "-o", "link")
	if err != nil {
		t.Fatalf("exec chroot /host ip -o link: %v: %s", err, stderr)
	}
	if !strings.Contains(out, " eth0") {
		t.Errorf("node1's links lack eth0:\n%s", out)
	}
	if strings.Contains(out, "kbr0") {
		t.Errorf("node1's links show the control namespace's bridge:\n%s", out)
	}

	// Pod to pod across the nodes.
	target := running["bb-node2"].Status.PodIP
	if !c.Nodes[1].PodCIDR.Contains(mustAddr(t, target)) {
		t.Errorf("pod on node2 has IP %s outside node2's pod CIDR %s", target, c.Nodes[1].PodCIDR)
	}
	out, stderr, err = execIn(ctx, c.RestConfig(), cs, "default", "bb-node1", "ping", "-c", "3", "-W", "2", target)
	if err != nil {
		t.Fatalf("ping %s from node1's pod: %v: %s%s", target, err, out, stderr)
	}
	if !strings.Contains(out, "3 packets received") {
		t.Errorf("ping %s from node1's pod:\n%s", target, out)
	}

	// Delete the pods.
	deleted := time.Now()
	zero := int64(0)
	for _, p := range pods {
		if err := cs.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Errorf("delete pod %s: %v", p.Name, err)
		}
	}
	for _, p := range pods {
		for {
			_, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("pod %s not gone: %v", p.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("pods deleted in %v", time.Since(deleted).Round(time.Millisecond))
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// execIn runs a command in the first container of a pod through the exec
// subresource, as kubectl does: WebSocket first, SPDY when the server
// refuses the upgrade.
func execIn(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, ns, pod string, argv ...string) (string, string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		var exit interface{ ExitStatus() int }
		if errors.As(err, &exit) {
			err = fmt.Errorf("exit status %d: %w", exit.ExitStatus(), err)
		}
	}
	return stdout.String(), stderr.String(), err
}

// TestCleanLeftovers: what a killed test's cluster left (a namespace with
// a process in it, cgroup trees, its directory with a lock nobody holds)
// is removed by the next Start's CleanLeftovers; a live instance (lock
// held) is left alone.
func TestCleanLeftovers(t *testing.T) {
	Need(t)
	dead, live := Prefix+"d0d0d0", Prefix+"e1e1e1"
	for _, p := range []string{dead, live} {
		if err := os.MkdirAll(filepath.Join(os.TempDir(), p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := ip("netns", "add", p+"-ctl"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = destroy("e1e1e1", nil)
		_ = os.RemoveAll(filepath.Join(os.TempDir(), live))
		_ = destroy("d0d0d0", nil)
		_ = os.RemoveAll(filepath.Join(os.TempDir(), dead))
	})
	f, err := os.OpenFile(filepath.Join(os.TempDir(), dead, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), live, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cg := filepath.Join("/sys/fs/cgroup/pids", dead+"-node1", "kubepods")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("ip", "netns", "exec", dead+"-ctl", "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = sleeper.Wait() }()
	inCgroup := exec.Command("sleep", "300")
	if err := inCgroup.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = inCgroup.Wait() }()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(inCgroup.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CleanLeftovers(); err != nil {
		t.Fatal(err)
	}
	if left := Leftovers("d0d0d0"); len(left) > 0 {
		t.Errorf("left after CleanLeftovers: %v", left)
	}
	if alive(sleeper.Process.Pid) || alive(inCgroup.Process.Pid) {
		t.Errorf("processes of the dead instance still alive")
	}
	if left := Leftovers("e1e1e1"); len(left) != 2 {
		t.Errorf("the live instance lost something: %v left, want its namespace and directory", left)
	}
}
