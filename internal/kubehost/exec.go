package kubehost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"
)

// Host returns an *remotehost.Host named name whose commands run in pod's
// container through the exec subresource, as prefix followed by
// ["/bin/sh", "-c", CMD] (CMD is what remotehost builds). For an agent pod,
// prefix ["chroot", "/host"] runs the node's own tools, and ["chroot",
// "/host", "nsenter", "-t", PID, "-n"] runs them in another network
// namespace; the prefix must exec the shell, not fork it (chroot and
// nsenter without -p do), since the shell must stay the process group
// leader the container runtime made it.
//
// The Host's Done is closed, with an error naming the pod and node, when
// the pod is deleted or ends (eviction), when its node's Ready turns
// Unknown (the kubelet stopped posting status), or when a stream breaks
// without an exit status and a new exec cannot be opened (the kubelet
// does not answer: Timings.NodeCheck). Close the Host to stop watching.
func (c *Cluster) Host(pod *Pod, name string, prefix ...string) *remotehost.Host {
	ctx, cancel := context.WithCancel(context.Background())
	t := &execTransport{c: c, pod: pod, prefix: append([]string(nil), prefix...), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go t.watch()
	return remotehost.NewHost(remotehost.Config{Name: name}, t)
}

// execTransport is an remotehost.Transport over a pod's exec subresource.
type execTransport struct {
	c      *Cluster
	pod    *Pod
	prefix []string
	ctx    context.Context // ends with the transport
	cancel context.CancelFunc

	done chan struct{}
	once sync.Once
	err  error // set before done is closed
}

func (t *execTransport) fail(err error) {
	t.once.Do(func() {
		t.err = err
		close(t.done)
		t.cancel()
	})
}

func (t *execTransport) lostf(format string, args ...any) {
	t.fail(fmt.Errorf("%s: %s", t.pod, fmt.Sprintf(format, args...)))
}

func (t *execTransport) Wait() error {
	<-t.done
	return t.err
}

func (t *execTransport) Close() error {
	t.fail(errors.New("closed"))
	return nil
}

// watch follows the pod (deleted, replaced, ending) and the node's Ready
// condition until the transport ends.
func (t *execTransport) watch() {
	pods := t.c.cs.CoreV1().Pods(t.pod.Namespace)
	nodeTick := time.NewTicker(t.c.timings.NodeCheck)
	defer nodeTick.Stop()
	for t.ctx.Err() == nil {
		p, err := pods.Get(t.ctx, t.pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.lostf("the pod was deleted")
			return
		}
		if err != nil {
			if !t.pause(time.Second) {
				return
			}
			continue
		}
		if t.check(p) {
			return
		}
		w, err := pods.Watch(t.ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", t.pod.Name).String(),
			ResourceVersion: p.ResourceVersion,
		})
		if err != nil {
			if !t.pause(time.Second) {
				return
			}
			continue
		}
		if t.follow(w, nodeTick.C) {
			w.Stop()
			return
		}
		w.Stop()
	}
}

func (t *execTransport) pause(d time.Duration) bool {
	select {
	case <-t.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// follow reads w until it closes (false) or the transport is lost (true).
func (t *execTransport) follow(w watch.Interface, nodeTick <-chan time.Time) bool {
	for {
		select {
		case <-t.ctx.Done():
			return true
		case <-nodeTick:
			if t.checkNode() || t.checkKubelet() {
				return true
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				return false
			}
			if p.Name != t.pod.Name {
				continue
			}
			if ev.Type == watch.Deleted {
				t.lostf("the pod was deleted")
				return true
			}
			if t.check(p) {
				return true
			}
		}
	}
}

// check reports (and fails the transport) when p is gone for commands.
func (t *execTransport) check(p *corev1.Pod) bool {
	switch {
	case t.pod.UID != "" && p.UID != t.pod.UID:
		t.lostf("the pod was deleted and replaced")
	case p.DeletionTimestamp != nil:
		t.lostf("the pod is being deleted")
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		msg := fmt.Sprintf("the pod ended (phase %s", p.Status.Phase)
		if p.Status.Reason != "" {
			msg += ", " + p.Status.Reason
		}
		if p.Status.Message != "" {
			msg += ": " + p.Status.Message
		}
		t.lostf("%s)", msg)
	default:
		return false
	}
	return true
}

func (t *execTransport) checkNode() bool {
	ctx, cancel := context.WithTimeout(t.ctx, t.c.timings.NodeCheck)
	defer cancel()
	n, err := t.c.cs.CoreV1().Nodes().Get(ctx, t.pod.Node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.lostf("the node was removed from the cluster")
		return true
	}
	if err != nil {
		return false
	}
	ni := nodeInfo(n)
	if ni.ReadyReason == "Unknown" || (!ni.Ready && ni.ReadyReason == "NodeStatusUnknown") {
		t.lostf("the node's kubelet stopped posting its status (Ready %s: %s)", ni.ReadyReason, ni.ReadyMessage)
		return true
	}
	return false
}

// checkKubelet asks the node's kubelet, through the API server, for none
// of the pod's log lines: a cheap request that fails when the kubelet
// does not answer (an open exec stream need not break then). A failure is
// confirmed by an exec probe before the transport counts as lost.
func (t *execTransport) checkKubelet() bool {
	ctx, cancel := context.WithTimeout(t.ctx, t.c.timings.Probe)
	defer cancel()
	_, err := t.c.cs.CoreV1().Pods(t.pod.Namespace).GetLogs(t.pod.Name, &corev1.PodLogOptions{
		Container: ContainerName, TailLines: ptr.To[int64](0),
	}).DoRaw(ctx)
	if err == nil || t.ctx.Err() != nil || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return false
	}
	t.probe(fmt.Errorf("the kubelet's log endpoint fails: %w", err))
	return t.ctx.Err() != nil
}

// executor opens the exec stream of argv: WebSocket, falling back to SPDY
// when the upgrade fails, as kubectl does.
func (t *execTransport) executor(argv []string) (remotecommand.Executor, error) {
	req := t.c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(t.pod.Namespace).Name(t.pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: ContainerName,
		Command:   argv,
		Stdin:     true,
		Stdout:    true,
		Stderr:    true,
	}, scheme.ParameterCodec)
	u := req.URL()
	spdy, err := remotecommand.NewSPDYExecutor(t.c.rest, "POST", u)
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(t.c.rest, "GET", u.String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

func (t *execTransport) NewSession() (remotehost.TransportSession, error) {
	select {
	case <-t.done:
		return nil, t.err
	default:
	}
	ctx, cancel := context.WithCancel(t.ctx)
	return &execSession{t: t, ctx: ctx, cancel: cancel, waited: make(chan struct{})}, nil
}

// probe execs "true" in the pod: it tells a kubelet that does not answer
// (the transport is lost) from a stream that broke alone.
func (t *execTransport) probe(cause error) {
	ex, err := t.executor(append(append([]string(nil), t.prefix...), "/bin/sh", "-c", "true"))
	if err == nil {
		ctx, cancel := context.WithTimeout(t.ctx, t.c.timings.Probe)
		defer cancel()
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	}
	if err == nil || t.ctx.Err() != nil {
		return
	}
	var ce utilexec.ExitError
	if errors.As(err, &ce) {
		return
	}
	t.lostf("%v, and a new exec fails: %v (does the node's kubelet answer?)", cause, err)
}

// execSession is one exec stream.
type execSession struct {
	t      *execTransport
	ctx    context.Context
	cancel context.CancelFunc

	stdinR  *io.PipeReader
	stdinW  *io.PipeWriter
	stdoutR *io.PipeReader
	stdoutW *io.PipeWriter

	waited chan struct{}
	err    error
	closed bool
	mu     sync.Mutex
}

func (s *execSession) StdinPipe() (io.WriteCloser, error) {
	s.stdinR, s.stdinW = io.Pipe()
	return s.stdinW, nil
}

func (s *execSession) StdoutPipe() (io.Reader, error) {
	s.stdoutR, s.stdoutW = io.Pipe()
	return s.stdoutR, nil
}

func (s *execSession) Start(cmd string, stdin io.Reader, stdout, stderr io.Writer) error {
	argv := append(append([]string(nil), s.t.prefix...), "/bin/sh", "-c", cmd)
	ex, err := s.t.executor(argv)
	if err != nil {
		return err
	}
	if s.stdinR != nil {
		stdin = s.stdinR
	} else if stdin == nil {
		stdin = strings.NewReader("")
	}
	if s.stdoutW != nil {
		stdout = s.stdoutW
	} else if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	go func() {
		err := ex.StreamWithContext(s.ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
		var ce utilexec.ExitError
		switch {
		case err == nil && s.ctx.Err() != nil:
			// A stream cut by its context (Close, or the transport
			// lost) may end without an error: no exit status came.
			cause := s.ctx.Err()
			if s.t.ctx.Err() != nil {
				<-s.t.done
				cause = s.t.err
			}
			err = fmt.Errorf("%w: %v", remotehost.ErrNoExitStatus, cause)
		case err == nil:
			// A stream whose kubelet died ends as a zero exit does (no
			// status on the error channel reads as success): make sure
			// the kubelet still answers.
			if s.t.checkKubelet() {
				<-s.t.done
				err = fmt.Errorf("%w: %v", remotehost.ErrNoExitStatus, s.t.err)
			}
		case errors.As(err, &ce):
			err = &remotehost.StatusError{Status: ce.ExitStatus()}
		default:
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if !closed && s.t.ctx.Err() == nil {
				s.t.probe(fmt.Errorf("a stream broke (%w)", err))
			}
			err = fmt.Errorf("%w: %s: %v", remotehost.ErrNoExitStatus, s.t.pod, err)
		}
		if s.stdoutW != nil {
			s.stdoutW.Close()
		}
		if s.stdinR != nil {
			s.stdinR.Close()
		}
		s.err = err
		close(s.waited)
	}()
	return nil
}

func (s *execSession) Wait() error {
	<-s.waited
	return s.err
}

// Close ends the stream; the command goes on unless it exits on EOF
// (the Host kills its process group itself).
func (s *execSession) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	if s.stdinW != nil {
		s.stdinW.Close()
	}
	if s.stdoutR != nil {
		// A stream blocked writing output nobody reads must end.
		s.stdoutR.Close()
	}
	return nil
}
