package localns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces are bind-mounted (iproute2's convention).
const netnsDir = "/run/netns"

// KillInNamespace sends SIGKILL to every process whose network namespace is
// ns and waits (at most 5 s) until they are gone. It finds them
// through /proc/PID/ns/net, so it also finds processes of a run that was
// killed before it could record them; a process that only visits ns on one
// of its threads is not one of them (testbed.NetNamespace).
func KillInNamespace(ns netns.NsHandle) error {
	victims, err := killInNamespace(ns)
	return errors.Join(err, testbed.WaitGone(victims))
}

// killInNamespace sends SIGKILL to every process in ns and returns them.
func killInNamespace(ns netns.NsHandle) ([]testbed.Victim, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		return nil, fmt.Errorf("testbed: stat namespace: %w", err)
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("testbed: list processes: %w", err)
	}
	self := os.Getpid()
	var victims []testbed.Victim
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if ns, ok := testbed.NetNamespace(pid); !ok || ns != want {
			continue
		}
		v, err := testbed.Kill(pid)
		if err != nil {
			errs = append(errs, err)
		} else if v != nil {
			victims = append(victims, *v)
		}
	}
	return victims, errors.Join(errs...)
}

// Clean removes what killed runs left behind on this machine: the run
// directories under root with the processes recorded there and what
// their journals hold (testbed.CleanRunDir), namespaces named
// testbed.NamespacePrefix<id>-a|b (with every process inside them), the
// runs' devices in this namespace, BPF maps the ebpf-* methods pinned
// under testbed.BPFPinRoot, and lock files. A run whose lock is still
// held is alive and left alone. It returns what it removed.
func Clean(root string) ([]testbed.Leftover, error) {
	if root == "" {
		root = testbed.DefaultRoot
	}
	c := &cleaner{live: map[string]bool{}}
	if err := c.runDirs(root); err != nil {
		return nil, err
	}
	if err := c.namespaces(); err != nil {
		return c.removed, err
	}
	// Clean returns only once what it killed is gone: a daemon still
	// exiting could otherwise hold a socket or a device of the next run.
	c.fail(testbed.WaitGone(c.killed))
	c.devices()
	c.pins()
	c.locks()
	return c.removed, errors.Join(c.errs...)
}

// cleaner is one Clean: what it removed and killed so far, and which
// runs it found alive.
type cleaner struct {
	removed []testbed.Leftover
	killed  []testbed.Victim
	errs    []error
	live    map[string]bool
}

func (c *cleaner) fail(err error) {
	if err != nil {
		c.errs = append(c.errs, err)
	}
}

// dead reports whether run id is dead: its lock is not held.
func (c *cleaner) dead(id string) bool { return !c.live[id] && !testbed.Locked(id) }

// runDirs cleans the directories of dead runs under root
// (testbed.CleanRunDir) and notes the live ones.
func (c *cleaner) runDirs(root string) error {
	dirs, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("testbed: list %s: %w", root, err)
	}
	for _, d := range dirs {
		if !d.IsDir() || !testbed.ValidID(d.Name()) {
			continue
		}
		if testbed.Locked(d.Name()) {
			c.live[d.Name()] = true
			continue
		}
		removed, killed, err := testbed.CleanRunDir(filepath.Join(root, d.Name()))
		c.removed = append(c.removed, removed...)
		c.killed = append(c.killed, killed...)
		c.fail(err)
	}
	return nil
}

// namespaces deletes the namespaces of dead runs, killing every process
// in them first.
func (c *cleaner) namespaces() error {
	names, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("testbed: list %s: %w", netnsDir, err)
	}
	for _, n := range names {
		id, _, ok := testbed.ParseNamespace(n.Name())
		if !ok || !c.dead(id) {
			continue
		}
		c.killIn(n.Name())
		c.deleteNamespace(id, n.Name())
	}
	return nil
}

// killIn kills the processes in namespace name.
func (c *cleaner) killIn(name string) {
	ns, err := netns.GetFromName(name)
	if err != nil {
		return
	}
	defer ns.Close()
	procs, err := killInNamespace(ns)
	for _, p := range procs {
		if !slices.ContainsFunc(c.killed, func(k testbed.Victim) bool { return k.Pid == p.Pid }) {
			c.removed = append(c.removed, testbed.Leftover{Kind: "process", Name: p.String()})
			c.killed = append(c.killed, p)
		}
	}
	c.fail(err)
}

// deleteNamespace deletes namespace name of run id.
func (c *cleaner) deleteNamespace(id, name string) {
	err := netns.DeleteNamed(name)
	if err == nil {
		c.removed = append(c.removed, testbed.Leftover{Kind: "namespace", Name: name})
		return
	}
	// Another clean (a run starting at the same moment) may have
	// removed it first: gone is what we wanted.
	_, statErr := os.Stat(filepath.Join(netnsDir, name))
	if errors.Is(statErr, os.ErrNotExist) {
		return
	}
	// EINVAL: the name is not (or no longer) a mounted namespace: the
	// empty file a run killed between unmounting and unlinking it (in
	// its teardown), or between creating and mounting it, left behind.
	// A run takes its lock before it creates a namespace and drops it
	// after deleting both, so the file of a run still dead now is stale,
	// however young: a run killed in its teardown a few seconds after it
	// began leaves one (TestChaos found it).
	if errors.Is(err, unix.EINVAL) && statErr == nil {
		if c.dead(id) && os.Remove(filepath.Join(netnsDir, name)) == nil {
			c.removed = append(c.removed, testbed.Leftover{Kind: "namespace", Name: name})
		}
		return
	}
	c.fail(fmt.Errorf("testbed: delete namespace %s: %w", name, err))
}

// devices deletes the devices of dead runs in this namespace: on a host
// of an ssh testbed, the methods create theirs here.
func (c *cleaner) devices() {
	h, err := netlink.NewHandle()
	if err != nil {
		return
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return
	}
	for _, l := range links {
		id := testbed.RunOfDevice(l.Attrs().Name)
		if id == "" || !c.dead(id) {
			continue
		}
		if err := h.LinkDel(l); err != nil {
			c.fail(fmt.Errorf("testbed: delete device %s: %w", l.Attrs().Name, err))
			continue
		}
		c.removed = append(c.removed, testbed.Leftover{Kind: "device", Name: l.Attrs().Name})
	}
}

// pins removes the BPF maps the ebpf-* methods of dead runs pinned:
// BPFPinRoot/tb<id>-a|b.
func (c *cleaner) pins() {
	pins, _ := os.ReadDir(testbed.BPFPinRoot)
	for _, p := range pins {
		rest, ok := strings.CutPrefix(p.Name(), "tb")
		id := rest[:max(0, len(rest)-2)]
		if !ok || !testbed.ValidID(id) || !c.dead(id) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(testbed.BPFPinRoot, p.Name())); err != nil {
			c.fail(fmt.Errorf("testbed: unpin %s: %w", p.Name(), err))
			continue
		}
		c.removed = append(c.removed, testbed.Leftover{Kind: "bpf pins", Name: filepath.Join(testbed.BPFPinRoot, p.Name())})
	}
}

// locks removes the lock files of dead runs.
func (c *cleaner) locks() {
	locks, _ := os.ReadDir(testbed.LockDir)
	for _, f := range locks {
		if id, ok := strings.CutSuffix(f.Name(), ".lock"); ok && testbed.ValidID(id) {
			testbed.DropLock(id)
		}
	}
}
