package cli

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killAgents SIGKILLs the tunbench agents in namespace ns, the serving
// one ("agent --detached") of each session first: killed the other way
// round, sshd (or a pod's exec stream) ends the session once its own
// process is gone, the serving agent sees its input end and puts the
// host back from its journal before its own SIGKILL arrives (on a loaded
// machine it did, in CI, over ssh and in a pod).
func killAgents(ns string) {
	var serving, sessions []int
	for _, pid := range agentPids(ns) {
		if detachedAgent(pid) {
			serving = append(serving, pid)
		} else {
			sessions = append(sessions, pid)
		}
	}
	for _, pid := range append(serving, sessions...) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// detachedAgent says whether pid is an agent serving from a session of
// its own ("tunbench agent --detached").
func detachedAgent(pid int) bool {
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return slices.Contains(strings.Split(string(cmdline), "\x00"), "--detached")
}

// agentPids are the tunbench agents running in namespace ns.
func agentPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		cmdline, _ := os.ReadFile("/proc/" + f + "/cmdline")
		args := strings.Split(string(cmdline), "\x00")
		if len(args) >= 2 && args[1] == "agent" {
			var pid int
			fmt.Sscan(f, &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

// agentsLeft waits up to within until no tunbench agent runs in the
// namespaces, and returns how many still do.
func agentsLeft(within time.Duration, namespaces ...string) int {
	deadline := time.Now().Add(within)
	for {
		n := 0
		for _, ns := range namespaces {
			n += len(agentPids(ns))
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitAgentsGone fails t unless every agent in the namespaces is gone
// within (they go once their controller is killed, after putting their
// hosts back; until then clean leaves the run alone as alive).
func waitAgentsGone(t *testing.T, within time.Duration, namespaces ...string) {
	t.Helper()
	if n := agentsLeft(within, namespaces...); n > 0 {
		t.Fatalf("%d agents still running %s after their controller was killed", n, within)
	}
}
