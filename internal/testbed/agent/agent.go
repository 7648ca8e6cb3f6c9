package agent

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The agent protocol. The controller (the tunbench that runs the plan)
// starts "tunbench agent" on each remote host over SSH and speaks to it
// through the session's standard input and output: a gob stream of
// agentReq one way and agentResp the other. Every request carries an ID
// its response repeats; process output and exits are events (ID 0). The
// agent executes everything with the same code a local endpoint uses: it
// holds a local Endpoint for its host (the host's own network namespace)
// and runs commands, ops and netlink calls on it.

type agentReq struct {
	ID    uint64
	Kind  string // hello, call, start, stdin, signal
	Op    string
	Args  []byte
	Proc  uint64
	Data  []byte
	EOF   bool
	Sig   int
	Start *startSpec
	Hello *Hello
}

type startSpec struct {
	Args, Env      []string
	OutputFile     string
	Stdin          bool
	Stdout, Stderr bool
	WaitDelay      time.Duration
}

// Hello is what the controller tells an agent about its endpoint.
type Hello struct {
	// Version is the controller's; the agent refuses another.
	Version string
	// ID is the run; Site the host's name in the scenario.
	ID, Site string
	// Side is "a" or "b" for a pair; the agent serves one site whatever
	// the side (a mesh reuses it).
	Dev          string
	Addr4, Addr6 netip.Prefix
	// Root holds the run directory on the host (DefaultRoot when empty).
	Root string
	// Exe is the path of tunbench on the host (the agent's own binary).
	Exe string
	// Network is "" when the agent serves the host's own network stack,
	// NetworkPod when it runs in an ordinary pod's network namespace.
	Network string
}

type agentResp struct {
	ID  uint64
	Err string
	// Errno and NotFound carry what callers test errors for (errors.Is
	// with an errno, errors.As with netlink.LinkNotFoundError).
	Errno    int
	NotFound bool
	Reply    []byte
	Pid      int
	Event    string // out, exit
	Proc     uint64
	// Stream is 1 for stdout, 2 for stderr.
	Stream int
	Data   []byte
	Exit   *exitInfo
}

type exitInfo struct {
	Code, Signal int
	Err          string
	// CPU says User and Sys (nanoseconds) carry the process's CPU time
	// from its rusage (testbed.Cmd.CPUTime); agents older than it send
	// neither.
	CPU       bool  `json:",omitempty"`
	User, Sys int64 `json:",omitempty"`
}

// ServeAgent serves one controller on r and w until r ends (the controller
// closed the session or the connection was lost), ctx is done or the
// process gets SIGTERM or SIGINT. It then waits for the ops in flight
// (started ones complete; none starts after), kills every process it
// started and removes what the run left on this host: devices named with
// the run's prefix in its namespace, then what the site's journal holds
// (the underlay's MTU and features, addresses, sysctls, tc programs,
// pins, routes), then the site directory. version is this binary's
// (Hello must match).
//
// Nothing sshd does when the session ends stops that cleanup half way:
// SIGHUP is ignored, and a write to a standard output nobody reads any
// more fails (SIGPIPE does not end the process) and ends the sending.
// The agent's process (tunbench agent) also leaves the session's process
// group first (cli.newAgentCmd), so a kill of that group misses it.
func ServeAgent(ctx context.Context, r io.Reader, w io.Writer, version string) error {
	// Handled, not ignored: an ignored signal would stay ignored in
	// every program the agent starts.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGPIPE, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	opCtx, cancelOps := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelOps()
	a := &agent{enc: gob.NewEncoder(w), procs: map[uint64]*testbed.Cmd{}, stdins: map[uint64]*inQueue{}}
	defer a.shutdown(cancelOps)
	reqs := make(chan agentReq)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		dec := gob.NewDecoder(r)
		for {
			var req agentReq
			if err := dec.Decode(&req); err != nil {
				readErr <- err
				return
			}
			select {
			case reqs <- req:
			case <-stop:
				return
			}
		}
	}()
	for {
		var req agentReq
		select {
		case req = <-reqs:
		case err := <-readErr:
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("agent: read request: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case sig := <-sigs:
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				return fmt.Errorf("agent: %v", sig)
			}
			continue
		}
		switch req.Kind {
		case "hello":
			settled, err := a.hello(req.Hello, version)
			a.reply(req.ID, settled, err)
		case "stdin":
			a.stdin(req)
		default:
			if !a.begin() {
				a.reply(req.ID, nil, errors.New("agent: shutting down"))
				continue
			}
			go func() {
				resp, after := a.handle(opCtx, req)
				a.ops.Done()
				a.send(resp)
				if after != nil {
					after()
				}
			}()
		}
	}
}

type agent struct {
	encMu sync.Mutex
	enc   *gob.Encoder
	// gone is set once the controller is: a write failed or the agent
	// shuts down. Nothing is sent after.
	gone bool

	ep   *testbed.Endpoint
	id   string
	lock *os.File

	mu      sync.Mutex
	next    uint64
	procs   map[uint64]*testbed.Cmd
	closing bool
	// ops counts the requests being executed (not their replies being
	// sent): shutdown waits for them.
	ops sync.WaitGroup
	// stdins queue each process's standard input, written in order by
	// one goroutine per process.
	stdins map[uint64]*inQueue
}

// begin admits a request for execution, unless the agent shuts down.
func (a *agent) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return false
	}
	a.ops.Add(1)
	return true
}

// inQueue is a process's standard input: unbounded, so a process that
// does not read stalls nothing else, and nothing is dropped.
type inQueue struct {
	mu   sync.Mutex
	bufs [][]byte
	eof  bool
	wake chan struct{}
}

func newInQueue(w io.WriteCloser) *inQueue {
	q := &inQueue{wake: make(chan struct{}, 1)}
	go func() {
		defer w.Close()
		for range q.wake {
			q.mu.Lock()
			bufs, eof := q.bufs, q.eof
			q.bufs = nil
			q.mu.Unlock()
			for _, b := range bufs {
				if _, err := w.Write(b); err != nil {
					return
				}
			}
			if eof {
				return
			}
		}
	}()
	return q
}

func (q *inQueue) push(data []byte, eof bool) {
	q.mu.Lock()
	if len(data) > 0 {
		q.bufs = append(q.bufs, data)
	}
	q.eof = q.eof || eof
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// send writes r to the controller; once a write fails (the controller
// is gone) nothing more is written.
func (a *agent) send(r agentResp) {
	a.encMu.Lock()
	defer a.encMu.Unlock()
	if a.gone {
		return
	}
	if err := a.enc.Encode(&r); err != nil {
		a.gone = true
	}
}

// silence stops every later send.
func (a *agent) silence() {
	a.encMu.Lock()
	a.gone = true
	a.encMu.Unlock()
}

func (a *agent) reply(id uint64, out []byte, err error) {
	a.send(response(id, out, err))
}

// response is the response to request id.
func response(id uint64, out []byte, err error) agentResp {
	r := agentResp{ID: id, Reply: out}
	if err != nil {
		r.Err = err.Error()
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = int(errno)
		}
		var nf netlink.LinkNotFoundError
		r.NotFound = errors.As(err, &nf)
	}
	return r
}

// hello takes the run's lock, puts back what dead runs' journals still
// owe this host (SettleDeadJournals) and records the agent. Its reply is
// what was put back, gob-encoded []string.
func (a *agent) hello(h *Hello, version string) ([]byte, error) {
	if h == nil {
		return nil, errors.New("agent: empty hello")
	}
	if a.ep != nil {
		return nil, errors.New("agent: hello twice")
	}
	if h.Version != version {
		return nil, fmt.Errorf("agent: version %s here, controller is %s: install the same tunbench on both", version, h.Version)
	}
	if !testbed.ValidID(h.ID) {
		return nil, fmt.Errorf("agent: invalid run id %q", h.ID)
	}
	dir := testbed.SiteDir(h.Root, h.ID, h.Site)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: create %s: %w", dir, err)
	}
	// A shared lock: "tunbench clean" on this host leaves a live run's
	// objects alone (sites sharing one machine share the lock file).
	lock, err := testbed.TakeLock(h.ID, unix.LOCK_SH)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	// unlock drops the lock of a refused hello, and its file when no
	// other agent of the run holds it, as the agent's end does.
	unlock := func() {
		lock.Close()
		testbed.DropLock(h.ID)
	}
	// Before this run changes anything here: what a dead run's journal
	// still owes the host goes back (its agent was killed before it could
	// put it back), so that this run never journals it as the original.
	// What cannot be put back is said, and left to clean (a Save of a
	// device still owed refuses by itself).
	restored, err := testbed.SettleDeadJournals(h.Root, h.ID)
	var settled []string
	for _, r := range restored {
		settled = append(settled, r.Name)
	}
	if err != nil {
		settled = append(settled, "not put back (run tunbench clean there): "+err.Error())
	}
	var reply bytes.Buffer
	if err := gob.NewEncoder(&reply).Encode(settled); err != nil {
		unlock()
		return nil, err
	}
	nl, err := netlink.NewHandle()
	if err != nil {
		unlock()
		return nil, fmt.Errorf("agent: netlink: %w", err)
	}
	// The agent records itself as the run's processes are recorded, so
	// that cleaning the site after a lost connection ends it too; an
	// agent that cannot be found that way refuses the run.
	if err := testbed.WritePidFile(dir, os.Getpid(), os.Args[0]); err != nil {
		nl.Close()
		unlock()
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.id, a.lock = h.ID, lock
	a.ep = &testbed.Endpoint{Side: h.Site, Host: h.Site, NS: -1, NL: nl, Dev: h.Dev, Addr4: h.Addr4, Addr6: h.Addr6, Dir: dir, Exe: h.Exe}
	return reply.Bytes(), nil
}

// handle executes req and returns its response, and what to do once
// the response is out (nil: nothing).
func (a *agent) handle(ctx context.Context, req agentReq) (agentResp, func()) {
	if a.ep == nil {
		return response(req.ID, nil, errors.New("agent: no hello yet")), nil
	}
	switch req.Kind {
	case "call":
		fn, ok := testbed.LookupOp(req.Op)
		if !ok {
			return response(req.ID, nil, fmt.Errorf("agent: unknown op %q (is the agent's tunbench the same version?)", req.Op)), nil
		}
		out, err := fn(ctx, a.ep, req.Args)
		return response(req.ID, out, err), nil
	case "start":
		return a.start(req)
	case "signal":
		a.mu.Lock()
		c := a.procs[req.Proc]
		a.mu.Unlock()
		if c == nil {
			return response(req.ID, nil, nil), nil // already exited
		}
		return response(req.ID, nil, c.Signal(syscall.Signal(req.Sig))), nil
	}
	return response(req.ID, nil, fmt.Errorf("agent: unknown request %q", req.Kind)), nil
}

// eventWriter forwards a process's output as events, once the response
// to the start request (which tells the controller the process's id) is
// out.
type eventWriter struct {
	a      *agent
	proc   uint64
	stream int
	ready  <-chan struct{}
}

func (w eventWriter) Write(p []byte) (int, error) {
	<-w.ready
	w.a.send(agentResp{Event: "out", Proc: w.proc, Stream: w.stream, Data: append([]byte(nil), p...)})
	return len(p), nil
}

// start starts the process of req. Its output and exit are sent only
// after the response (which tells the controller the process's id): the
// returned function, run once the response is out, releases them.
func (a *agent) start(req agentReq) (agentResp, func()) {
	s := req.Start
	if s == nil || len(s.Args) == 0 {
		return response(req.ID, nil, errors.New("agent: empty command")), nil
	}
	a.mu.Lock()
	a.next++
	id := a.next
	a.mu.Unlock()
	c := a.ep.Command(context.Background(), s.Args...)
	c.Env, c.OutputFile, c.WaitDelay = s.Env, s.OutputFile, s.WaitDelay
	ready := make(chan struct{})
	release := func() { close(ready) }
	if s.Stdout {
		c.Stdout = eventWriter{a, id, 1, ready}
	}
	if s.Stderr {
		c.Stderr = eventWriter{a, id, 2, ready}
	}
	var stdin *inQueue
	if s.Stdin {
		r, pw := io.Pipe()
		c.Stdin = r
		stdin = newInQueue(pw)
	}
	if err := a.ep.Start(c); err != nil {
		if stdin != nil {
			stdin.push(nil, true)
		}
		return response(req.ID, nil, err), release
	}
	a.mu.Lock()
	a.procs[id] = c
	if stdin != nil {
		a.stdins[id] = stdin
	}
	a.mu.Unlock()
	go func() {
		err := c.Wait()
		a.ep.Forget(c)
		a.mu.Lock()
		delete(a.procs, id)
		if q := a.stdins[id]; q != nil {
			q.push(nil, true)
			delete(a.stdins, id)
		}
		a.mu.Unlock()
		ex := &exitInfo{}
		if user, sys, ok := c.CPUTime(); ok {
			ex.CPU, ex.User, ex.Sys = true, int64(user), int64(sys)
		}
		var ee *testbed.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			ex.Code, ex.Signal = ee.Code, int(ee.Signal)
		default:
			ex.Err = err.Error()
		}
		<-ready
		a.send(agentResp{Event: "exit", Proc: id, Exit: ex})
	}()
	return agentResp{ID: req.ID, Proc: id, Pid: c.Pid()}, release
}

// stdin queues input for a process, in the order it arrives.
func (a *agent) stdin(req agentReq) {
	a.mu.Lock()
	q := a.stdins[req.Proc]
	if req.EOF {
		delete(a.stdins, req.Proc)
	}
	a.mu.Unlock()
	if q != nil {
		q.push(req.Data, req.EOF)
	}
}

// shutdown runs when the controller is gone: no request starts after
// it begins, those in flight complete (cancelOps cancels their context),
// and then it kills what is still running and removes the run's devices
// and directory on this host, putting back first what the journal holds.
func (a *agent) shutdown(cancelOps context.CancelFunc) {
	a.mu.Lock()
	a.closing = true
	a.mu.Unlock()
	a.silence()
	cancelOps()
	a.ops.Wait()
	if a.ep == nil {
		return
	}
	_ = a.ep.StopAll()
	_, _ = removeRunLinks(a.ep.NL, a.id)
	a.ep.NL.Close()
	// What the run changed on the host outside its own devices goes back
	// from the site's journal before the journal goes with the directory:
	// the underlay device's MTU and features, addresses a method moved,
	// sysctls, tc programs, pins and routes (an ordinary end reverted
	// each already and left no entry).
	if h, err := netlink.NewHandle(); err == nil {
		_, _ = testbed.ApplyJournal(h, a.ep.Dir)
		h.Close()
	}
	_ = os.RemoveAll(a.ep.Dir)
	_ = os.Remove(filepath.Dir(a.ep.Dir)) // the run directory, once empty
	if a.lock != nil {
		a.lock.Close()
		testbed.DropLock(a.id)
	}
}

// removeRunLinks deletes the devices of run id (named DevicePrefix(id)...)
// in the namespace of h and returns their names.
func removeRunLinks(h testbed.Netlink, id string) ([]string, error) {
	links, err := h.LinkList()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, l := range links {
		if testbed.RunOfDevice(l.Attrs().Name) != id {
			continue
		}
		if err := h.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", l.Attrs().Name, err))
			continue
		}
		removed = append(removed, l.Attrs().Name)
	}
	return removed, errors.Join(errs...)
}
