package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
)

// TestSSHCleanSeparateHosts: a run with host_changes over two hosts with
// file systems of their own (sshtest.PrivateFiles) is SIGKILLed while a
// cell's load runs on hosts at MTU 9000 with offloads off, and then
// "tunbench clean --testbed ssh -f" runs as a user runs it: the built
// binary, no ssh.binary in the scenario (it copies itself to each host).
// Every host is then exactly as before (hostState).
//
//   - controller: the agents see their sessions end and put their hosts
//     back themselves, before clean (the issue-30 bug: an agent writing
//     a process's output or exit to its dead session died of SIGPIPE and
//     left the device changed).
//   - session: first the agents' ssh sessions are ended as sshd or a
//     session manager may end them (SIGHUP, then SIGKILL to the
//     session's process group): the agent serves from a session of its
//     own, outlives that and still puts its host back by itself.
//   - agents: every agent process is SIGKILLed too, so only clean can
//     put the hosts back, from the journals on each host.
func TestSSHCleanSeparateHosts(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	needEthtool(t)
	bin := tunbenchBinary(t)
	for _, victim := range []string{"controller", "session", "agents"} {
		t.Run(victim, func(t *testing.T) {
			t.Parallel()
			sites := sshtest.New(t, 2, sshtest.Management(), sshtest.PrivateFiles())
			addrsSettled(t, sites)
			before := [][]string{hostState(t, sites, sites.Site[0]), hostState(t, sites, sites.Site[1])}
			scen := chaosSSHYAML(t, sites, []string{"vxlan"}, "30s", "mtus: [9000]\noffloads: [off]\n")
			db := t.TempDir() + "/r.db"
			cmd := exec.Command("ip", "netns", "exec", sites.Control, bin, "run", "-f", scen, "--db", db)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killController := func() {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				_ = cmd.Wait()
			}
			deadline := time.Now().Add(90 * time.Second)
			for !measuringIn(sites.Site[1].Namespace) || !measuringIn(sites.Site[0].Namespace) {
				if time.Now().After(deadline) {
					killController()
					t.Fatalf("no load ran within 90 s:\n%s", out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Second)
			for i, st := range sites.Site {
				if now := devState(t, st); now[0] != "mtu 9000" || feature(now, "tcp-segmentation-offload") != "off" {
					t.Fatalf("site %d during the load: %v; want MTU 9000 and offloads off", i, now[:3])
				}
			}
			switch victim {
			case "session":
				for _, st := range sites.Site {
					for _, pid := range agentSessions(st.Namespace) {
						_ = syscall.Kill(-pid, syscall.SIGHUP)
						_ = syscall.Kill(-pid, syscall.SIGKILL)
					}
				}
			case "agents":
				// The controller is stopped first: killing one site's
				// agents before the other's, a running controller saw
				// the first go and had the second put its host back
				// (a clean-clone run), leaving clean nothing to do there.
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGSTOP)
				for _, st := range sites.Site {
					killAgents(st.Namespace)
				}
			}
			killController()
			waitAgentsGone(t, 15*time.Second, sites.Site[0].Namespace, sites.Site[1].Namespace)
			if victim != "agents" {
				for i, st := range sites.Site {
					if diff := cmp.Diff(before[i], hostState(t, sites, st)); diff != "" {
						t.Errorf("site %d once its agent is gone, before clean (-before +now):\n%s", i, diff)
					}
				}
			}
			cout, err := exec.Command("ip", "netns", "exec", sites.Control, bin, "clean", "--testbed", "ssh", "-f", scen).CombinedOutput()
			if err != nil {
				t.Fatalf("clean --testbed ssh: %v\n%s", err, cout)
			}
			t.Logf("clean --testbed ssh:\n%s", cout)
			if victim == "agents" && strings.Count(string(cout), "mtu 9000 → 1500") != 2 {
				t.Errorf("clean does not say it put both devices back:\n%s", cout)
			}
			for i, st := range sites.Site {
				if diff := cmp.Diff(before[i], hostState(t, sites, st)); diff != "" {
					t.Errorf("site %d after clean (-before +after):\n%s", i, diff)
				}
			}
		})
	}
}

// agentSessions returns the process groups of the ssh sessions running
// "tunbench agent" in namespace ns: the session's own process (sshd
// execs it), which leads its group, not the agent serving from a session
// of its own ("agent --detached").
func agentSessions(ns string) []int {
	var pids []int
	for _, pid := range agentPids(ns) {
		if !detachedAgent(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
