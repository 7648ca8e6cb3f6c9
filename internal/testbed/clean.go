package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

// killWait bounds how long WaitGone waits for the processes killed to be
// gone.
var killWait = 5 * time.Second

// Victim is a process that was sent SIGKILL; its start time (in clock
// ticks) tells it apart from a later process that reuses the pid.
type Victim struct {
	Pid   int
	Name  string
	start string
}

func (v Victim) String() string { return fmt.Sprintf("%d (%s)", v.Pid, v.Name) }

// Kill sends SIGKILL to pid; a nil Victim means it was already gone.
func Kill(pid int) (*Victim, error) {
	st, ok := readProcStat(pid)
	if !ok {
		return nil, nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil, nil
		}
		return nil, fmt.Errorf("testbed: kill pid %d (%s): %w", pid, st.comm, err)
	}
	return &Victim{Pid: pid, start: st.start, Name: st.comm}, nil
}

// NetNamespace is the network namespace ("net:[inode]") process pid lives
// in: the one every thread of it is in. ok is false when the threads
// differ or the process cannot be read. /proc/PID/ns/net is the
// namespace of the process's first thread alone, and a multi-threaded
// program enters a namespace on one thread for a moment (tunbench's
// Endpoint.Do, a test dialling into a site's namespace; Go runs such a
// goroutine on the first thread too): killed as the namespace's, a live
// run or a test binary died with a namespace it was only looking into (a
// clean-clone run's internal/cli tests ended in "signal: killed"). A
// process living in a namespace started there, and all its threads with
// it.
func NetNamespace(pid int) (ns string, ok bool) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	ns, err := os.Readlink(filepath.Join(proc, "ns", "net"))
	if err != nil {
		return "", false
	}
	tasks, err := os.ReadDir(filepath.Join(proc, "task"))
	if err != nil {
		return ns, true // gone meanwhile, or unreadable: its first thread says so
	}
	for _, t := range tasks {
		if l, err := os.Readlink(filepath.Join(proc, "task", t.Name(), "ns", "net")); err == nil && l != ns {
			return "", false
		}
	}
	return ns, true
}

// procStat is what Kill and WaitGone read of /proc/PID/stat.
type procStat struct {
	comm  string
	state byte
	start string // field 22, starttime
}

func readProcStat(pid int) (procStat, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(string(data))
}

// parseProcStat reads "pid (comm) state ppid ... starttime ...": comm may
// hold spaces and parentheses, so the fields count from its last ')'.
func parseProcStat(s string) (procStat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	return procStat{comm: s[open+1 : end], state: f[0][0], start: f[19]}, true
}

// gone reports whether v has exited: no such process, a zombie (dead,
// waiting for its parent to reap it), or the pid now belongs to another
// process.
func (v Victim) gone() bool {
	st, ok := readProcStat(v.Pid)
	return !ok || st.state == 'Z' || st.state == 'X' || st.start != v.start
}

// WaitGone waits (at most 5 s) until every victim is gone, and otherwise
// returns the error that names those still alive.
func WaitGone(vs []Victim) error {
	survivors := waitGone(vs, killWait)
	if len(survivors) == 0 {
		return nil
	}
	names := make([]string, len(survivors))
	for i, v := range survivors {
		names[i] = v.String()
	}
	return fmt.Errorf("testbed: still alive %s after SIGKILL: %s (see /proc/PID/stack; a process in uninterruptible sleep exits when its I/O completes)",
		killWait, strings.Join(names, ", "))
}

// waitGone polls until every victim is gone or timeout passes, and
// returns those still alive.
func waitGone(vs []Victim, timeout time.Duration) []Victim {
	deadline := time.Now().Add(timeout)
	for {
		vs = slices.DeleteFunc(vs, Victim.gone)
		if len(vs) == 0 || time.Now().After(deadline) {
			return vs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Leftover is something a previous run left behind.
type Leftover struct {
	Kind string // "namespace", "directory", "process"
	Name string
}

func (l Leftover) String() string { return l.Kind + " " + l.Name }

// CleanRunDir removes the directory dir of a dead run: it kills the
// processes recorded in it and in its site directories (an ssh
// testbed's sites keep theirs one level down), puts back what the
// sites' journals hold, and removes the directory. A site whose journal
// names a device this namespace lacks is another host's (test hosts
// sharing one file system): it stays, for that host's clean. It returns
// what it removed and the processes it killed, for the caller to wait
// for (WaitGone).
func CleanRunDir(dir string) ([]Leftover, []Victim, error) {
	var removed []Leftover
	procs, err := KillRecorded(dir)
	var keep []string // site directories of another host
	subs, _ := os.ReadDir(dir)
	for _, s := range subs {
		if !s.IsDir() || s.Name() == "pids" {
			continue
		}
		site := filepath.Join(dir, s.Name())
		more, err2 := KillRecorded(site)
		procs = append(procs, more...)
		// What the site's run changed on this host's own devices goes
		// back before its journal is removed.
		restored, foreign, err3 := applyJournalHere(site)
		removed = append(removed, restored...)
		err = errors.Join(err, err2, err3)
		if foreign {
			keep = append(keep, s.Name())
		}
	}
	for _, p := range procs {
		removed = append(removed, Leftover{"process", p.String()})
	}
	gone, err2 := removeRunDir(dir, keep)
	return append(removed, gone...), procs, errors.Join(err, err2)
}

// removeRunDir removes dir, or, when keep names some of its entries,
// every other entry.
func removeRunDir(dir string, keep []string) ([]Leftover, error) {
	if len(keep) == 0 {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("testbed: remove %s: %w", dir, err)
		}
		return []Leftover{{"directory", dir}}, nil
	}
	var removed []Leftover
	var errs []error
	subs, _ := os.ReadDir(dir)
	for _, s := range subs {
		if slices.Contains(keep, s.Name()) {
			continue
		}
		p := filepath.Join(dir, s.Name())
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("testbed: remove %s: %w", p, err))
		} else {
			removed = append(removed, Leftover{"directory", p})
		}
	}
	return removed, errors.Join(errs...)
}

// BPFPinRoot is where the ebpf-* methods pin their maps, one directory per
// endpoint named DevicePrefix(id)-side (ebpf.PinRoot).
var BPFPinRoot = "/sys/fs/bpf/tunbench"

// KillRecorded kills the processes whose pids a run wrote to dir/pids, when
// the process still runs the recorded program (WritePidFile), and
// returns them.
func KillRecorded(dir string) ([]Victim, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "pids"))
	if err != nil {
		return nil, nil
	}
	var killed []Victim
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		rec, _ := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		want, start, _ := strings.Cut(string(rec), "\n")
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) != filepath.Base(want) {
			continue // pid reused by something else
		}
		// The same program under a reused pid (another run's tunbench
		// agent, say) is not the recorded process either: its start time
		// differs. A record without one (an older tunbench's) has only
		// the program to go by.
		if st, ok := readProcStat(pid); start != "" && (!ok || st.start != start) {
			continue
		}
		v, err := Kill(pid)
		if err != nil {
			errs = append(errs, err)
		} else if v != nil {
			v.Name = argv0
			killed = append(killed, *v)
		}
	}
	return killed, errors.Join(errs...)
}

// applyJournalHere applies the journal of the site directory dir in this
// process's network namespace. A journal naming a device this namespace
// lacks is another host's, one sharing this filesystem (test hosts in
// namespaces of one machine): it is left alone, foreign, for that host's
// clean.
func applyJournalHere(dir string) (restored []Leftover, foreign bool, err error) {
	ents, err := os.ReadDir(undoDir(dir))
	if err != nil {
		return nil, false, nil
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, false, fmt.Errorf("testbed: netlink: %w", err)
	}
	defer h.Close()
	for _, e := range ents {
		u, ok, _ := readUndo(dir, e.Name())
		// A device to delete may well be missing.
		if !ok || u.Dev == "" || u.Kind == UndoDelLink {
			continue
		}
		if _, err := h.LinkByName(u.Dev); err != nil {
			return nil, true, nil
		}
	}
	restored, err = ApplyJournal(h, dir)
	return restored, false, err
}
