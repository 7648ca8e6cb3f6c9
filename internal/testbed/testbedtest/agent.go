package testbedtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// agentEnv makes a test binary serve as a tunbench agent (ServeAgentIfAsked).
const agentEnv = "TUNBENCH_TEST_AGENT"

// AgentVersion is the build identity the test agents report.
const AgentVersion = "test-agent"

// ServeAgentIfAsked turns the test binary into an agent when AgentPair
// started it: call it first in TestMain.
func ServeAgentIfAsked() {
	if os.Getenv(agentEnv) != "1" {
		return
	}
	if err := agent.ServeAgent(context.Background(), os.Stdin, os.Stdout, AgentVersion); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Agent is a test agent: the test binary running "tunbench agent" inside
// a namespace, as a remote host's would over SSH.
type Agent struct {
	Conn  *agent.AgentConn
	Hello agent.Hello
	cmd   *exec.Cmd
	// stdin and stdout are the controller's ends of the agent's pipes.
	stdin  io.WriteCloser
	stdout io.ReadCloser
	waited chan struct{}
	state  *os.ProcessState
}

// StartAgent starts an agent inside namespace ns (a process in that
// namespace, like a remote host) and introduces it with h (Version is
// set). The package's TestMain must call ServeAgentIfAsked.
func StartAgent(t testing.TB, ns string, h agent.Hello) *Agent {
	t.Helper()
	a := StartAgentNoHello(t, ns)
	a.Hello = h
	if a.Hello.Version == "" {
		a.Hello.Version = AgentVersion
	}
	if err := a.Conn.Hello(context.Background(), a.Hello); err != nil {
		t.Fatalf("agent in %s: %v", ns, err)
	}
	return a
}

// StartAgentNoHello starts an agent in ns without introducing it.
func StartAgentNoHello(t testing.TB, ns string) *Agent {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startAgent(t, ns, exec.Command("ip", "netns", "exec", ns, exe, "-test.run=^$"))
}

// StartIsolatedAgent is StartAgent for an agent that shares no more with
// this process than a remote host's would: besides the network namespace
// it gets its own mount namespace, in which h.Root is a fresh tmpfs only
// it sees, and its own pid namespace, in which it is pid 1. A method that
// reads or writes the run directory, or a process's /proc entry, from the
// controller rather than through the endpoint fails with it. Everything
// the agent started dies with it, so check for leftovers before closing.
func StartIsolatedAgent(t testing.TB, ns string, h agent.Hello) *Agent {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if h.Root == "" {
		t.Fatal("StartIsolatedAgent: the hello names no run root to make private")
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc",
		"sh", "-c", `mount -t tmpfs -o mode=0700 tunbench-test-agent "$1" && exec ip netns exec "$2" "$3" -test.run='^$'`,
		"sh", h.Root, ns, exe)
	a := startAgent(t, ns, cmd)
	a.Hello = h
	if a.Hello.Version == "" {
		a.Hello.Version = AgentVersion
	}
	if err := a.Conn.Hello(context.Background(), a.Hello); err != nil {
		t.Fatalf("isolated agent in %s: %v", ns, err)
	}
	return a
}

func startAgent(t testing.TB, ns string, cmd *exec.Cmd) *Agent {
	t.Helper()
	cmd.Env = append(os.Environ(), agentEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agent in %s: %v", ns, err)
	}
	a := &Agent{cmd: cmd, stdin: stdin, stdout: stdout, waited: make(chan struct{})}
	go func() {
		// Not cmd.Wait: it would close stdout under the reader.
		a.state, _ = cmd.Process.Wait()
		close(a.waited)
	}()
	var once sync.Once
	a.Conn = agent.NewAgentConn(ns, stdout, stdin, closerFunc(func() error {
		once.Do(func() {
			_ = stdin.Close()
			<-a.waited
			_ = stdout.Close()
		})
		return nil
	}))
	t.Cleanup(func() { _ = a.Conn.Close() })
	return a
}

// Kill kills the agent process, as a lost connection would end it.
func (a *Agent) Kill() { _ = a.cmd.Process.Kill() }

// Vanish does to the agent what sshd does when the controller's
// connection is gone: it closes both ends of the session at once, the
// agent's standard input (EOF) and the reading end of its standard
// output (a write there fails with EPIPE).
func (a *Agent) Vanish() {
	_ = a.stdin.Close()
	_ = a.stdout.Close()
}

// Exited waits up to within for the agent process to end and returns how
// it ended ("exit status 0", "signal: broken pipe"), or "" when it still
// runs.
func (a *Agent) Exited(within time.Duration) string {
	select {
	case <-a.waited:
		return a.state.String()
	case <-time.After(within):
		return ""
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

var _ io.Closer = closerFunc(nil)

// AgentPair builds a local testbed and returns, besides it, a pair of
// remote endpoints on it: an agent in each namespace serves one side, so
// every call on the pair goes through the agent protocol, as on the ssh
// testbed. The agents use run id agentID (not the testbed's, whose lock
// is exclusive) and directories under a temporary root.
func AgentPair(t testing.TB, mtu int) (*localns.Local, *testbed.Pair, [2]*Agent) {
	t.Helper()
	l := New(t, mtu)
	id := testbed.NewID()
	root := t.TempDir()
	var eps [2]*testbed.Endpoint
	var agents [2]*Agent
	for i, ep := range l.Endpoints() {
		h := agent.Hello{ID: id, Site: "site-" + ep.Side, Dev: ep.Dev, Addr4: ep.Addr4, Addr6: ep.Addr6, Root: root}
		agents[i] = StartAgent(t, ep.Namespace, h)
		eps[i] = agents[i].Conn.Endpoint(ep.Side, agents[i].Hello)
	}
	return l, testbed.NewPair(eps[0], eps[1], eps[0].Dir, func() error { return nil }), agents
}

// IsolatedAgentPair is AgentPair with isolated agents (StartIsolatedAgent):
// each side's agent has its own mount namespace, where the run root is a
// private tmpfs, and its own pid namespace, as two remote hosts would.
func IsolatedAgentPair(t testing.TB, mtu int) (*localns.Local, *testbed.Pair, [2]*Agent) {
	t.Helper()
	l := New(t, mtu)
	id := testbed.NewID()
	root := t.TempDir()
	var eps [2]*testbed.Endpoint
	var agents [2]*Agent
	for i, ep := range l.Endpoints() {
		h := agent.Hello{ID: id, Site: "site-" + ep.Side, Dev: ep.Dev, Addr4: ep.Addr4, Addr6: ep.Addr6, Root: root}
		agents[i] = StartIsolatedAgent(t, ep.Namespace, h)
		eps[i] = agents[i].Conn.Endpoint(ep.Side, agents[i].Hello)
	}
	return l, testbed.NewPair(eps[0], eps[1], eps[0].Dir, func() error { return nil }), agents
}
