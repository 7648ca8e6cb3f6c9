package sample

import (
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// fakeProc is a /proc whose counters advance by fixed steps on every read,
// so every interval shows the same, known utilisation however long it
// really took. It is not safe for concurrent use, like ProcFS.
type fakeProc struct {
	cpus  []CPUTimes
	step  Times // added to every core on each read of "stat"
	procs map[int]*fakePID
	now   time.Time
	tick  time.Duration // added to now on each read of "stat"
	reads int           // reads of "stat"
	fail  error         // returned by reads of "stat" when set
}

type fakePID struct {
	comm         string
	utime, stime uint64
	du, ds       uint64 // added on each read
	start        uint64
	readsLeft    int // reads before it exits; <0 never exits
	reads        int
}

func newFakeProc(cores int, step Times) *fakeProc {
	f := &fakeProc{step: step, procs: map[int]*fakePID{}, now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range cores {
		f.cpus = append(f.cpus, CPUTimes{ID: i, Times: Times{User: 1000, System: 500, Idle: 9000, Softirq: 40}})
	}
	return f
}

func (f *fakeProc) clock() time.Time { return f.now }

func (f *fakeProc) ReadFile(name string) ([]byte, error) {
	if name == "stat" {
		if f.fail != nil {
			return nil, f.fail
		}
		f.reads++
		f.now = f.now.Add(f.tick)
		for i := range f.cpus {
			f.cpus[i].Times = addTimes(f.cpus[i].Times, f.step)
		}
		return []byte(f.procStat()), nil
	}
	var pid int
	if _, err := fmt.Sscanf(name, "%d/stat", &pid); err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/proc/" + name, Err: fs.ErrNotExist}
	}
	p, ok := f.procs[pid]
	if !ok || p.readsLeft == 0 {
		return nil, &fs.PathError{Op: "open", Path: "/proc/" + name, Err: fs.ErrNotExist}
	}
	p.readsLeft--
	p.reads++
	p.utime += p.du
	p.stime += p.ds
	// Same layout as a real line (see testdata/pid_stat_parens).
	return fmt.Appendf(nil, "%d (%s) S 1 %d %d 0 -1 4194304 132 0 0 0 %d %d 0 0 20 0 1 0 %d 2990080 410 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, p.comm, pid, pid, p.utime, p.stime, p.start), nil
}

// procStat renders the counters as /proc/stat does.
func (f *fakeProc) procStat() string {
	var all Times
	for _, c := range f.cpus {
		all = addTimes(all, c.Times)
	}
	var b strings.Builder
	line := func(label string, t Times) {
		fmt.Fprintf(&b, "%s %d %d %d %d %d %d %d %d %d %d\n", label,
			t.User, t.Nice, t.System, t.Idle, t.Iowait, t.Irq, t.Softirq, t.Steal, t.Guest, t.GuestNice)
	}
	line("cpu ", all)
	for _, c := range f.cpus {
		line(fmt.Sprintf("cpu%d", c.ID), c.Times)
	}
	b.WriteString("intr 198088 0 0 0 0\nctxt 327863\nbtime 1763784000\nprocesses 3650\nprocs_running 1\nprocs_blocked 0\nsoftirq 1 0 0 0 0 0 0 0 0 0 1\n")
	return b.String()
}

func addTimes(a, b Times) Times {
	return Times{
		User: a.User + b.User, Nice: a.Nice + b.Nice, System: a.System + b.System,
		Idle: a.Idle + b.Idle, Iowait: a.Iowait + b.Iowait, Irq: a.Irq + b.Irq,
		Softirq: a.Softirq + b.Softirq, Steal: a.Steal + b.Steal,
		Guest: a.Guest + b.Guest, GuestNice: a.GuestNice + b.GuestNice,
	}
}
