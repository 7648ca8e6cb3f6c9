package kubehost_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/kubehost"
	"github.com/tunbench/tunbench/internal/kubehost/kubetest"
	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fakeVersion is what this test binary prints when it runs as
// ".../tunbench version" (InstallSelf uploads it as tunbench).
const fakeVersion = "v0.0.0-kubetest"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "tunbench" && len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("tunbench %s (%s)\n", fakeVersion, runtime.Version())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// marker makes the remote commands of this test recognisable in /proc.
const marker = "4242.25"

// TestRealCluster drives a real two-node cluster (kubetest) through
// kubehost: access checks, agent pods on both nodes, Hosts over exec
// streams, a pod deleted under a running command, and the run's removal.
func TestRealCluster(t *testing.T) {
	kc := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() { checkNoMarker(t) })

	c, err := kubehost.Open(kubehost.Config{Kubeconfig: kc.Kubeconfig, Dial: kc.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	t.Run("CheckAccess", func(t *testing.T) {
		if err := c.CheckAccess(ctx); err != nil {
			t.Errorf("admin: %v", err)
		}
		u, err := kubehost.Open(kubehost.Config{Kubeconfig: kc.UserKubeconfig("alice"), Dial: kc.Dial, Namespace: "bench"})
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		err = u.CheckAccess(ctx)
		t.Logf("alice: %v", err)
		for _, want := range []string{"get nodes (cluster scope)", "create pods (namespace bench)", "watch pods (namespace bench)",
			"delete pods (namespace bench)", "create pods/exec (namespace bench)", "kind: Role  # in namespace bench", "kind: ClusterRole"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("CheckAccess of a user without rights = %v, want it to name %q", err, want)
			}
		}
	})

	t.Run("Node", func(t *testing.T) {
		ni, err := c.Node(ctx, "node1")
		if err != nil {
			t.Fatal(err)
		}
		if ni.InternalIP4 != kc.Nodes[0].IP.Addr().String() || !ni.Ready || ni.KubeletVersion != "v1.34.4" || !strings.HasPrefix(ni.ContainerRuntime, "containerd://") || ni.Kernel == "" {
			t.Errorf("Node(node1) = %+v", ni)
		}
		if _, err := c.Node(ctx, "node9"); err == nil || !strings.Contains(err.Error(), "the cluster has node1, node2") {
			t.Errorf("Node(node9) = %v", err)
		}
	})

	// One agent pod per node, Running and answering an exec.
	const run = "kt1"
	var pods []*kubehost.Pod
	var hosts []*remotehost.Host
	begin := time.Now()
	for _, n := range kc.Nodes {
		p, err := c.CreatePod(ctx, kubehost.PodSpec{Node: n.Name, RunID: run, Role: kubehost.RoleAgent, Image: kc.Image})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	if err := c.WaitRunning(ctx, pods...); err != nil {
		t.Fatal(err)
	}
	running := time.Since(begin)
	for _, p := range pods {
		h := c.Host(p, p.Node, "chroot", kubehost.HostRoot)
		t.Cleanup(func() { h.Close() })
		hosts = append(hosts, h)
		out, _, err := h.Run(ctx, "uname", "-n")
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			t.Errorf("%s: uname -n printed nothing", p.Node)
		}
	}
	ready := time.Since(begin)
	t.Logf("agent pods Running on both nodes %v after creation, answering exec after %v", running.Round(time.Millisecond), ready.Round(time.Millisecond))
	// The under-10-s target is the kubernetes testbed benchmark's
	// (docs/performance.md), not this test's: a loaded machine stretches it.
	if runs, err := c.Runs(ctx); err != nil || len(runs) != 1 || runs[0] != run {
		t.Errorf("Runs = %v, %v", runs, err)
	}
	h := hosts[0]
	dir := t.TempDir()

	t.Run("Run", func(t *testing.T) {
		out, errb, err := h.Run(ctx, "sh", "-c", "echo out; echo err >&2")
		if err != nil || string(out) != "out\n" || string(errb) != "err\n" {
			t.Errorf("Run = %q, %q, %v", out, errb, err)
		}
		_, _, err = h.Run(ctx, "sh", "-c", "echo oops >&2; exit 3")
		var ee *remotehost.ExitError
		if !errors.As(err, &ee) || ee.Status != 3 || string(ee.Stderr) != "oops\n" {
			t.Errorf("Run(exit 3) = %v, want exit status 3 with stderr oops", err)
		}
		// The shell leads its own process group: kill -- -$$ works.
		out, _, err = h.Run(ctx, "sh", "-c", `echo $$ $(cut -d" " -f5 /proc/$$/stat)`)
		if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[0] != f[1] {
			t.Errorf("pid and pgid of the exec'd shell = %q, %v; want equal", out, err)
		}
	})

	t.Run("CancelKillsGroup", func(t *testing.T) {
		pidFile := filepath.Join(dir, "pids")
		runCtx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, _, err := h.Run(runCtx, "sh", "-c", `sleep `+marker+` & echo $$ $! > "$1"; wait`, "sh", pidFile)
			errc <- err
		}()
		pids := sshtest.WaitPids(t, pidFile, 10*time.Second)
		start := time.Now()
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled Run = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cancelled Run did not return within 5s")
		}
		for _, pid := range pids {
			sshtest.WaitDead(t, pid, 5*time.Second)
		}
		t.Logf("cancelled command and its child gone %v after cancel", time.Since(start).Round(time.Millisecond))
	})

	t.Run("Files", func(t *testing.T) {
		p := filepath.Join(dir, "sub", "f")
		if _, _, err := h.Run(ctx, "mkdir", "-p", filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte("tunbench\x00\xff"), 100000)
		if err := h.WriteFile(ctx, p, bytes.NewReader(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := h.ReadFile(ctx, p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadFile = %d bytes, %v; want %d bytes", len(got), err, len(data))
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o640 {
			t.Errorf("stat %s = %v, %v", p, st, err)
		}
		if _, err := h.ReadFile(ctx, p+".none"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(missing) = %v, want fs.ErrNotExist", err)
		}
		names, err := h.FileNames(ctx, filepath.Join(dir, "sub"))
		if err != nil || len(names) != 1 || names[0] != p {
			t.Errorf("FileNames = %v, %v", names, err)
		}
		missing, err := h.MissingTools(ctx, []remotehost.Tool{{Program: "sh"}, {Program: "no-such-tool-kt"}})
		if err != nil || len(missing) != 1 || missing[0].Program != "no-such-tool-kt" {
			t.Errorf("MissingTools = %v, %v", missing, err)
		}
	})

	t.Run("InstallSelf", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		remote, err := h.InstallSelf(ctx, filepath.Join(dir, "bin"), fakeVersion, self)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("InstallSelf of a %d MB binary: %v", fileSize(self)>>20, time.Since(start).Round(time.Millisecond))
		out, _, err := h.Run(ctx, remote, "version")
		if err != nil || !strings.HasPrefix(string(out), "tunbench "+fakeVersion) {
			t.Errorf("%s version = %q, %v", remote, out, err)
		}
	})

	t.Run("Start", func(t *testing.T) {
		sess, err := h.Start(ctx, "cat")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		for i := 0; i < 50; i++ {
			msg := fmt.Sprintf("%05d", i)
			if _, err := sess.Stdin.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(sess.Stdout, buf); err != nil || string(buf) != msg {
				t.Fatalf("echo %d: got %q, %v", i, buf, err)
			}
		}
		sess.Stdin.Close()
		waited := make(chan error, 1)
		go func() { waited <- sess.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("cat after EOF: %v", err)
			}
		case <-time.After(10 * time.Second):
			sess.Close()
			t.Fatal("cat did not exit within 10s of stdin's EOF")
		}

		sess, err = h.Start(ctx, "sleep", marker)
		if err != nil {
			t.Fatal(err)
		}
		if sess.Pid <= 1 {
			t.Fatalf("Session.Pid = %d", sess.Pid)
		}
		sess.Close()
		sshtest.WaitDead(t, sess.Pid, 5*time.Second)
		var ee *remotehost.ExitError
		if err := sess.Wait(); !errors.As(err, &ee) {
			t.Errorf("Wait after Close = %v, want an exit status", err)
		}
	})

	t.Run("Workload", func(t *testing.T) {
		p, err := c.CreatePod(ctx, kubehost.PodSpec{Node: "node2", RunID: run, Role: kubehost.RoleWorkload, Image: kc.Image})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WaitRunning(ctx, p); err != nil {
			t.Fatal(err)
		}
		w := c.Host(p, "workload")
		defer w.Close()
		out, _, err := w.Run(ctx, "hostname")
		if err != nil || strings.TrimSpace(string(out)) != p.Name {
			t.Errorf("hostname in the workload pod = %q, %v; want %s", out, err, p.Name)
		}
	})

	t.Run("PodDeleted", func(t *testing.T) {
		h2 := hosts[1]
		sess, err := h2.Start(ctx, "sleep", marker)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := c.Clientset().CoreV1().Pods(c.Namespace()).Delete(ctx, pods[1].Name, deleteNow()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h2.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed 10s after the pod was deleted")
		}
		t.Logf("deleted pod seen after %v: %v", time.Since(start).Round(time.Millisecond), h2.Err())
		if !errors.Is(h2.Err(), remotehost.ErrConnectionLost) || !strings.Contains(h2.Err().Error(), pods[1].Name) || !strings.Contains(h2.Err().Error(), "node2") {
			t.Errorf("Err = %v, want ErrConnectionLost naming the pod and node", h2.Err())
		}
		if err := sess.Wait(); err == nil || !strings.Contains(err.Error(), pods[1].Name) {
			t.Errorf("Wait of the command in the deleted pod = %v, want an error naming the pod", err)
		}
	})

	t.Run("DeleteRun", func(t *testing.T) {
		start := time.Now()
		names, err := c.DeleteRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("DeleteRun removed %v in %v", names, time.Since(start).Round(time.Millisecond))
		if len(names) < 2 {
			t.Errorf("DeleteRun = %v, want at least the agent on node1 and the workload", names)
		}
		if runs, err := c.Runs(ctx); err != nil || len(runs) != 0 {
			t.Errorf("Runs after DeleteRun = %v, %v", runs, err)
		}
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Error("node1's Host not lost 10s after its pod was deleted")
		}
	})
}

func deleteNow() metav1.DeleteOptions {
	return metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// checkNoMarker fails when a process of this test ("sleep 4242.25") is
// left on the machine.
func checkNoMarker(t *testing.T) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), "sleep\x00"+marker) {
			t.Errorf("left behind: process %s: %q", e.Name(), bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		}
	}
}

// A node whose kubelet stops answering loses its Hosts: the open stream
// breaks, and a new exec cannot be opened.
func TestRealClusterKubeletLost(t *testing.T) {
	kc := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { checkNoMarker(t) })
	c, err := kubehost.Open(kubehost.Config{Kubeconfig: kc.Kubeconfig, Dial: kc.Dial, Timings: kubehost.Timings{NodeCheck: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.CreatePod(ctx, kubehost.PodSpec{Node: "node2", RunID: "kt2", Role: kubehost.RoleAgent, Image: kc.Image})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRunning(ctx, p); err != nil {
		t.Fatal(err)
	}
	h := c.Host(p, "node2", "chroot", kubehost.HostRoot)
	defer h.Close()
	sess, err := h.Start(ctx, "sleep", marker)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The node's runtime still runs the command: kill it here, and
		// wait until it is gone (the kill is asynchronous; checkNoMarker
		// looks right after).
		_ = syscall.Kill(-sess.Pid, syscall.SIGKILL)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(sess.Pid), "stat"))
			if err != nil || strings.Contains(string(stat), ") Z ") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	start := time.Now()
	if err := kc.StopKubelet("node2"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("Done not closed 15s after the kubelet stopped")
	}
	t.Logf("lost kubelet seen after %v: %v", time.Since(start).Round(time.Millisecond), h.Err())
	if !errors.Is(h.Err(), remotehost.ErrConnectionLost) || !strings.Contains(h.Err().Error(), p.Name) || !strings.Contains(h.Err().Error(), "node2") {
		t.Errorf("Err = %v, want ErrConnectionLost naming the pod and node", h.Err())
	}
	if err := sess.Wait(); !errors.Is(err, remotehost.ErrConnectionLost) {
		t.Errorf("Wait of the command on the lost node = %v, want ErrConnectionLost", err)
	}
	if _, _, err := h.Run(ctx, "true"); !errors.Is(err, remotehost.ErrConnectionLost) {
		t.Errorf("Run on the lost node = %v, want ErrConnectionLost", err)
	}
}
