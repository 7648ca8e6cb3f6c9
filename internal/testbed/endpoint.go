package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Endpoint is one end of a testbed: a network namespace with one underlay
// device and its addresses.
type Endpoint struct {
	// Side is "a" (the sender) or "b" (the receiver).
	Side string
	// Namespace is the name of the network namespace (in /run/netns).
	Namespace string
	NS        netns.NsHandle
	// NS is an open handle on the namespace, owned by the testbed; -1 for
	// a remote endpoint (and for one in the caller's own namespace).
	// NL is a netlink handle bound to the namespace: a *netlink.Handle on
	// this machine, the agent's on a remote host.
	NL Netlink
	// Dev is the underlay device inside the namespace.
	Dev string
	// Addr4 and Addr6 are the underlay addresses of Dev.
	Addr4, Addr6 netip.Prefix
	// CPUs, when not empty, pins every process started here to these CPUs.
	CPUs []int
	// Dir is the run's private directory, shared by both endpoints.
	Dir string

	// Host names the machine the endpoint is on: "" for this one, the
	// site name for a remote host.
	Host string
	// Exe is the path of tunbench on the endpoint's host, for the load
	// tools tunbench is itself (rr, udpgen); empty means this binary.
	Exe string
	// RouteCongestion, when set, is the TCP congestion control that routes
	// created here carry (the route metric congctl): how a cell's
	// algorithm reaches every connection in a namespace whose default the
	// kernel does not let tunbench set.
	RouteCongestion string
	// Network is where the endpoint lives on its host: "" its own network
	// stack, NetworkPod an ordinary pod's network namespace.
	Network string

	h     Host
	mu    sync.Mutex
	procs []*Cmd
}

func (e *Endpoint) hostOf() Host {
	if e.h == nil {
		return localHost{}
	}
	return e.h
}

// Lost returns why the endpoint's host can no longer be reached (its
// connection is lost), nil while it can, and always nil on this machine.
func (e *Endpoint) Lost() error {
	if r, ok := e.hostOf().(interface{ Lost() error }); ok {
		return r.Lost()
	}
	return nil
}

// Tunbench returns the path of tunbench on the endpoint's host.
func (e *Endpoint) Tunbench() (string, error) {
	if e.Exe != "" {
		return e.Exe, nil
	}
	if !e.Local() {
		return "", fmt.Errorf("%s: the path of tunbench on host %s is not known", e.Side, e.Host)
	}
	return os.Executable()
}

// Local reports whether the endpoint is on this machine, where Do works.
func (e *Endpoint) Local() bool { return e.hostOf().Local() }

// Addr returns the underlay address for family "ipv4" or "ipv6".
func (e *Endpoint) Addr(family string) netip.Addr {
	if family == "ipv6" {
		return e.Addr6.Addr()
	}
	return e.Addr4.Addr()
}

// Do runs fn on a locked OS thread that has entered the namespace. Anything
// fn creates that binds to a namespace (sockets, child processes, netlink
// handles) belongs to this endpoint's namespace.
// On a remote endpoint it returns errRemote: use an Op there.
func (e *Endpoint) Do(fn func() error) error {
	if !e.hostOf().Local() {
		return fmt.Errorf("%s: enter namespace on host %s: %w", e.Side, e.Host, errRemote)
	}
	return doIn(e.NS, e.CPUs, fn)
}

func doIn(ns netns.NsHandle, cpus []int, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("get current namespace: %w", err)
			return
		}
		defer orig.Close()
		var origCPUs unix.CPUSet
		if err := unix.SchedGetaffinity(0, &origCPUs); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("get cpu affinity: %w", err)
			return
		}
		// The thread goes back to the pool only once it is restored; a
		// thread that could not be restored stays locked and is
		// destroyed with the goroutine.
		defer func() {
			if netns.Set(orig) == nil && unix.SchedSetaffinity(0, &origCPUs) == nil {
				runtime.UnlockOSThread()
			}
		}()
		if ns >= 0 {
			if err := netns.Set(ns); err != nil {
				errc <- fmt.Errorf("enter namespace: %w", err)
				return
			}
		}
		if len(cpus) > 0 {
			var set unix.CPUSet
			for _, c := range cpus {
				set.Set(c)
			}
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errc <- fmt.Errorf("pin to cpus %v: %w", cpus, err)
				return
			}
		}
		errc <- fn()
	}()
	return <-errc
}

// Command prepares argv to run on the endpoint; start it with Start.
func (e *Endpoint) Command(ctx context.Context, argv ...string) *Cmd {
	return &Cmd{Args: argv, ctx: ctx}
}

// Start starts cmd on the endpoint (in its namespace, pinned when CPUs is
// set) and records it, so that StopAll and the testbed's Close kill it.
// Its pid is also written to the run directory so that "tunbench clean"
// finds it after a crash.
func (e *Endpoint) Start(cmd *Cmd) error {
	if len(cmd.Args) == 0 {
		return fmt.Errorf("%s: start: empty command", e.Side)
	}
	p, err := e.hostOf().Start(e, cmd)
	if err != nil {
		return fmt.Errorf("%s: start %q: %w", e.Side, cmd.String(), err)
	}
	if e.Dir != "" && e.hostOf().Local() {
		// A process "tunbench clean" cannot find would outlive a killed
		// run: one whose pid is not recorded is stopped again.
		if err := WritePidFile(e.Dir, p.Pid(), cmd.Args[0]); err != nil {
			_ = p.Signal(syscall.SIGKILL)
			_ = p.Wait()
			return fmt.Errorf("%s: start %q: %w", e.Side, cmd.String(), err)
		}
	}
	cmd.proc = p
	e.mu.Lock()
	e.procs = append(e.procs, cmd)
	e.mu.Unlock()
	return nil
}

// WritePidFile records pid, running program argv0, in dir/pids, where
// "tunbench clean" looks for a killed run's processes: the file holds
// argv0 and, on a second line, the process's start time (field 22 of
// /proc/PID/stat), so that clean never takes a process that got the pid
// after this one ended (pids wrap at pid_max, 32768 by default) for it.
func WritePidFile(dir string, pid int, argv0 string) error {
	pidDir := filepath.Join(dir, "pids")
	if err := os.MkdirAll(pidDir, 0o700); err != nil {
		return fmt.Errorf("record pid %d for tunbench clean: %w", pid, err)
	}
	rec := argv0
	if st, ok := readProcStat(pid); ok {
		rec += "\n" + st.start
	}
	if err := os.WriteFile(filepath.Join(pidDir, strconv.Itoa(pid)), []byte(rec), 0o600); err != nil {
		return fmt.Errorf("record pid %d for tunbench clean: %w", pid, err)
	}
	return nil
}

// Forget drops cmd from the endpoint's process list after it has been waited for.
func (e *Endpoint) Forget(cmd *Cmd) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, c := range e.procs {
		if c == cmd {
			e.procs = append(e.procs[:i], e.procs[i+1:]...)
			break
		}
	}
	if e.Dir != "" && cmd.proc != nil && e.hostOf().Local() {
		_ = os.Remove(filepath.Join(e.Dir, "pids", strconv.Itoa(cmd.Pid())))
	}
}

// Run runs argv on the endpoint and returns its combined output. A
// failure quotes argv and the output.
func (e *Endpoint) Run(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := e.Command(ctx, argv...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := e.Start(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	e.Forget(cmd)
	if err != nil {
		return out.Bytes(), &CommandError{Side: e.Side, Argv: cmd.Args, Output: out.String(), Err: err}
	}
	return out.Bytes(), nil
}

// StopAll kills every process started here and not yet forgotten.
func (e *Endpoint) StopAll() error {
	e.mu.Lock()
	procs := e.procs
	e.procs = nil
	e.mu.Unlock()
	var errs []error
	for _, cmd := range procs {
		if cmd.proc == nil {
			continue
		}
		// Kill the whole process group: tools may fork.
		if err := cmd.Kill(); err != nil {
			errs = append(errs, fmt.Errorf("%s: kill %q: %w", e.Side, cmd.Args[0], err))
		}
		_ = cmd.Wait()
		if e.Dir != "" && e.hostOf().Local() {
			_ = os.Remove(filepath.Join(e.Dir, "pids", strconv.Itoa(cmd.Pid())))
		}
	}
	return errors.Join(errs...)
}

// CommandError is a failed command: it quotes argv and the output.
type CommandError struct {
	Side   string
	Argv   []string
	Output string
	Err    error
}

func (c *CommandError) Error() string {
	out := strings.TrimSpace(c.Output)
	if len(out) > 2000 {
		out = "..." + out[len(out)-2000:]
	}
	return fmt.Sprintf("%s: %q: %v: %s", c.Side, strings.Join(c.Argv, " "), c.Err, out)
}

func (c *CommandError) Unwrap() error { return c.Err }
