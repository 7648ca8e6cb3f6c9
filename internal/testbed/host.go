package testbed

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Host is where an endpoint's effects happen: this machine, inside the
// endpoint's namespace (the default), or a remote machine through the
// agent tunbench runs there (package agent). Everything an endpoint
// does goes through it, so methods, load drivers and samplers run
// unchanged on either. Tests supply fakes (NewEndpoint). A host whose
// connection can be lost also has a method Lost() error, which
// Endpoint.Lost asks.
type Host interface {
	// Start starts c's process there.
	Start(ep *Endpoint, c *Cmd) (Proc, error)
	// Call runs the registered operation name there, with gob-encoded
	// args, and returns its gob-encoded result.
	Call(ctx context.Context, ep *Endpoint, name string, args []byte) ([]byte, error)
	// Local reports whether the endpoint is on this machine (Do works).
	Local() bool
}

// NewEndpoint returns an endpoint on host h, whose netlink calls are ops
// there (the "netlink" op).
func NewEndpoint(side, hostName, dev string, h Host) *Endpoint {
	ep := &Endpoint{Side: side, Host: hostName, Dev: dev, NS: -1, h: h}
	ep.NL = remoteNetlink{ep}
	return ep
}

// Encode and Decode are the ops' argument and result encoding (gob).
func Encode(v any) ([]byte, error) { return encode(v) }

// Decode decodes data produced by Encode into v.
func Decode(data []byte, v any) error { return gob.NewDecoder(bytes.NewReader(data)).Decode(v) }

// errRemote is returned by what only works on an endpoint on this machine
// (Do, loading BPF programs from this process) when the endpoint is on a
// remote host.
var errRemote = errors.New("not available on a remote endpoint")

// Op is a named operation that runs where an endpoint lives: in this
// process for a local endpoint, in the agent on the host for a remote one.
// It is how code that would enter a namespace (a sysctl, a wgctrl call)
// runs on either without being written twice. Register ops at package
// initialisation (a package-level NewOp), so the agent, being the same
// binary, knows them all. A and R must be gob-encodable.
type Op[A, R any] struct {
	name string
	fn   func(ctx context.Context, ep *Endpoint, a A) (R, error)
}

type opFunc func(ctx context.Context, ep *Endpoint, args []byte) ([]byte, error)

var (
	opsMu sync.RWMutex
	ops   = map[string]opFunc{}
)

// NewOp registers fn under name; a name registered twice panics.
func NewOp[A, R any](name string, fn func(ctx context.Context, ep *Endpoint, a A) (R, error)) Op[A, R] {
	opsMu.Lock()
	defer opsMu.Unlock()
	if _, dup := ops[name]; dup {
		panic("testbed: duplicate op " + name)
	}
	ops[name] = func(ctx context.Context, ep *Endpoint, args []byte) ([]byte, error) {
		var a A
		if err := gob.NewDecoder(bytes.NewReader(args)).Decode(&a); err != nil {
			return nil, fmt.Errorf("decode arguments of %s: %w", name, err)
		}
		r, err := fn(ctx, ep, a)
		if err != nil {
			return nil, err
		}
		return encode(r)
	}
	return Op[A, R]{name: name, fn: fn}
}

// LookupOp returns the operation registered under name, to run on an
// endpoint of this process with gob-encoded arguments (an agent runs its
// controller's calls so); ok is false when no op has that name.
func LookupOp(name string) (fn func(ctx context.Context, ep *Endpoint, args []byte) ([]byte, error), ok bool) {
	opsMu.RLock()
	defer opsMu.RUnlock()
	fn, ok = ops[name]
	return fn, ok
}

// Call runs the operation on ep's host: directly for an endpoint on this
// machine, encoded through its Host otherwise.
func (o Op[A, R]) Call(ctx context.Context, ep *Endpoint, a A) (R, error) {
	if _, local := ep.hostOf().(localHost); local {
		return o.fn(ctx, ep, a)
	}
	var r R
	args, err := encode(a)
	if err != nil {
		return r, fmt.Errorf("encode arguments of %s: %w", o.name, err)
	}
	out, err := ep.hostOf().Call(ctx, ep, o.name, args)
	if err != nil {
		return r, err
	}
	if err := gob.NewDecoder(bytes.NewReader(out)).Decode(&r); err != nil {
		return r, fmt.Errorf("decode result of %s: %w", o.name, err)
	}
	return r, nil
}

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// localHost runs on this machine, inside the endpoint's namespace.
type localHost struct{}

func (localHost) Local() bool { return true }

func (localHost) Call(ctx context.Context, ep *Endpoint, name string, args []byte) ([]byte, error) {
	fn, ok := LookupOp(name)
	if !ok {
		return nil, fmt.Errorf("testbed: unknown op %q", name)
	}
	return fn(ctx, ep, args)
}

func (localHost) Start(ep *Endpoint, c *Cmd) (Proc, error) {
	cmd := exec.CommandContext(c.Context(), c.Args[0], c.Args[1:]...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), c.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	if c.OutputFile != "" {
		f, err := os.OpenFile(c.OutputFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("output file: %w", err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	// No Pdeathsig: it fires when the forking thread exits, which Go
	// threads may do at any time. Leftovers are found by namespace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	if err := ep.Do(func() error { return cmd.Start() }); err != nil {
		return nil, err
	}
	return &localProc{cmd: cmd}, nil
}

type localProc struct {
	cmd  *exec.Cmd
	once sync.Once
	err  error
}

func (p *localProc) Pid() int { return p.cmd.Process.Pid }

func (p *localProc) Wait() error {
	p.once.Do(func() { p.err = exitError(p.cmd.Wait()) })
	return p.err
}

// CPUTime is the exited process's rusage: its (and its waited-for
// children's) user and system time.
func (p *localProc) CPUTime() (user, sys time.Duration, ok bool) {
	st := p.cmd.ProcessState
	if st == nil {
		return 0, 0, false
	}
	return st.UserTime(), st.SystemTime(), true
}

func (p *localProc) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// File operations on the endpoint's host. On this machine they run inside
// the namespace, so /proc/sys/net and /proc/net paths are the endpoint's.

type fileArgs struct {
	Path string
	Data []byte
	Perm os.FileMode
}

var (
	opReadFile = NewOp("fs.read", func(_ context.Context, ep *Endpoint, a fileArgs) ([]byte, error) {
		var data []byte
		err := ep.Do(func() error {
			var err error
			data, err = os.ReadFile(a.Path)
			return err
		})
		return data, err
	})
	opWriteFile = NewOp("fs.write", func(_ context.Context, ep *Endpoint, a fileArgs) (struct{}, error) {
		return struct{}{}, ep.Do(func() error { return os.WriteFile(a.Path, a.Data, a.Perm) })
	})
	opMkdirAll = NewOp("fs.mkdir", func(_ context.Context, _ *Endpoint, a fileArgs) (struct{}, error) {
		return struct{}{}, os.MkdirAll(a.Path, a.Perm)
	})
	opRemoveAll = NewOp("fs.remove", func(_ context.Context, _ *Endpoint, a fileArgs) (struct{}, error) {
		return struct{}{}, os.RemoveAll(a.Path)
	})
)

// ReadFile reads a file on the endpoint's host.
func (e *Endpoint) ReadFile(path string) ([]byte, error) {
	data, err := opReadFile.Call(context.Background(), e, fileArgs{Path: path})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Side, err)
	}
	return data, nil
}

// WriteFile writes a file on the endpoint's host.
func (e *Endpoint) WriteFile(path string, data []byte, perm os.FileMode) error {
	if _, err := opWriteFile.Call(context.Background(), e, fileArgs{Path: path, Data: data, Perm: perm}); err != nil {
		return fmt.Errorf("%s: %w", e.Side, err)
	}
	return nil
}

// MkdirAll creates a directory (and its parents) on the endpoint's host.
func (e *Endpoint) MkdirAll(path string, perm os.FileMode) error {
	if _, err := opMkdirAll.Call(context.Background(), e, fileArgs{Path: path, Perm: perm}); err != nil {
		return fmt.Errorf("%s: %w", e.Side, err)
	}
	return nil
}

// RemoveAll removes a file or directory tree on the endpoint's host.
func (e *Endpoint) RemoveAll(path string) error {
	if _, err := opRemoveAll.Call(context.Background(), e, fileArgs{Path: path}); err != nil {
		return fmt.Errorf("%s: %w", e.Side, err)
	}
	return nil
}

// Path joins elem to the endpoint's private directory (on its host).
func (e *Endpoint) Path(elem ...string) string {
	return filepath.Join(append([]string{e.Dir}, elem...)...)
}
