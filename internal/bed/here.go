package bed

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
	"golang.org/x/sys/unix"
)

// HostProbe answers requirement questions from this machine's kernel
// config and modules, and PATH.
type HostProbe struct {
	kernel hostinfo.Kernel
}

// NewHostProbe returns the probe of this machine.
func NewHostProbe() method.Probe {
	p := &HostProbe{}
	if k, err := hostinfo.LocalKernel(); err == nil {
		p.kernel = k
	}
	return p
}

// HasKernel reports whether the running kernel has option built in, or as
// a module that is loaded or installed (hostinfo.Kernel.Usable, the rule
// the ssh testbed applies to each host's own kernel). Without a kernel
// config it cannot tell and says yes: Setup then fails with the kernel's
// own error.
func (p *HostProbe) HasKernel(option, module string) (bool, error) {
	return p.kernel.Usable(option, module)
}

// CongestionControls returns the TCP congestion control algorithms this
// machine offers after trying to load the modules of those of want it
// lacks.
func (p *HostProbe) CongestionControls(want []string) ([]string, error) {
	return hostinfo.AvailableCongestion(context.Background(), want)
}

// HasProgram reports whether name is on PATH.
func (p *HostProbe) HasProgram(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// HasCaps reports whether the process may create namespaces and links.
func HasCaps() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_SYS_ADMIN) && has(unix.CAP_NET_ADMIN)
}

// loadTools are the programs the measurements themselves need.
var loadTools = []method.Requirement{
	{Program: "iperf3", Package: "iperf3"},
	{Program: "sockperf", Package: "sockperf"},
}

// PreflightHere refuses, before anything is created, a run that cannot
// work here (the local and vm testbeds' Preflight): not root, a method whose kernel feature or program is
// missing, a missing load tool. Each error names the fix. kernel says
// this machine's kernel carries the run (local); in the kernel lab
// (vm) the guest's kernel does, so only programs are checked here.
//
// The remote testbeds ask nothing of this machine (it is only the
// controller: it creates no namespace or device and runs none of the
// load tools or the methods' programs); each host is checked for its
// tools, congestion control and every method's requirements by its own
// kernel when the testbed opens, before anything is created on any host.
func PreflightHere(s scenario.Scenario, reg *method.Registry, env Env, kernel bool) error {
	p := env.Probe()
	var errs []error
	if !env.Root() {
		errs = append(errs, errors.New("not running as root: tunbench creates network namespaces and devices; run it with sudo or as root (CAP_SYS_ADMIN and CAP_NET_ADMIN)"))
	}
	tools := loadTools[:1]
	if s.Times().Latency > 0 && s.LatencyTool == "sockperf" {
		tools = loadTools
	}
	if err := method.Check(p, tools); err != nil {
		errs = append(errs, fmt.Errorf("load tools: %w", err))
	}
	if kernel {
		// The local testbed joins its two namespaces with a veth pair.
		if err := method.Check(p, []method.Requirement{{Kernel: "CONFIG_VETH", Module: "veth"}}); err != nil {
			errs = append(errs, fmt.Errorf("testbed local (a veth pair between two namespaces): %w", err))
		}
	}
	if err := wanRequirements(s, p, kernel); err != nil {
		errs = append(errs, err)
	}
	if kernel {
		if err := congestionRequirements(s, p); err != nil {
			errs = append(errs, err)
		}
	}
	for _, u := range UnavailableHere(s, reg, p, kernel) {
		errs = append(errs, fmt.Errorf("method %s: %s", u.Method, u.Reason))
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = "  " + e.Error()
	}
	return fmt.Errorf("cannot run here:\n%s", strings.Join(msgs, "\n"))
}

// UnavailableHere returns the methods of s this machine cannot carry
// (the local and vm testbeds' Unavailable),
// each with the reason and its fix: a kernel option or program a method
// requires is missing. Without kernel (the kernel lab: the guest kernel
// is not this one) only programs are checked.
func UnavailableHere(s scenario.Scenario, reg *method.Registry, p method.Probe, kernel bool) []scenario.SkippedMethod {
	var out []scenario.SkippedMethod
	for _, name := range s.Methods {
		m, err := reg.Get(name)
		if err != nil {
			out = append(out, scenario.SkippedMethod{Method: name, Reason: err.Error()})
			continue
		}
		reqs := m.Requirements()
		if !kernel {
			// Only programs (shared through the host's root file
			// system) can be checked here.
			reqs = slices.DeleteFunc(slices.Clone(reqs), func(r method.Requirement) bool { return r.Kernel != "" })
		}
		if err := method.Check(p, reqs); err != nil {
			out = append(out, scenario.SkippedMethod{Method: name, Reason: err.Error()})
		}
	}
	return out
}

// wanRequirements checks what the scenario's wan conditions need: tc, and
// netem (delay, jitter, loss) or tbf (a rate alone) in the kernel when
// this machine's kernel carries the run.
func wanRequirements(s scenario.Scenario, p method.Probe, kernel bool) error {
	if len(s.WAN) == 0 {
		return nil
	}
	reqs := []method.Requirement{{Program: "tc", Package: "iproute2"}}
	for _, w := range s.WAN {
		v, err := w.Parse()
		if err != nil || !kernel {
			continue
		}
		k, mod := "CONFIG_NET_SCH_TBF", "sch_tbf"
		if v.NeedsNetem() {
			k, mod = "CONFIG_NET_SCH_NETEM", "sch_netem"
		}
		if !slices.ContainsFunc(reqs, func(r method.Requirement) bool { return r.Kernel == k }) {
			reqs = append(reqs, method.Requirement{Kernel: k, Module: mod})
		}
	}
	if err := method.Check(p, reqs); err != nil {
		return fmt.Errorf("wan (delay, jitter and loss need netem; a rate alone needs tbf): %w", err)
	}
	return nil
}

// congestionProbe is a probe that can list the congestion control
// algorithms the machine offers (the host probe; test fakes may not).
type congestionProbe interface {
	CongestionControls(want []string) ([]string, error)
}

// congestionRequirements refuses a congestion control algorithm this
// machine does not offer, naming those it does.
func congestionRequirements(s scenario.Scenario, p method.Probe) error {
	cp, ok := p.(congestionProbe)
	if !ok {
		return nil
	}
	want := s.CongestionControls()
	avail, err := cp.CongestionControls(want)
	if err != nil {
		return fmt.Errorf("congestion_control: %w", err)
	}
	return hostinfo.CongestionError("", hostinfo.MissingCongestion(want, avail), avail)
}
