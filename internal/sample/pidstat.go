package sample

import (
	"bytes"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// ProcStat is what the sampler needs from /proc/PID/stat.
type ProcStat struct {
	PID   int
	Comm  string // executable name, may contain spaces and parentheses
	State byte   // R, S, D, Z, I, ...
	// UTime and STime are the CPU time the process spent in user and kernel
	// mode, all threads included, in USER_HZ ticks.
	UTime uint64
	STime uint64
	// StartTime is when the process started, in ticks since boot. A PID
	// with a different StartTime is a different process.
	StartTime uint64
}

// UserSeconds is UTime in seconds.
func (p ProcStat) UserSeconds() float64 { return float64(p.UTime) / ClockTicks() }

// SystemSeconds is STime in seconds.
func (p ProcStat) SystemSeconds() float64 { return float64(p.STime) / ClockTicks() }

// ParseProcPIDStat parses /proc/PID/stat. The command name can contain any
// byte, ")" and spaces included, so it runs from the first "(" to the last
// ")"; the numeric fields are counted from there.
func ParseProcPIDStat(data []byte) (ProcStat, error) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return ProcStat{}, fmt.Errorf("parse /proc/PID/stat: no (comm) in %.40q", data)
	}
	pid, ok := parseUint(bytes.TrimSpace(data[:open]))
	if !ok || pid > 1<<31 {
		return ProcStat{}, fmt.Errorf("parse /proc/PID/stat: bad pid %q", bytes.TrimSpace(data[:open]))
	}
	p := ProcStat{PID: int(pid), Comm: string(data[open+1 : closing])}
	// Fields after the comm, numbered as in proc(5): state is 3, utime 14,
	// stime 15, starttime 22.
	rest := data[closing+1:]
	for n := 3; n <= 22; n++ {
		var f []byte
		f, rest = nextField(rest)
		if len(f) == 0 {
			return ProcStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields, want at least 22", pid, n-1)
		}
		switch n {
		case 3:
			p.State = f[0]
		case 14, 15, 22:
			v, ok := parseUint(f)
			if !ok {
				return ProcStat{}, fmt.Errorf("parse /proc/%d/stat: field %d not a number: %q", pid, n, f)
			}
			switch n {
			case 14:
				p.UTime = v
			case 15:
				p.STime = v
			case 22:
				p.StartTime = v
			}
		}
	}
	return p, nil
}

// userHZ is USER_HZ, the unit of every tick count the kernel exports in
// /proc. It is fixed at 100 on x86, arm64 and every other architecture
// tunbench runs on (the kernel's internal CONFIG_HZ, 250 on this machine,
// is not visible through /proc).
const userHZ = 100

// atClkTck is AT_CLKTCK from <linux/auxvec.h>: the auxiliary vector entry
// that glibc's sysconf(_SC_CLK_TCK) returns.
const atClkTck = 17

var clockTicks = sync.OnceValue(func() float64 {
	auxv, err := unix.Auxv()
	if err != nil {
		return userHZ
	}
	for _, kv := range auxv {
		if kv[0] == atClkTck && kv[1] > 0 {
			return float64(kv[1])
		}
	}
	return userHZ
})

// ClockTicks returns USER_HZ, ticks per second of /proc's counters, as
// sysconf(_SC_CLK_TCK) would (from the ELF auxiliary vector), or 100 when
// the vector is unavailable.
func ClockTicks() float64 { return clockTicks() }
