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
// a 2 s timeout) and the Sysctls. It leaves Host.Emulated false: only the
// testbed knows whether it runs in an emulated guest.
func Collect(ctx context.Context, r Runner) (result.Host, error) {
	return collector{procDir: "/proc", run: r, tools: Tools}.collect(ctx)
}

// collector holds what tests replace: the /proc tree and the runner.
type collector struct {
	procDir string
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
	}
	return h, nil
}
