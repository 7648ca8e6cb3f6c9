package agent

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
)

// AgentConn is the controller's side of one agent: requests go out on w,
// responses and events come back on r. One connection serves every
// endpoint on that host for the whole run.
type AgentConn struct {
	site   string
	closer io.Closer

	encMu sync.Mutex
	enc   *gob.Encoder

	mu      sync.Mutex
	next    uint64
	pending map[uint64]pending
	procs   map[uint64]*remoteProc
	done    chan struct{}
	err     error
	settled []string
}

// NewAgentConn starts reading the agent's responses from r. closer (may be
// nil) is closed by Close: the SSH session.
func NewAgentConn(site string, r io.Reader, w io.Writer, closer io.Closer) *AgentConn {
	c := &AgentConn{site: site, closer: closer, enc: gob.NewEncoder(w),
		pending: map[uint64]pending{}, procs: map[uint64]*remoteProc{}, done: make(chan struct{})}
	go c.read(gob.NewDecoder(r))
	return c
}

// pending is a request waiting for its response; onResp, when set, runs
// in the reading goroutine before any later event is read (a started
// process is registered before its first output arrives).
type pending struct {
	ch     chan agentResp
	onResp func(agentResp)
}

// ErrLost is the error of every call on an agent whose connection is gone.
var ErrLost = errors.New("connection to the host lost")

func (c *AgentConn) read(dec *gob.Decoder) {
	var err error
	for {
		var r agentResp
		if err = dec.Decode(&r); err != nil {
			break
		}
		c.mu.Lock()
		switch {
		case r.ID != 0:
			p, ok := c.pending[r.ID]
			delete(c.pending, r.ID)
			if ok && p.onResp != nil && r.Err == "" {
				p.onResp(r)
			}
			c.mu.Unlock()
			if ok {
				p.ch <- r
			}
		case r.Event == "out":
			p := c.procs[r.Proc]
			c.mu.Unlock()
			if p != nil {
				p.output(r.Stream, r.Data)
			}
		case r.Event == "exit":
			p := c.procs[r.Proc]
			delete(c.procs, r.Proc)
			c.mu.Unlock()
			if p != nil {
				p.exited(r.Exit)
			}
		default:
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("host %s: %w (%v)", c.site, ErrLost, err)
	inflight, procs := c.pending, c.procs
	c.pending, c.procs = map[uint64]pending{}, map[uint64]*remoteProc{}
	close(c.done)
	c.mu.Unlock()
	for _, p := range inflight {
		close(p.ch)
	}
	for _, p := range procs {
		p.exited(&exitInfo{Err: c.err.Error()})
	}
}

// Done is closed when the connection to the agent is lost or closed.
func (c *AgentConn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended (nil while it is up).
func (c *AgentConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the session; the agent then cleans up after itself.
func (c *AgentConn) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}

// roundTrip sends req and waits for its response.
// onResp, when set, runs with the response in the reading goroutine
// (with c.mu held).
func (c *AgentConn) roundTrip(ctx context.Context, req agentReq, onResp func(agentResp)) (agentResp, error) {
	ch := make(chan agentResp, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return agentResp{}, err
	}
	c.next++
	req.ID = c.next
	c.pending[req.ID] = pending{ch: ch, onResp: onResp}
	c.mu.Unlock()
	if err := c.send(req); err != nil {
		return agentResp{}, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return agentResp{}, c.Err()
		}
		return r, respErr(r)
	case <-ctx.Done():
		return agentResp{}, ctx.Err()
	}
}

func (c *AgentConn) send(req agentReq) error {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if err := c.enc.Encode(&req); err != nil {
		return fmt.Errorf("host %s: send: %w", c.site, err)
	}
	return nil
}

// respErr rebuilds the agent's error, keeping what callers test for.
func respErr(r agentResp) error {
	switch {
	case r.Err == "":
		return nil
	case r.NotFound:
		return fmt.Errorf("%s: %w", r.Err, testbed.ErrLinkNotFound)
	case r.Errno != 0:
		return &remoteError{msg: r.Err, errno: syscall.Errno(r.Errno)}
	}
	return errors.New(r.Err)
}

type remoteError struct {
	msg   string
	errno syscall.Errno
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.errno }

// Hello introduces the controller and checks the agent's version. The
// agent first puts back what journals of dead runs still owed its host
// (SettleDeadJournals); Settled then says what.
func (c *AgentConn) Hello(ctx context.Context, h Hello) error {
	r, err := c.roundTrip(ctx, agentReq{Kind: "hello", Hello: &h}, nil)
	if err != nil {
		return fmt.Errorf("host %s: %w", c.site, err)
	}
	var settled []string
	if len(r.Reply) > 0 {
		if err := gob.NewDecoder(bytes.NewReader(r.Reply)).Decode(&settled); err != nil {
			return fmt.Errorf("host %s: hello: %w", c.site, err)
		}
	}
	c.mu.Lock()
	c.settled = settled
	c.mu.Unlock()
	return nil
}

// Settled is what the agent put back at Hello of what dead runs left
// changed on its host ("eth1 mtu 9000 → 1500, tx-tcp-segmentation on").
func (c *AgentConn) Settled() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled
}

// Endpoint returns an endpoint on the agent's host: side names it in
// this pair, dev and addresses are the host's underlay. Its processes,
// files, ops and netlink calls all go to the agent.
func (c *AgentConn) Endpoint(side string, h Hello) *testbed.Endpoint {
	ep := testbed.NewEndpoint(side, c.site, h.Dev, remoteHost{c})
	ep.Addr4, ep.Addr6 = h.Addr4, h.Addr6
	ep.Dir, ep.Exe, ep.Network = testbed.SiteDir(h.Root, h.ID, h.Site), h.Exe, h.Network
	return ep
}

// remoteHost is an endpoint's host reached through its agent.
type remoteHost struct{ c *AgentConn }

// Lost reports why the connection to the host ended, nil while it is up.
func (h remoteHost) Lost() error {
	select {
	case <-h.c.Done():
		return h.c.Err()
	default:
		return nil
	}
}

func (remoteHost) Local() bool { return false }

func (h remoteHost) Call(ctx context.Context, _ *testbed.Endpoint, name string, args []byte) ([]byte, error) {
	r, err := h.c.roundTrip(ctx, agentReq{Kind: "call", Op: name, Args: args}, nil)
	if err != nil {
		return nil, err
	}
	return r.Reply, nil
}

func (h remoteHost) Start(ep *testbed.Endpoint, c *testbed.Cmd) (testbed.Proc, error) {
	ctx := c.Context()
	p := &remoteProc{c: h.c, stdout: c.Stdout, stderr: c.Stderr, exit: make(chan struct{})}
	spec := &startSpec{Args: c.Args, Env: c.Env, OutputFile: c.OutputFile, Stdin: c.Stdin != nil,
		Stdout: c.Stdout != nil, Stderr: c.Stderr != nil, WaitDelay: c.WaitDelay}
	// The process is registered as its start response is read: the
	// agent sends no output before that response, and responses and
	// events are read in order, so no output is lost.
	_, err := h.c.roundTrip(context.Background(), agentReq{Kind: "start", Start: spec}, func(r agentResp) {
		p.id, p.pid = r.Proc, r.Pid
		h.c.procs[p.id] = p
	})
	if err != nil {
		return nil, err
	}
	if c.Stdin != nil {
		go p.feed(c.Stdin)
	}
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				_ = p.Signal(syscall.SIGKILL)
			case <-p.exit:
			}
		}()
	}
	return p, nil
}

// remoteProc is a process the agent started.
type remoteProc struct {
	c              *AgentConn
	id             uint64
	pid            int
	stdout, stderr io.Writer
	exit           chan struct{}
	once           sync.Once
	err            error
	cpu            bool
	user, sys      time.Duration
}

func (p *remoteProc) Pid() int { return p.pid }

func (p *remoteProc) output(stream int, data []byte) {
	w := p.stdout
	if stream == 2 {
		w = p.stderr
	}
	if w != nil {
		_, _ = w.Write(data)
	}
}

func (p *remoteProc) exited(x *exitInfo) {
	p.once.Do(func() {
		switch {
		case x == nil:
		case x.CPU:
			p.cpu, p.user, p.sys = true, time.Duration(x.User), time.Duration(x.Sys)
		}
		switch {
		case x == nil:
		case x.Err != "":
			p.err = errors.New(x.Err)
		case x.Signal != 0:
			p.err = &testbed.ExitError{Code: -1, Signal: syscall.Signal(x.Signal)}
		case x.Code != 0:
			p.err = &testbed.ExitError{Code: x.Code}
		}
		close(p.exit)
	})
}

// CPUTime is the CPU time the agent read from the process's exit
// status; ok is false before the exit or from an agent that sends none.
func (p *remoteProc) CPUTime() (user, sys time.Duration, ok bool) {
	select {
	case <-p.exit:
		return p.user, p.sys, p.cpu
	default:
		return 0, 0, false
	}
}

func (p *remoteProc) Wait() error {
	<-p.exit
	return p.err
}

func (p *remoteProc) Signal(sig syscall.Signal) error {
	select {
	case <-p.exit:
		return nil
	default:
	}
	_, err := p.c.roundTrip(context.Background(), agentReq{Kind: "signal", Proc: p.id, Sig: int(sig)}, nil)
	if errors.Is(err, ErrLost) {
		return nil // gone with the connection
	}
	return err
}

// feed forwards the command's standard input to the agent.
func (p *remoteProc) feed(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if p.c.send(agentReq{Kind: "stdin", Proc: p.id, Data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
		}
		if err != nil {
			_ = p.c.send(agentReq{Kind: "stdin", Proc: p.id, EOF: true})
			return
		}
	}
}
