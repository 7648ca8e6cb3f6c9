package kubehost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/tunbench/tunbench/internal/remotehost"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// fakeAccess makes the fake API server answer SelfSubjectAccessReviews:
// allowed unless "verb resource[/sub] (namespace)" is in deny.
func fakeAccess(cs *fake.Clientset, deny ...string) {
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		res := ra.Resource
		if ra.Subresource != "" {
			res += "/" + ra.Subresource
		}
		key := ra.Verb + " " + res + " (" + ra.Namespace + ")"
		r.Status.Allowed = true
		for _, d := range deny {
			if d == key {
				r.Status.Allowed = false
			}
		}
		return true, r, nil
	})
}

func TestCheckAccessAllowed(t *testing.T) {
	cs := fake.NewClientset()
	fakeAccess(cs)
	if err := newCluster(cs, "bench").CheckAccess(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckAccessMissing(t *testing.T) {
	cs := fake.NewClientset()
	fakeAccess(cs, "get nodes ()", "create pods/exec (bench)", "get pods/exec (bench)", "delete pods (bench)")
	err := newCluster(cs, "bench").CheckAccess(testCtx(t, 10*time.Second))
	want := `kubehost: the user of fake lacks permissions a run needs: get nodes (cluster scope), delete pods (namespace bench), create pods/exec (namespace bench), get pods/exec (namespace bench)
Grant them with rules like these (bind them to the user with a RoleBinding and a ClusterRoleBinding):
kind: Role  # in namespace bench
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["delete"]
- apiGroups: [""]
  resources: ["pods/exec"]
  verbs: ["create", "get"]
kind: ClusterRole
rules:
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get"]`
	if err == nil {
		t.Fatal("CheckAccess = nil, want the missing permissions")
	}
	if d := cmp.Diff(want, err.Error()); d != "" {
		t.Errorf("CheckAccess error (-want +got):\n%s", d)
	}
}

func TestPodName(t *testing.T) {
	for _, tc := range []struct {
		spec PodSpec
		want string
	}{
		{PodSpec{Node: "node1", RunID: "a1b2c3", Role: RoleAgent}, "tunbench-a1b2c3-agent-node1"},
		{PodSpec{Node: "ip-10-0-0-1.ec2.internal", RunID: "a1b2c3", Role: RoleWorkload}, "tunbench-a1b2c3-workload-ip-10-0-0-1-ec2-internal-f8d802"},
		{PodSpec{Node: strings.Repeat("n", 80), RunID: "a1b2c3", Role: RoleAgent}, ""},
	} {
		got := PodName(tc.spec)
		if len(got) > 63 {
			t.Errorf("PodName(%q) = %q, longer than 63", tc.spec.Node, got)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("PodName(%q) = %q, want %q", tc.spec.Node, got, tc.want)
		}
		if tc.want == "" && !strings.HasPrefix(got, "tunbench-a1b2c3-agent-nnnn") {
			t.Errorf("PodName(long) = %q", got)
		}
	}
}

func TestPodSpecValidate(t *testing.T) {
	ok := PodSpec{Node: "n1", RunID: "abc123", Role: RoleAgent, Image: "busybox"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*PodSpec)
		want string
	}{
		{func(s *PodSpec) { s.Node = "" }, "node is empty"},
		{func(s *PodSpec) { s.RunID = "Bad_ID" }, `run id "Bad_ID"`},
		{func(s *PodSpec) { s.Role = "sidecar" }, `role "sidecar": give agent or workload`},
		{func(s *PodSpec) { s.Image = "" }, "image is empty"},
	} {
		s := ok
		tc.mod(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", s, err, tc.want)
		}
	}
}

const wantAgentPod = `apiVersion: v1
kind: Pod
metadata:
  labels:
    app.kubernetes.io/name: tunbench
    tunbench.role: agent
    tunbench.run: abc123
  name: tunbench-abc123-agent-node1
  namespace: bench
spec:
  automountServiceAccountToken: false
  containers:
  - command:
    - /bin/sh
    - -c
    - trap 'exit 0' TERM INT; sleep 2147483647 & wait
    image: tunbench-test:1
    imagePullPolicy: IfNotPresent
    name: tunbench
    resources: {}
    securityContext:
      capabilities:
        add:
        - NET_ADMIN
        - NET_RAW
        - SYS_ADMIN
        - BPF
        - PERFMON
      privileged: true
    volumeMounts:
    - mountPath: /run/tunbench
      name: run
    - mountPath: /host
      name: host
  dnsPolicy: Default
  enableServiceLinks: false
  hostNetwork: true
  hostPID: true
  nodeName: node1
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  tolerations:
  - operator: Exists
  volumes:
  - emptyDir: {}
    name: run
  - hostPath:
      path: /
      type: Directory
    name: host
status: {}
`

const wantWorkloadPod = `apiVersion: v1
kind: Pod
metadata:
  labels:
    app.kubernetes.io/name: tunbench
    tunbench.role: workload
    tunbench.run: abc123
  name: tunbench-abc123-workload-node2
  namespace: bench
spec:
  automountServiceAccountToken: false
  containers:
  - command:
    - /bin/sh
    - -c
    - trap 'exit 0' TERM INT; sleep 2147483647 & wait
    image: tunbench-test:1
    imagePullPolicy: IfNotPresent
    name: tunbench
    resources: {}
    securityContext:
      allowPrivilegeEscalation: false
      privileged: false
    volumeMounts:
    - mountPath: /run/tunbench
      name: run
  enableServiceLinks: false
  nodeName: node2
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  tolerations:
  - operator: Exists
  volumes:
  - emptyDir: {}
    name: run
status: {}
`

func TestCreatePodSpecs(t *testing.T) {
	cs := fake.NewClientset()
	c := newCluster(cs, "bench")
	ctx := testCtx(t, 10*time.Second)
	for _, tc := range []struct {
		spec PodSpec
		want string
	}{
		{PodSpec{Node: "node1", RunID: "abc123", Role: RoleAgent, Image: "tunbench-test:1"}, wantAgentPod},
		{PodSpec{Node: "node2", RunID: "abc123", Role: RoleWorkload, Image: "tunbench-test:1"}, wantWorkloadPod},
	} {
		p, err := c.CreatePod(ctx, tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := cs.CoreV1().Pods("bench").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj.ManagedFields = nil // the fake's server-side apply bookkeeping
		got, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		// The fake sets no timestamps; drop creationTimestamp null.
		gotS := strings.Replace(string(got), "  creationTimestamp: null\n", "", 1)
		if d := cmp.Diff(tc.want, gotS); d != "" {
			t.Errorf("%s pod (-want +got):\n%s", tc.spec.Role, d)
		}
	}
	// A second pod of the same name: the run is still there.
	_, err := c.CreatePod(ctx, PodSpec{Node: "node1", RunID: "abc123", Role: RoleAgent, Image: "tunbench-test:1"})
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("second CreatePod = %v, want exists already", err)
	}
	runs, err := c.Runs(ctx)
	if err != nil || !cmp.Equal(runs, []string{"abc123"}) {
		t.Errorf("Runs = %v, %v", runs, err)
	}
}

func node(name string, ready corev1.ConditionStatus, addrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"}}
	if ready == corev1.ConditionUnknown {
		n.Status.Conditions[0].Reason = "NodeStatusUnknown"
		n.Status.Conditions[0].Message = "Kubelet stopped posting node status."
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", ContainerRuntimeVersion: "containerd://1.6.20",
		KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)", Architecture: "amd64"}
	return n
}

func TestNode(t *testing.T) {
	cs := fake.NewClientset(node("node1", corev1.ConditionTrue, "198.19.200.11", "2001:2::11"), node("node2", corev1.ConditionUnknown, "198.19.200.12"))
	c := newCluster(cs, "")
	ctx := testCtx(t, 10*time.Second)
	got, err := c.Node(ctx, "node1")
	if err != nil {
		t.Fatal(err)
	}
	want := NodeInfo{Name: "node1", InternalIP4: "198.19.200.11", InternalIP6: "2001:2::11", KubeletVersion: "v1.34.4",
		ContainerRuntime: "containerd://1.6.20", Kernel: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)", Architecture: "amd64",
		Ready: true, ReadyReason: "KubeletReady"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Node (-want +got):\n%s", d)
	}
	got, err = c.Node(ctx, "node2")
	if err != nil || got.Ready || got.ReadyReason != "NodeStatusUnknown" {
		t.Errorf("Node(node2) = %+v, %v", got, err)
	}
	_, err = c.Node(ctx, "node3")
	if err == nil || err.Error() != "kubehost: node node3 not found: the cluster has node1, node2" {
		t.Errorf("Node(node3) = %v", err)
	}
}

func setPhase(t *testing.T, cs *fake.Clientset, name string, mod func(*corev1.Pod)) {
	t.Helper()
	ctx := context.Background()
	p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	mod(p)
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Error(err)
	}
}

func TestWaitRunning(t *testing.T) {
	cs := fake.NewClientset(node("node1", corev1.ConditionTrue), node("node2", corev1.ConditionFalse))
	c := newCluster(cs, "")
	ctx := testCtx(t, 20*time.Second)
	a, err := c.CreatePod(ctx, PodSpec{Node: "node1", RunID: "r1", Role: RoleAgent, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreatePod(ctx, PodSpec{Node: "node2", RunID: "r1", Role: RoleAgent, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		setPhase(t, cs, a.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
		setPhase(t, cs, b.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
	}()
	if err := c.WaitRunning(ctx, a, b); err != nil {
		t.Fatal(err)
	}

	// An image that cannot be had fails at once, naming pod, node, reason.
	setPhase(t, cs, b.Name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "img",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `Container image "img" is not present with pull policy of Never`}}}}
	})
	err = c.WaitRunning(ctx, b)
	want := `kubehost: pod default/tunbench-r1-agent-node2 on node node2: container tunbench waiting: ErrImageNeverPull: Container image "img" is not present with pull policy of Never (image img: is it present on the node, or can the node pull it?)`
	if err == nil || err.Error() != want {
		t.Errorf("WaitRunning(image missing) = %v\nwant %s", err, want)
	}

	// Pending on a node that is not ready: the timeout says so.
	setPhase(t, cs, b.Name, func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	})
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = c.WaitRunning(short, b)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "pod default/tunbench-r1-agent-node2 on node node2 does not run: phase Pending; container tunbench waiting (ContainerCreating); node node2 is not ready (KubeletReady)") {
		t.Errorf("WaitRunning(timeout) = %v", err)
	}

	// Evicted.
	setPhase(t, cs, a.Name, func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	})
	err = c.WaitRunning(ctx, a)
	if err == nil || err.Error() != "kubehost: pod default/tunbench-r1-agent-node1 on node node1 ended (phase Failed): Evicted: The node was low on resource: memory." {
		t.Errorf("WaitRunning(evicted) = %v", err)
	}

	// DeleteRun removes both and says so, node2's (not Ready) by force;
	// Runs is then empty.
	names, err := c.DeleteRun(ctx, "r1")
	if err != nil || !cmp.Equal(names, []string{"tunbench-r1-agent-node1",
		"tunbench-r1-agent-node2 (forced: node node2 did not confirm: it is not Ready (KubeletReady); its containers go when its kubelet is back)"}) {
		t.Errorf("DeleteRun = %v, %v", names, err)
	}
	if err := c.WaitRunning(ctx, a); err == nil || !strings.Contains(err.Error(), "was deleted before it ran") {
		t.Errorf("WaitRunning(deleted) = %v", err)
	}
	if runs, err := c.Runs(ctx); err != nil || len(runs) != 0 {
		t.Errorf("Runs after DeleteRun = %v, %v", runs, err)
	}
}

// The Host's Done fires when its pod is deleted, naming the pod and node.
func TestHostPodDeleted(t *testing.T) {
	cs := fake.NewClientset(node("node1", corev1.ConditionTrue))
	c := newCluster(cs, "")
	ctx := testCtx(t, 20*time.Second)
	p, err := c.CreatePod(ctx, PodSpec{Node: "node1", RunID: "r2", Role: RoleAgent, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Host(p, "node1")
	defer h.Close()
	time.Sleep(100 * time.Millisecond) // the watch is set up
	if err := h.Err(); err != nil {
		t.Fatalf("Err before the deletion = %v", err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5s after the pod was deleted")
	}
	want := "remotehost: host node1: connection lost: pod default/tunbench-r2-agent-node1 on node node1: the pod was deleted"
	if !errors.Is(h.Err(), remotehost.ErrConnectionLost) || h.Err().Error() != want {
		t.Errorf("Err = %v, want %s", h.Err(), want)
	}
}

// A node whose kubelet stopped posting status loses its Hosts.
func TestHostNodeUnknown(t *testing.T) {
	cs := fake.NewClientset(node("node1", corev1.ConditionTrue))
	c := newCluster(cs, "")
	c.timings.NodeCheck = 50 * time.Millisecond
	ctx := testCtx(t, 20*time.Second)
	p, err := c.CreatePod(ctx, PodSpec{Node: "node1", RunID: "r3", Role: RoleAgent, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Host(p, "node1")
	defer h.Close()
	time.Sleep(200 * time.Millisecond)
	if err := h.Err(); err != nil {
		t.Fatalf("Err while the node is ready = %v", err)
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node("node1", corev1.ConditionUnknown), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5s after the node went Unknown")
	}
	if !strings.Contains(h.Err().Error(), "pod default/tunbench-r3-agent-node1 on node node1: the node's kubelet stopped posting its status") {
		t.Errorf("Err = %v", h.Err())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(Config{Kubeconfig: filepath.Join(dir, "nope")}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Open(missing file) = %v", err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://198.19.200.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: x}
contexts:
- name: lab-admin
  context: {cluster: lab, user: admin}
- name: lab-other
  context: {cluster: lab, user: admin}
current-context: lab-admin
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{Kubeconfig: kc, Context: "prod"})
	if want := `kubehost: kubeconfig ` + kc + ` has no context "prod": it has lab-admin, lab-other`; err == nil || err.Error() != want {
		t.Errorf("Open(unknown context) = %v\nwant %s", err, want)
	}
	c, err := Open(Config{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Namespace() != "default" || c.rest.Host != "https://198.19.200.1:6443" {
		t.Errorf("Open: namespace %q, host %q", c.Namespace(), c.rest.Host)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	if _, err := Open(Config{}); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("Open($KUBECONFIG absent) = %v", err)
	}
}

// DeleteRun forces what no kubelet confirms: a pod on a Ready node whose
// graceful deletion does not end within Timings.ForceAfter is deleted with grace
// period 0, and its name says so.
func TestDeleteRunForcesUnconfirmed(t *testing.T) {
	cs := fake.NewClientset(node("node1", corev1.ConditionTrue), node("node2", corev1.ConditionTrue))
	var graceful, forced []string
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		if g := d.GetDeleteOptions().GracePeriodSeconds; g != nil && *g == 0 {
			forced = append(forced, d.GetName())
			return false, nil, nil // the tracker deletes it
		}
		graceful = append(graceful, d.GetName())
		if strings.HasSuffix(d.GetName(), "node2") {
			return true, nil, nil // node2's kubelet never confirms
		}
		return false, nil, nil
	})
	c := newCluster(cs, "")
	ctx := testCtx(t, 20*time.Second)
	for _, n := range []string{"node1", "node2"} {
		if _, err := c.CreatePod(ctx, PodSpec{Node: n, RunID: "r2", Role: RoleAgent, Image: "img"}); err != nil {
			t.Fatal(err)
		}
	}
	c.timings.ForceAfter = 300 * time.Millisecond
	start := time.Now()
	names, err := c.DeleteRun(ctx, "r2")
	took := time.Since(start)
	want := []string{"tunbench-r2-agent-node1",
		"tunbench-r2-agent-node2 (forced: node node2 did not confirm: the pod was still there 300ms after its deletion; its containers go when its kubelet is back)"}
	if err != nil || !cmp.Equal(names, want) {
		t.Errorf("DeleteRun = %q, %v\nwant %q", names, err, want)
	}
	if !cmp.Equal(graceful, []string{"tunbench-r2-agent-node1", "tunbench-r2-agent-node2"}) || !cmp.Equal(forced, []string{"tunbench-r2-agent-node2"}) {
		t.Errorf("deleted gracefully %v, by force %v; want both gracefully first, node2's by force after", graceful, forced)
	}
	if took > 5*time.Second {
		t.Errorf("DeleteRun took %s", took)
	}
	if runs, err := c.Runs(ctx); err != nil || len(runs) != 0 {
		t.Errorf("Runs after DeleteRun = %v, %v", runs, err)
	}
}
