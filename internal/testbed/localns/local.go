package localns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Underlay addresses of the local testbed, from the benchmarking ranges
// (RFC 2544 198.18.0.0/15, RFC 5180 2001:2::/48).
var (
	UnderlayA4 = netip.MustParsePrefix("198.18.0.1/24")
	UnderlayB4 = netip.MustParsePrefix("198.18.0.2/24")
	UnderlayA6 = netip.MustParsePrefix("2001:2::1/64")
	UnderlayB6 = netip.MustParsePrefix("2001:2::2/64")
)

// Config describes a local testbed.
type Config struct {
	// ID is the run identifier (testbed.NewID). Required.
	ID string
	// Root holds the run's private directory; testbed.DefaultRoot when
	// empty.
	Root string
	// MTU of the underlay veth pair; 1500 when zero.
	MTU int
	// Pin puts side a on the first half of the CPUs and side b on the rest.
	Pin bool
}

// Local is two namespaces joined by a veth pair.
type Local struct {
	ID   string
	Dir  string
	MTU  int
	A, B *testbed.Endpoint
	lock *os.File
}

// NewLocal creates the namespaces, the veth pair and the run directory.
// On error everything already created is removed again.
func NewLocal(cfg Config) (l *Local, err error) {
	if !testbed.ValidID(cfg.ID) {
		return nil, fmt.Errorf("testbed: invalid run id %q", cfg.ID)
	}
	if cfg.Root == "" {
		cfg.Root = testbed.DefaultRoot
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	l = &Local{ID: cfg.ID, MTU: cfg.MTU, Dir: filepath.Join(cfg.Root, cfg.ID)}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close())
			l = nil
		}
	}()
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return l, fmt.Errorf("testbed: create run directory: %w", err)
	}
	lock, err := testbed.TakeLock(cfg.ID, unix.LOCK_EX)
	if err != nil {
		return l, err
	}
	l.lock = lock

	dev := testbed.DevicePrefix(cfg.ID)
	l.A = &testbed.Endpoint{Side: "a", Namespace: testbed.NamespaceName(cfg.ID, "a"), Dev: dev + "-a", Addr4: UnderlayA4, Addr6: UnderlayA6, Dir: l.Dir, NS: -1}
	l.B = &testbed.Endpoint{Side: "b", Namespace: testbed.NamespaceName(cfg.ID, "b"), Dev: dev + "-b", Addr4: UnderlayB4, Addr6: UnderlayB6, Dir: l.Dir, NS: -1}
	if cfg.Pin {
		l.A.CPUs, l.B.CPUs = splitCPUs(runtime.NumCPU())
	}
	for _, e := range []*testbed.Endpoint{l.A, l.B} {
		ns, err := newNamed(e.Namespace)
		if err != nil {
			return l, fmt.Errorf("testbed: create namespace %s: %w", e.Namespace, err)
		}
		e.NS = ns
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			return l, fmt.Errorf("testbed: netlink handle in %s: %w", e.Namespace, err)
		}
		e.NL = h
	}

	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: l.A.Dev, MTU: cfg.MTU, Namespace: netlink.NsFd(l.A.NS)},
		PeerName:      l.B.Dev,
		PeerMTU:       uint32(cfg.MTU),
		PeerNamespace: netlink.NsFd(l.B.NS),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return l, fmt.Errorf("testbed: create veth pair %s/%s (mtu %d): %w", l.A.Dev, l.B.Dev, cfg.MTU, err)
	}
	for _, e := range []*testbed.Endpoint{l.A, l.B} {
		if err := configure(e); err != nil {
			return l, err
		}
	}
	for _, e := range []*testbed.Endpoint{l.A, l.B} {
		if err := waitOperUp(e.NL, e.Dev, operUpTimeout); err != nil {
			return l, fmt.Errorf("testbed: %s: %w", e.Side, err)
		}
	}
	return l, nil
}

// operUpTimeout bounds the wait for a new veth pair to be operationally
// up: the kernel's link watch defers a carrier change by up to a second.
const operUpTimeout = 5 * time.Second

// waitOperUp waits until dev is operationally up (IFF_RUNNING, operstate
// up), polling every 10 ms for at most timeout.
//
// Setting a device up is not enough before measuring over it: the kernel
// turns a carrier change into IFF_RUNNING and operstate up in its link
// watch work, which it may defer by up to a second (events it does not
// deem urgent are batched at most once a second). Until then the device
// already passes packets (IFF_LOWER_UP is set) but reads as down. In the
// kernel lab's emulated guest a cell often began within that second, and
// its fault watch took the pending state for a link that went down.
func waitOperUp(nl testbed.Netlink, dev string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, err := nl.LinkByName(dev)
		if err != nil {
			return fmt.Errorf("wait for %s to come up: %w", dev, err)
		}
		a := l.Attrs()
		if a.RawFlags&unix.IFF_RUNNING != 0 && a.OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not operationally up %v after it was set up (flags %v, operstate %v)", dev, timeout, a.Flags, a.OperState)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// splitCPUs divides n CPUs between the two sides: a gets the first half,
// b the rest. With one CPU both share it.
func splitCPUs(n int) (a, b []int) {
	if n < 2 {
		return []int{0}, []int{0}
	}
	for i := 0; i < n; i++ {
		if i < n/2 {
			a = append(a, i)
		} else {
			b = append(b, i)
		}
	}
	return a, b
}

func configure(e *testbed.Endpoint) error {
	lo, err := e.NL.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("testbed: %s: find lo: %w", e.Side, err)
	}
	if err := e.NL.LinkSetUp(lo); err != nil {
		return fmt.Errorf("testbed: %s: set lo up: %w", e.Side, err)
	}
	link, err := e.NL.LinkByName(e.Dev)
	if err != nil {
		return fmt.Errorf("testbed: %s: find %s: %w", e.Side, e.Dev, err)
	}
	for _, p := range []netip.Prefix{e.Addr4, e.Addr6} {
		addr := &netlink.Addr{IPNet: testbed.PrefixNet(p)}
		if p.Addr().Is6() {
			// No duplicate address detection: the address is usable at once.
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := e.NL.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("testbed: %s: add %s to %s: %w", e.Side, p, e.Dev, err)
		}
	}
	if err := e.NL.LinkSetUp(link); err != nil {
		return fmt.Errorf("testbed: %s: set %s up: %w", e.Side, e.Dev, err)
	}
	return nil
}

// Endpoints returns both endpoints, a first.
func (l *Local) Endpoints() []*testbed.Endpoint { return []*testbed.Endpoint{l.A, l.B} }

// Close kills every process started in the testbed, deletes both
// namespaces (and with them every device inside) and removes the run
// directory. It is safe to call on a partly built testbed and more than once.
func (l *Local) Close() error {
	var errs []error
	for _, e := range []*testbed.Endpoint{l.A, l.B} {
		if e == nil {
			continue
		}
		if err := e.StopAll(); err != nil {
			errs = append(errs, err)
		}
		if e.NS >= 0 {
			errs = append(errs, KillInNamespace(e.NS))
		}
		if e.NL != nil {
			e.NL.Close()
			e.NL = nil
		}
		if e.NS >= 0 {
			e.NS.Close()
			e.NS = -1
		}
		if err := netns.DeleteNamed(e.Namespace); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("testbed: delete namespace %s: %w", e.Namespace, err))
		}
	}
	if l.Dir != "" {
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, fmt.Errorf("testbed: remove %s: %w", l.Dir, err))
		}
	}
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
		testbed.DropLock(l.ID)
		// Leave no empty directories behind either; a directory still in
		// use by another run is not empty and stays.
		_ = os.Remove(testbed.LockDir)
		_ = os.Remove(filepath.Dir(l.Dir))
		_ = os.Remove(filepath.Dir(testbed.LockDir))
	}
	return errors.Join(errs...)
}

// created counts the namespaces this process has created.
var created atomic.Int64

// NamespacesCreated returns how many namespaces this process has created:
// tests use it to prove that refused input created none, whatever other
// processes do meanwhile.
func NamespacesCreated() int64 { return created.Load() }

// newNamed creates a named namespace without moving the caller's thread.
func newNamed(name string) (netns.NsHandle, error) {
	if err := prepareNetnsDir(); err != nil {
		return netns.None(), err
	}
	created.Add(1)
	var h netns.NsHandle
	// An endpoint in no namespace of its own runs fn on a locked OS
	// thread that goes back to this namespace after: the caller's stays.
	here := &testbed.Endpoint{NS: -1}
	err := here.Do(func() error {
		var err error
		h, err = netns.NewNamed(name)
		return err
	})
	return h, err
}

// prepareNetnsDir makes /run/netns a shared mount point of its own, as
// "ip netns add" does the first time it runs, before tunbench mounts a
// namespace there. Otherwise an "ip netns add" run later (by the user, or
// by another tool) binds the directory onto itself over tunbench's mounts,
// and those namespaces can no longer be deleted by name: umount says
// "invalid argument", unlink "device or resource busy".
func prepareNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return fmt.Errorf("testbed: create %s: %w", netnsDir, err)
	}
	err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == unix.EINVAL { // not a mount point yet
		if err = unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("testbed: make %s a shared mount point (as ip netns add does): %w", netnsDir, err)
	}
	return nil
}

// releaseLock drops the run-directory lock, as the death of the process
// would; tests use it to simulate a killed run.
func (l *Local) releaseLock() {
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
	}
}

// LocalTestbed is the default testbed: for each cell, two fresh network
// namespaces on this machine joined by a veth pair (NewLocal).
type LocalTestbed struct {
	// ID is the run identifier; Root holds its directory
	// (testbed.DefaultRoot when empty).
	ID, Root string
}

// Name is "local".
func (LocalTestbed) Name() string { return "local" }

// Pair builds a fresh namespace pair for one cell.
func (t LocalTestbed) Pair(_ context.Context, spec testbed.Spec) (*testbed.Pair, error) {
	if spec.A != "" || spec.B != "" {
		return nil, errors.New("testbed: the local testbed has no named sites")
	}
	if err := testbed.CheckNetwork("local", spec); err != nil {
		return nil, err
	}
	l, err := NewLocal(Config{ID: t.ID, Root: t.Root, MTU: spec.UnderlayMTU, Pin: spec.Pin})
	if err != nil {
		return nil, err
	}
	return l.Pair(), nil
}

// Pair returns the testbed as a Pair whose Close closes it.
func (l *Local) Pair() *testbed.Pair { return testbed.NewPair(l.A, l.B, l.Dir, l.Close) }
