package kubehost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// Roles of pods.
const (
	// RoleAgent is a privileged pod in the node's network and pid
	// namespaces with the node's root filesystem at HostRoot: the node
	// itself, for tunbench's agent and the node's tools.
	RoleAgent = "agent"
	// RoleWorkload is an ordinary, unprivileged pod on the cluster
	// network.
	RoleWorkload = "workload"
)

// Paths inside the pods.
const (
	// HostRoot is where an agent pod sees the node's root filesystem.
	HostRoot = "/host"
	// RunDir is the pod's own scratch directory (an emptyDir).
	RunDir = "/run/tunbench"
	// ContainerName is the name of the pods' only container.
	ContainerName = "tunbench"
)

// GracePeriod is the pods' terminationGracePeriodSeconds.
var GracePeriod int64 = 5

// PodSpec says which pod to create.
type PodSpec struct {
	// Node is the node the pod runs on (spec.nodeName: no scheduler).
	Node string
	// RunID labels the pod (tunbench.run) and names it.
	RunID string
	// Role is RoleAgent or RoleWorkload.
	Role string
	// Image is the container image; it must have /bin/sh and sleep.
	Image string
}

// Pod is a pod CreatePod made.
type Pod struct {
	Name, Namespace, Node, RunID, Role string
	UID                                types.UID
}

func (p *Pod) String() string {
	return fmt.Sprintf("pod %s/%s on node %s", p.Namespace, p.Name, p.Node)
}

var (
	runIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)
	nameUnsafe   = regexp.MustCompile(`[^a-z0-9-]+`)
)

// PodName is the name of the pod of spec: tunbench-<run>-<role>-<node>,
// the node part lowercased, made DNS-safe and shortened (with a hash of
// the node's name) so that the whole fits 63 characters.
func PodName(spec PodSpec) string {
	node := strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(spec.Node), "-"), "-")
	name := "tunbench-" + spec.RunID + "-" + spec.Role + "-" + node
	if len(name) > 63 || node != spec.Node {
		sum := sha256.Sum256([]byte(spec.Node))
		h := hex.EncodeToString(sum[:3])
		room := 63 - len("tunbench-"+spec.RunID+"-"+spec.Role+"-") - len(h) - 1
		if room < 0 {
			room = 0
		}
		if len(node) > room {
			node = strings.TrimRight(node[:room], "-")
		}
		name = "tunbench-" + spec.RunID + "-" + spec.Role + "-" + node + "-" + h
		name = strings.ReplaceAll(name, "--", "-")
	}
	return name
}

// Validate checks spec and names the field at fault.
func (spec PodSpec) Validate() error {
	switch {
	case spec.Node == "":
		return errors.New("kubehost: pod spec: node is empty: name the node the pod runs on")
	case !runIDPattern.MatchString(spec.RunID):
		return fmt.Errorf("kubehost: pod spec: run id %q: give 1 to 32 lowercase letters, digits and inner dashes", spec.RunID)
	case spec.Role != RoleAgent && spec.Role != RoleWorkload:
		return fmt.Errorf("kubehost: pod spec: role %q: give %s or %s", spec.Role, RoleAgent, RoleWorkload)
	case spec.Image == "":
		return errors.New("kubehost: pod spec: image is empty: give an image with /bin/sh and sleep")
	}
	return nil
}

// sleepForever is the pods' command: a shell that ends at once on
// SIGTERM (sleep as pid 1 of a pod would ignore it and wait out the grace
// period).
var sleepForever = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; sleep 2147483647 & wait"}

// podObject builds the pod of spec in namespace.
func podObject(spec PodSpec, namespace string) *corev1.Pod {
	labels := map[string]string{LabelApp: AppName, LabelRun: spec.RunID, LabelRole: spec.Role}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(spec), Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      spec.Node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(GracePeriod),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         sleepForever,
				VolumeMounts:    []corev1.VolumeMount{{Name: "run", MountPath: RunDir}},
			}},
			Volumes: []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	ctr := &p.Spec.Containers[0]
	switch spec.Role {
	case RoleAgent:
		p.Spec.HostNetwork = true
		p.Spec.HostPID = true
		p.Spec.DNSPolicy = corev1.DNSDefault
		ctr.SecurityContext = &corev1.SecurityContext{
			Privileged: ptr.To(true),
			Capabilities: &corev1.Capabilities{
				Add: []corev1.Capability{"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "BPF", "PERFMON"},
			},
		}
		// No mount propagation: HostToContainer needs "/" to be a shared
		// or slave mount on the node, which nodes need not have (the
		// kubelet refuses the container otherwise). Mounts the node makes
		// after the pod starts are thus not seen under HostRoot.
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: HostRoot})
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: ptr.To(corev1.HostPathDirectory)},
		}})
	case RoleWorkload:
		ctr.SecurityContext = &corev1.SecurityContext{
			Privileged:               ptr.To(false),
			AllowPrivilegeEscalation: ptr.To(false),
		}
	}
	return p
}

// CreatePod creates the pod of spec. It returns once the API server has
// it; WaitRunning waits for it to run.
func (c *Cluster) CreatePod(ctx context.Context, spec PodSpec) (*Pod, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	obj := podObject(spec, c.namespace)
	got, err := c.cs.CoreV1().Pods(c.namespace).Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("kubehost: create pod %s/%s on node %s: it exists already (a run with id %s is still there: tunbench clean --testbed kubernetes)", c.namespace, obj.Name, spec.Node, spec.RunID)
	}
	if err != nil {
		return nil, fmt.Errorf("kubehost: create pod %s/%s on node %s: %w", c.namespace, obj.Name, spec.Node, err)
	}
	return &Pod{Name: got.Name, Namespace: got.Namespace, Node: spec.Node, RunID: spec.RunID, Role: spec.Role, UID: got.UID}, nil
}

// fatalWaiting are container waiting reasons that do not go away by
// themselves.
var fatalWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true, "PreCreateHookError": true, "PreStartHookError": true,
}

// podState says whether p runs (done, nil), has failed for good (done,
// err), or is still on its way (not done; note says where it stands).
func podState(p *corev1.Pod) (done bool, note string, err error) {
	where := fmt.Sprintf("pod %s/%s on node %s", p.Namespace, p.Name, p.Spec.NodeName)
	if p.DeletionTimestamp != nil {
		return true, "", fmt.Errorf("kubehost: %s is being deleted", where)
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		return true, "", nil
	case corev1.PodFailed, corev1.PodSucceeded:
		msg := fmt.Sprintf("kubehost: %s ended (phase %s)", where, p.Status.Phase)
		if p.Status.Reason != "" {
			msg += ": " + p.Status.Reason
		}
		if p.Status.Message != "" {
			msg += ": " + p.Status.Message
		}
		return true, "", errors.New(msg + containerNotes(p))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			msg := fmt.Sprintf("kubehost: %s: container %s waiting: %s", where, cs.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + w.Message
			}
			if strings.Contains(w.Reason, "Image") {
				msg += fmt.Sprintf(" (image %s: is it present on the node, or can the node pull it?)", cs.Image)
			}
			return true, "", errors.New(msg)
		}
	}
	note = fmt.Sprintf("phase %s", p.Status.Phase)
	if p.Status.Reason != "" {
		note += " (" + p.Status.Reason + ")"
	}
	return false, note + containerNotes(p), nil
}

func containerNotes(p *corev1.Pod) string {
	var s string
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			s += fmt.Sprintf("; container %s waiting (%s)", cs.Name, cs.State.Waiting.Reason)
			if m := cs.State.Waiting.Message; m != "" {
				s += ": " + m
			}
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			s += fmt.Sprintf("; container %s terminated (%s, exit code %d)", cs.Name, t.Reason, t.ExitCode)
			if t.Message != "" {
				s += ": " + t.Message
			}
		}
	}
	return s
}

// WaitRunning watches pods until every one runs. It fails as soon as one
// cannot (deleted, ended, image missing, container failing), naming the
// pod, its node and the reason; when ctx ends first, the error says where
// each pod that does not run stands and whether its node is ready.
func (c *Cluster) WaitRunning(ctx context.Context, pods ...*Pod) error {
	pending := map[string]*Pod{}
	for _, p := range pods {
		pending[p.Name] = p
	}
	notes := map[string]string{}
	sel := labels.Set{LabelApp: AppName}.AsSelector().String()
	for len(pending) > 0 {
		list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			if ctx.Err() != nil {
				return c.waitTimeout(ctx, pending, notes)
			}
			return fmt.Errorf("kubehost: wait for pods: list pods: %w", err)
		}
		seen := map[string]bool{}
		for i := range list.Items {
			p := &list.Items[i]
			seen[p.Name] = true
			if err := c.observe(p, pending, notes); err != nil {
				return err
			}
		}
		for name, p := range pending {
			if !seen[name] {
				return fmt.Errorf("kubehost: %s was deleted before it ran", p)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		w, err := c.cs.CoreV1().Pods(c.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return c.waitTimeout(ctx, pending, notes)
			}
			return fmt.Errorf("kubehost: wait for pods: watch pods: %w", err)
		}
		err = c.watchPending(ctx, w, pending, notes)
		w.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// watchPending follows w until every pending pod runs (nil), one fails
// (its error), ctx ends (the timeout's error) or w closes (nil, to list
// again).
func (c *Cluster) watchPending(ctx context.Context, w watch.Interface, pending map[string]*Pod, notes map[string]string) error {
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return c.waitTimeout(ctx, pending, notes)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				return nil // an error event (410 Gone...): list again
			}
			if ev.Type == watch.Deleted {
				if pp := pending[p.Name]; pp != nil {
					return fmt.Errorf("kubehost: %s was deleted before it ran", pp)
				}
				continue
			}
			if err := c.observe(p, pending, notes); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) observe(p *corev1.Pod, pending map[string]*Pod, notes map[string]string) error {
	want := pending[p.Name]
	if want == nil {
		return nil
	}
	if want.UID != "" && p.UID != want.UID {
		return fmt.Errorf("kubehost: %s was deleted and replaced before it ran", want)
	}
	done, note, err := podState(p)
	if err != nil {
		return err
	}
	if done {
		delete(pending, p.Name)
		return nil
	}
	notes[p.Name] = note
	return nil
}

// waitTimeout words a wait that ctx ended.
func (c *Cluster) waitTimeout(ctx context.Context, pending map[string]*Pod, notes map[string]string) error {
	names := sortedKeys(pending)
	var parts []string
	qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range names {
		p := pending[name]
		s := p.String() + " does not run"
		if n := notes[name]; n != "" {
			s += ": " + n
		}
		if ni, err := c.Node(qctx, p.Node); err != nil {
			s += fmt.Sprintf("; %v", err)
		} else if !ni.Ready {
			s += fmt.Sprintf("; node %s is not ready (%s", p.Node, ni.ReadyReason)
			if ni.ReadyMessage != "" {
				s += ": " + ni.ReadyMessage
			}
			s += ")"
		}
		parts = append(parts, s)
	}
	return fmt.Errorf("kubehost: wait for pods: %w: %s", context.Cause(ctx), strings.Join(parts, "; "))
}

// runSelector selects the pods of run runID ("": of every run).
func runSelector(runID string) string {
	if runID == "" {
		return LabelApp + "=" + AppName + "," + LabelRun
	}
	return labels.Set{LabelApp: AppName, LabelRun: runID}.AsSelector().String()
}

// forcedNote follows the name of a pod DeleteRun deleted by force.
const forcedNote = " (forced: node %s did not confirm: %s; its containers go when its kubelet is back)"

// DeleteRun deletes every pod of run runID (of every run when runID is
// ""), waits until they are gone, and returns their names, sorted. A
// pod's node must confirm its deletion: one whose node is not Ready or
// whose kubelet does not answer is deleted by force (grace period 0) at
// once, and one not gone within Timings.ForceAfter then. The API server then
// forgets the pod and the node's kubelet, once back, stops its
// containers. The name of a pod deleted by force is followed by a note
// saying so and why: "NAME (forced: node X did not confirm: ...)".
func (c *Cluster) DeleteRun(ctx context.Context, runID string) ([]string, error) {
	pods := c.cs.CoreV1().Pods(c.namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: runSelector(runID)})
	if err != nil {
		return nil, fmt.Errorf("kubehost: delete run %s: list pods: %w", runID, err)
	}
	// The nodes that cannot confirm a deletion now.
	silent := map[string]string{}
	checked := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		if n := p.Spec.NodeName; n != "" && !checked[n] {
			checked[n] = true
			if why := c.nodeSilent(ctx, p); why != "" {
				silent[n] = why
			}
		}
	}
	notes := map[string]string{}
	del := func(p *corev1.Pod, force bool) error {
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}
		if force {
			opts.GracePeriodSeconds = ptr.To[int64](0)
		}
		err := pods.Delete(ctx, p.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("kubehost: delete pod %s/%s on node %s: %w", c.namespace, p.Name, p.Spec.NodeName, err)
		}
		return nil
	}
	names := func() []string {
		var out []string
		for _, p := range list.Items {
			out = append(out, p.Name+notes[p.Name])
		}
		sort.Strings(out)
		return out
	}
	for i := range list.Items {
		p := &list.Items[i]
		why, force := silent[p.Spec.NodeName]
		if err := del(p, force); err != nil {
			return names(), err
		}
		if force {
			notes[p.Name] = fmt.Sprintf(forcedNote, p.Spec.NodeName, why)
		}
	}
	// The kubelets confirm, or the pods go by force.
	wctx, cancel := context.WithTimeout(ctx, c.timings.ForceAfter)
	var left []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if err := c.waitGone(wctx, p.Name, p.UID); err != nil {
			if ctx.Err() != nil {
				cancel()
				return names(), err
			}
			left = append(left, p)
		}
	}
	cancel()
	for _, p := range left {
		if err := del(p, true); err != nil {
			return names(), err
		}
		notes[p.Name] = fmt.Sprintf(forcedNote, p.Spec.NodeName, fmt.Sprintf("the pod was still there %s after its deletion", c.timings.ForceAfter))
		if err := c.waitGone(ctx, p.Name, p.UID); err != nil {
			return names(), err
		}
	}
	return names(), nil
}

// nodeSilent says why p's node cannot confirm p's deletion now (its node
// is gone or not Ready, or its kubelet does not answer a request for
// none of p's log lines), or "" when it can.
func (c *Cluster) nodeSilent(ctx context.Context, p *corev1.Pod) string {
	ctx, cancel := context.WithTimeout(ctx, c.timings.Probe)
	defer cancel()
	n, err := c.cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "the node is gone from the cluster"
	case err != nil:
		return "" // cannot tell: wait for it
	}
	if ni := nodeInfo(n); !ni.Ready {
		why := "it is not Ready (" + ni.ReadyReason
		if ni.ReadyMessage != "" {
			why += ": " + ni.ReadyMessage
		}
		return why + ")"
	}
	if p.Status.Phase != corev1.PodRunning {
		return ""
	}
	_, err = c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
		Container: ContainerName, TailLines: ptr.To[int64](0),
	}).DoRaw(ctx)
	if err == nil {
		return ""
	}
	// A status below 500 is an answer (the kubelet's, or a refusal).
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code > 0 && st.Status().Code < 500 {
		return ""
	}
	return fmt.Sprintf("its kubelet does not answer (%v)", err)
}

// DeletePod deletes p at once (grace period 0: it has ended, or is on its
// way out) and waits, at most a minute, until it is gone.
func (c *Cluster) DeletePod(ctx context.Context, p *Pod) error {
	grace := int64(0)
	err := c.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or already another pod of that name
	}
	if err != nil {
		return fmt.Errorf("kubehost: delete %s: %w", p, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return c.waitGone(ctx, p.Name, p.UID)
}

// waitGone waits until pod name with uid no longer exists.
func (c *Cluster) waitGone(ctx context.Context, name string, uid types.UID) error {
	pods := c.cs.CoreV1().Pods(c.namespace)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.UID != uid) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kubehost: wait for pod %s/%s to go: %w", c.namespace, name, err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: p.ResourceVersion})
		if err != nil {
			return fmt.Errorf("kubehost: wait for pod %s/%s on node %s to go: %w", c.namespace, name, p.Spec.NodeName, err)
		}
		gone := false
		func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if ev.Type == watch.Deleted {
						gone = true
						return
					}
				}
			}
		}()
		if gone {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("kubehost: wait for pod %s/%s on node %s to go: %w (phase %s%s)", c.namespace, name, p.Spec.NodeName, context.Cause(ctx), p.Status.Phase, containerNotes(p))
		}
	}
}

// Runs returns the ids of the runs that have pods, sorted.
func (c *Cluster) Runs(ctx context.Context) ([]string, error) {
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: runSelector("")})
	if err != nil {
		return nil, fmt.Errorf("kubehost: list runs: %w", err)
	}
	seen := map[string]bool{}
	for _, p := range list.Items {
		seen[p.Labels[LabelRun]] = true
	}
	return sortedKeys(seen), nil
}
