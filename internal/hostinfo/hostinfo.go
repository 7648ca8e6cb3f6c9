package hostinfo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/tunbench/tunbench/internal/result"
)

// Collect describes this machine: hostname, kernel release, machine
// architecture (uname -m), CPU model and count, memory, the tunbench and Go
// versions, the versions of the installed Tools (run through r, each with
// a 2 s timeout), the Sysctls, the OS release, and the host's class
// (ReadClass: bare-metal, vm with its hypervisor, or emulated). It sets
// Host.Emulated when the class is emulated; a testbed that knows better
// (the kernel lab under software emulation) may set it too.
func Collect(ctx context.Context, r Runner) (result.Host, error) {
	return collector{procDir: "/proc", root: "/", cpuid: ReadCPUID, run: r, tools: Tools}.collect(ctx)
}

// collector holds what tests replace: the /proc tree, the root the class
// and OS release are read under, CPUID and the runner.
type collector struct {
	procDir string
	root    string
	cpuid   func() CPUIDInfo
	run     Runner
	tools   []Tool
}

func (c collector) collect(ctx context.Context) (result.Host, error) {
	var h result.Host
	name, err := os.Hostname()
	if err != nil {
		return h, fmt.Errorf("collect host info: hostname: %w", err)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return h, fmt.Errorf("collect host info: uname: %w", err)
	}
	cpuinfo, err := os.ReadFile(filepath.Join(c.procDir, "cpuinfo"))
	if err != nil {
		return h, fmt.Errorf("collect host info: %w", err)
	}
	meminfo, err := os.ReadFile(filepath.Join(c.procDir, "meminfo"))
	if err != nil {
		return h, fmt.Errorf("collect host info: %w", err)
	}
	mem, err := ParseMemTotalMiB(meminfo)
	if err != nil {
		return h, fmt.Errorf("collect host info: %w", err)
	}
	sysctls, err := readSysctls(c.procDir, Sysctls)
	if err != nil {
		return h, fmt.Errorf("collect host info: %w", err)
	}
	ci := ParseCPUInfo(cpuinfo)
	if ci.Count == 0 {
		ci.Count = runtime.NumCPU()
	}
	info, ok := debug.ReadBuildInfo()
	h = result.Host{
		Hostname:  name,
		Kernel:    unix.ByteSliceToString(u.Release[:]),
		Arch:      unix.ByteSliceToString(u.Machine[:]),
		CPUModel:  ci.Model,
		CPUCount:  ci.Count,
		MemoryMiB: mem,
		Tunbench:  tunbenchVersion(info, ok),
		GoVersion: runtime.Version(),
		Tools:     toolVersions(ctx, c.run, c.tools),
		Sysctls:   sysctls,
		OSRelease: readOSRelease(c.root),
	}
	hc := DecideClass(readClassInput(c.root, c.cpuid()))
	h.Class, h.Hypervisor, h.ClassEvidence = hc.Class, hc.Hypervisor, hc.Evidence
	h.Emulated = hc.Class == result.ClassEmulated
	return h, nil
}
