package ssh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/remotehost"
)

// MethodNeeds is one method of the run and what it needs of a host.
type MethodNeeds struct {
	Name         string
	Requirements []method.Requirement
}

// hostChecker answers, for one host, the questions Open asks before
// anything is created on it. *sshHost is the real one; tests fake it.
type hostChecker interface {
	// MissingTools returns the tools the host lacks.
	MissingTools(ctx context.Context, tools []remotehost.Tool) ([]remotehost.Tool, error)
	// CongestionControls returns the algorithms the host offers.
	CongestionControls(ctx context.Context, want []string) ([]string, error)
	// Kernel returns what decides which kernel options the host can use.
	Kernel(ctx context.Context) (hostinfo.Kernel, error)
}

// sshHost checks a host over its SSH connection, with commands run
// there: nothing is copied to or started on the host.
type sshHost struct{ *remotehost.Host }

// Kernel reads the host's kernel config and modules over SSH (uname -r,
// then the files hostinfo.ReadKernel reads, each with cat, read when
// needed and once), so the host's kernel, not this machine's, decides.
func (h sshHost) Kernel(ctx context.Context) (hostinfo.Kernel, error) {
	out, _, err := h.Run(ctx, "uname", "-r")
	if err != nil {
		return hostinfo.Kernel{}, err
	}
	rel := strings.TrimSpace(string(out))
	if rel == "" || strings.ContainsAny(rel, "/\n") {
		return hostinfo.Kernel{}, fmt.Errorf("uname -r printed %q, not a kernel release", out)
	}
	return hostinfo.ReadKernel(&sshFiles{ctx: ctx, h: h.Host}, rel)
}

// sshFiles are a host's files read over SSH, each once (Modules reads
// /proc/modules and modules.dep for every "=m" option it is asked about).
type sshFiles struct {
	ctx   context.Context
	h     *remotehost.Host
	mu    sync.Mutex
	read  map[string]fileRead
	names map[string]namesRead
}

type fileRead struct {
	data []byte
	err  error
}

type namesRead struct {
	names []string
	err   error
}

func (f *sshFiles) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.read[name]; ok {
		return r.data, r.err
	}
	data, err := f.h.ReadFile(f.ctx, name)
	if f.read == nil {
		f.read = map[string]fileRead{}
	}
	f.read[name] = fileRead{data, err}
	return data, err
}

func (f *sshFiles) FileNames(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.names[dir]; ok {
		return r.names, r.err
	}
	names, err := f.h.FileNames(f.ctx, dir)
	if f.names == nil {
		f.names = map[string]namesRead{}
	}
	f.names[dir] = namesRead{names, err}
	return names, err
}

// tools are the programs every host needs: cfg.Tools and the programs
// the methods require, each once.
func (c Config) tools() []remotehost.Tool {
	tools := slices.Clone(c.Tools)
	for _, m := range c.Methods {
		for _, r := range m.Requirements {
			if r.Program == "" {
				continue
			}
			t := remotehost.Tool{Program: r.Program, Package: r.Package, Install: r.Install}
			if !slices.ContainsFunc(tools, func(have remotehost.Tool) bool { return have.Program == t.Program }) {
				tools = append(tools, t)
			}
		}
	}
	return tools
}

// needsKernel reports whether a method of the run needs a kernel option.
func (c Config) needsKernel() bool {
	return slices.ContainsFunc(c.Methods, func(m MethodNeeds) bool {
		return slices.ContainsFunc(m.Requirements, func(r method.Requirement) bool { return r.Kernel != "" })
	})
}

// checkHost checks host name for everything the run needs of it: its
// programs, congestion control algorithms, and every kernel option of
// every method, decided by its own kernel config and modules. It returns
// every gap at once, one line each, naming the host, or nil; a check
// that cannot be made is an error of its own ("site NAME: ...").
func (c Config) checkHost(ctx context.Context, name string, h hostChecker, logf func(string, ...any)) error {
	var gaps []string
	missing, err := h.MissingTools(ctx, c.tools())
	if err != nil {
		return fmt.Errorf("site %s: %w", name, err)
	}
	if r := remotehost.MissingReport(name, missing); r != "" {
		gaps = append(gaps, r)
	}
	if want := c.CongestionControls; slices.ContainsFunc(want, func(cc string) bool { return cc != "" }) {
		avail, err := h.CongestionControls(ctx, want)
		if err != nil {
			return fmt.Errorf("site %s: %w", name, err)
		}
		if err := hostinfo.CongestionError(name, hostinfo.MissingCongestion(want, avail), avail); err != nil {
			gaps = append(gaps, err.Error())
		}
	}
	if c.needsKernel() {
		k, err := h.Kernel(ctx)
		if err != nil {
			return fmt.Errorf("site %s: read the kernel config: %w", name, err)
		}
		if !k.Known() && logf != nil {
			logf("site %s: no kernel config to read (neither /proc/config.gz nor /boot/config-%s): the methods' kernel options are not checked there, and one its kernel lacks fails when it is set up", name, k.Release)
		}
		gaps = append(gaps, kernelGaps(name, k.Usable, c.Methods)...)
	}
	if len(gaps) == 0 {
		return nil
	}
	return errors.New(strings.Join(gaps, "\n"))
}

// kernelGaps words, for host name, each kernel option a method needs that
// usable (the host's kernel) says it cannot use:
//
//	host NAME: method M: kernel lacks CONFIG_X (the host's kernel cannot carry M)
//
// Program requirements are checked with the tools; Feature requirements
// are not checked on a remote host: their Probe runs in this process,
// against this machine's kernel, so it would answer for the controller,
// not for the host (setting the method up there fails with the host
// kernel's own error instead).
func kernelGaps(name string, usable func(option, module string) (bool, error), methods []MethodNeeds) []string {
	var gaps []string
	for _, m := range methods {
		for _, r := range m.Requirements {
			if r.Kernel == "" {
				continue
			}
			ok, err := usable(r.Kernel, r.Module)
			switch {
			case err != nil:
				gaps = append(gaps, fmt.Sprintf("host %s: method %s: cannot tell whether the kernel has %s: %v", name, m.Name, r.Kernel, err))
			case !ok:
				gaps = append(gaps, fmt.Sprintf("host %s: method %s: kernel lacks %s (the host's kernel cannot carry %s)", name, m.Name, r.Kernel, m.Name))
			}
		}
	}
	return gaps
}
