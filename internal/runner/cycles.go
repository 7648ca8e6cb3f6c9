package runner

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cycleCounter counts CPU cycles on every CPU of the machine between
// start and stop. The perf_event one is the real counter; tests use a
// fake.
type cycleCounter interface {
	start() error
	// stop returns the cycles counted on all CPUs since start and
	// releases the counter.
	stop() (uint64, error)
}

// perfCycles is one PERF_COUNT_HW_CPU_CYCLES counter per CPU, system wide
// (pid -1), in counting mode: the kernel adds to a register, nothing is
// sampled or written to a buffer, so the harness costs nothing while it
// runs. Opening needs hardware counters the kernel exposes (a bare-metal
// PMU or a hypervisor that passes one through) and root or
// perf_event_paranoid ≤ 0.
type perfCycles struct {
	fds []int
}

func (p *perfCycles) start() error {
	n := runtime.NumCPU()
	for cpu := range n {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_HARDWARE,
			Config: unix.PERF_COUNT_HW_CPU_CYCLES,
			Bits:   unix.PerfBitDisabled,
		}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			p.close()
			return fmt.Errorf("perf_event_open cycles on cpu %d: %w", cpu, err)
		}
		p.fds = append(p.fds, fd)
	}
	for _, fd := range p.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			p.close()
			return fmt.Errorf("enable cycle counter: %w", err)
		}
	}
	return nil
}

func (p *perfCycles) stop() (uint64, error) {
	defer p.close()
	for _, fd := range p.fds {
		_ = unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
	var total uint64
	buf := make([]byte, 8)
	for _, fd := range p.fds {
		n, err := unix.Read(fd, buf)
		if err != nil {
			return 0, fmt.Errorf("read cycle counter: %w", err)
		}
		if n != 8 {
			return 0, fmt.Errorf("read cycle counter: %d bytes, want 8", n)
		}
		total += binary.NativeEndian.Uint64(buf)
	}
	return total, nil
}

func (p *perfCycles) close() {
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	p.fds = nil
}
