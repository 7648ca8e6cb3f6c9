package sample

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"golang.org/x/sys/unix"
)

// Tracked describes a process registered with TrackProcess.
type Tracked struct {
	Role string
	Side string
	PID  int
	// Exited is true once the process was found gone (or its PID reused):
	// its CPU time is then the last value read, at most one interval old.
	Exited bool
}

type process struct {
	Tracked
	path   string // "PID/stat"
	base   ProcStat
	last   ProcStat
	baseAt time.Time
	// unread is a process that had exited (and was reaped) before its
	// first read: its CPU time is what ExitedCPU gives, none until then.
	unread bool
}

// TrackProcess accounts the CPU time of process pid to role (e.g.
// "iperf3-client", "wireguard-go") on side SideSender or SideReceiver.
// Before Start, the process must exist and is measured from Start; while
// sampling, it is measured from this call, so register a process right after
// starting it: CPU time it used before is not counted. The process is re-read
// every interval, so one that exits keeps the time last read.
//
// A process already gone when tracked (a short client that finished and
// was reaped before its /proc entry could be read, on a loaded host) is
// no error here: it is registered as exited, and its CPU time is what
// ExitedCPU gives from its exit status; Stop fails when none was given,
// since a zero would read as free.
func (s *Sampler) TrackProcess(role, side string, pid int) error {
	if side != SideSender && side != SideReceiver {
		return fmt.Errorf("track process %d (%s): side %q is not %q or %q", pid, role, side, SideSender, SideReceiver)
	}
	if pid <= 0 {
		return fmt.Errorf("track process %d (%s): bad pid", pid, role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateStopped {
		return fmt.Errorf("track process %d (%s): sampler stopped", pid, role)
	}
	for _, p := range s.procs {
		if p.PID == pid {
			return fmt.Errorf("track process %d (%s): already tracked as %s", pid, role, p.Role)
		}
	}
	p := &process{Tracked: Tracked{Role: role, Side: side, PID: pid}, path: strconv.Itoa(pid) + "/stat"}
	if err := s.baseline(p, s.now()); errors.Is(err, fs.ErrNotExist) {
		p.Exited, p.unread, p.baseAt = true, true, s.now()
	} else if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return nil
}

// ExitedCPU gives the CPU time of tracked process pid from its exit
// status (testbed.Cmd.CPUTime, its whole life's), used when the process
// had exited before it could be read; for any other it does nothing. It
// reports whether it was used.
func (s *Sampler) ExitedCPU(pid int, user, sys time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.PID == pid && p.unread {
			p.unread = false
			p.base, p.last = ProcStat{}, ProcStat{UTime: ticks(user), STime: ticks(sys)}
			return true
		}
	}
	return false
}

// ticks is d in clock ticks, as /proc/PID/stat counts CPU time.
func ticks(d time.Duration) uint64 { return uint64(d.Seconds()*ClockTicks() + 0.5) }

// unreadError is the error of a process that exited before it could be
// read and whose CPU time ExitedCPU never gave; nil when there is none.
// Called with mu held.
func (s *Sampler) unreadError() error {
	for _, p := range s.procs {
		if p.unread {
			return fmt.Errorf("track process %d (%s): it exited before its CPU time could be read, and its exit status gave none: %w",
				p.PID, p.Role, fs.ErrNotExist)
		}
	}
	return nil
}

// Tracked returns the tracked processes in registration order; after Stop,
// Exited says which had exited by then.
func (s *Sampler) Tracked() []Tracked {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Tracked, len(s.procs))
	for i, p := range s.procs {
		out[i] = p.Tracked
	}
	return out
}

// baseline reads p as its starting point. Called with mu held.
func (s *Sampler) baseline(p *process, now time.Time) error {
	st, gone, err := s.readProcess(p)
	if err != nil {
		return fmt.Errorf("track process %d (%s): %w", p.PID, p.Role, err)
	}
	if gone {
		return fmt.Errorf("track process %d (%s): %w", p.PID, p.Role, fs.ErrNotExist)
	}
	p.base, p.last, p.baseAt = st, st, now
	return nil
}

// readProcesses re-reads every tracked process still alive. Called with mu
// held.
func (s *Sampler) readProcesses() error {
	for _, p := range s.procs {
		if p.Exited {
			continue
		}
		st, gone, err := s.readProcess(p)
		if err != nil {
			return fmt.Errorf("read process %d (%s): %w", p.PID, p.Role, err)
		}
		if gone || st.StartTime != p.base.StartTime {
			p.Exited = true
			continue
		}
		p.last = st
	}
	return nil
}

// readProcess reads /proc/PID/stat; gone reports that the process no
// longer exists.
func (s *Sampler) readProcess(p *process) (st ProcStat, gone bool, err error) {
	data, err := s.fs.ReadFile(p.path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return ProcStat{}, true, nil
	}
	if err != nil {
		return ProcStat{}, false, err
	}
	st, err = ParseProcPIDStat(data)
	return st, false, err
}

// result is p's CPU time from its baseline to the last read, per wall
// second from its baseline to now (the end of the measurement, also for a
// process that exited before: its Cores is its share of the measurement).
func (p *process) result(now time.Time) result.ProcessCPU {
	user := float64(delta(p.base.UTime, p.last.UTime)) / ClockTicks()
	sys := float64(delta(p.base.STime, p.last.STime)) / ClockTicks()
	r := result.ProcessCPU{Role: p.Role, Side: p.Side, PID: p.PID, User: user, System: sys}
	if wall := now.Sub(p.baseAt).Seconds(); wall > 0 {
		r.Cores = (user + sys) / wall
	}
	return r
}
