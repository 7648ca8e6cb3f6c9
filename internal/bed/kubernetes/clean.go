package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/kubehost"
	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/testbed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Clean cleans what runs left in the scenario's cluster by hand: for run
// id (every run whose agents are gone when id is empty), "tunbench clean
// --run ID --site NAME" on every node and ordinary pod the run still has
// a pod on (with id given, on every node of the scenario: a node whose
// pod is gone, deleted by force while its kubelet was away, gets a pod of
// the run for the cleaning), then the run's pods are deleted. A run
// whose agent still holds its lock on a node is alive and left alone
// unless named with id. It returns what it did, one line each.
func Clean(ctx context.Context, cfg Config, id string) ([]string, error) {
	cl, err := openCluster(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	runs := []string{id}
	if id == "" {
		if runs, err = cl.Runs(ctx); err != nil {
			return nil, err
		}
	}
	var out []string
	var errs []error
	for _, run := range runs {
		lines, err := cleanRun(ctx, cl, cfg, run, id == "")
		out = append(out, lines...)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", run, err))
		}
	}
	if len(out) == 0 && len(errs) == 0 {
		out = append(out, "nothing to clean")
	}
	return out, errors.Join(errs...)
}

// cleanRun cleans one run; unlessLive leaves a live run alone.
func cleanRun(ctx context.Context, cl *kubehost.Cluster, cfg Config, run string, unlessLive bool) ([]string, error) {
	list, err := cl.Clientset().CoreV1().Pods(cl.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: kubehost.LabelRun + "=" + run})
	if err != nil {
		return nil, fmt.Errorf("list its pods: %w", err)
	}
	agents := map[string]*kubehost.Pod{}
	workloads := map[string]*kubehost.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		kp := &kubehost.Pod{Name: p.Name, Namespace: p.Namespace, Node: p.Spec.NodeName, RunID: run, Role: p.Labels[kubehost.LabelRole], UID: p.UID}
		switch kp.Role {
		case kubehost.RoleAgent:
			agents[kp.Node] = kp
		case kubehost.RoleWorkload:
			workloads[kp.Node] = kp
		}
	}
	t := &Testbed{cfg: cfg, cl: cl, sites: map[string]*site{}}
	if unlessLive {
		for node, p := range agents {
			if live(ctx, cl.Host(p, node, t.prefix()...), run) {
				return []string{fmt.Sprintf("run %s: its agent on node %s is alive; left alone (name it with --run to clean it anyway)", run, node)}, nil
			}
		}
	}
	var out []string
	var errs []error
	if !unlessLive {
		// A run named by hand is cleaned on every node of the scenario:
		// one whose pod is gone (deleted by force while its kubelet was
		// away) gets a pod of the run for the cleaning.
		for _, n := range cfg.Kube.Nodes {
			if agents[n.Name] != nil {
				continue
			}
			p, err := cleaningPod(ctx, cl, cfg, run, n.Name)
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
				continue
			}
			agents[n.Name] = p
		}
	}
	hosts := &ssh.Section{Dir: cfg.Kube.Dir, Binary: cfg.Kube.Binary}
	for node, p := range agents {
		t.sites[node] = &site{name: node, node: node, agent: p}
		hosts.Sites = append(hosts.Sites, ssh.Site{Name: node})
		if w := workloads[node]; w != nil {
			t.sites[PodSite(node)] = &site{name: PodSite(node), node: node, agent: p, workload: w}
			hosts.Sites = append(hosts.Sites, ssh.Site{Name: PodSite(node)})
		}
	}
	if len(hosts.Sites) > 0 {
		lines, err := ssh.OnEachSite(ctx, ssh.Config{SSH: hosts, ID: run, BuildID: cfg.BuildID, Version: cfg.Version, Binary: cfg.Binary,
			Connect: func(ctx context.Context, st ssh.Site) (*remotehost.Host, ssh.Site, error) {
				s := t.sites[st.Name]
				if s.workload == nil {
					return t.nodeHost(s), st, nil
				}
				h, err := t.podHost(ctx, s)
				return h, st, err
			}}, func(site string) []string { return []string{"clean", "--run", run, "--site", site} })
		out = append(out, lines...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	deleted, err := cl.DeleteRun(ctx, run)
	for _, d := range deleted {
		out = append(out, "deleted pod "+cl.Namespace()+"/"+d)
	}
	return out, errors.Join(append(errs, err)...)
}

// live reports whether run's agent holds its lock on h's node.
func live(ctx context.Context, h *remotehost.Host, run string) bool {
	defer h.Close()
	lock := path.Join(testbed.LockDir, run+".lock")
	out, _, err := h.Run(ctx, "sh", "-c", `[ -e "$1" ] || { echo dead; exit 0; }; command -v flock >/dev/null || { echo live; exit 0; }; if flock -n "$1" true; then echo dead; else echo live; fi`, "sh", lock)
	return err != nil || strings.TrimSpace(string(out)) != "dead"
}

// cleaningPod makes an agent pod of run on node, for cleaning what the
// run left there, and waits until it runs.
func cleaningPod(ctx context.Context, cl *kubehost.Cluster, cfg Config, run, node string) (*kubehost.Pod, error) {
	ni, err := cl.Node(ctx, node)
	if err != nil {
		return nil, err
	}
	if !ni.Ready {
		return nil, fmt.Errorf("not Ready (%s: %s): clean it once it is back", ni.ReadyReason, ni.ReadyMessage)
	}
	p, err := cl.CreatePod(ctx, kubehost.PodSpec{Node: node, RunID: run, Role: kubehost.RoleAgent, Image: cfg.Kube.ImageOrDefault()})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, PodStartTimeout)
	defer cancel()
	if err := cl.WaitRunning(wctx, p); err != nil {
		return nil, err
	}
	return p, nil
}
