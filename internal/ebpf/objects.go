package ebpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/tunbench/tunbench/internal/clsact"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PinRoot is where endpoints pin their maps, one directory each, so that
// "tunbench ebpf stats" and "tunbench clean" find them.
const PinRoot = "/sys/fs/bpf/tunbench"

// DefaultMaxRules is the capacity of the rules map unless Config says
// otherwise.
const DefaultMaxRules = 1 << 20

// Config tunes Load.
type Config struct {
	// MaxRules is the capacity of the rules map; 0 means DefaultMaxRules.
	MaxRules uint32
	// PinDir, when set, is a directory under a bpffs in which the maps are
	// pinned; Close leaves them, Unpin removes them.
	PinDir string
}

// Objects are one endpoint's loaded programs and maps.
type Objects struct {
	objs   tunnelObjects
	pinDir string
}

// Load loads the programs and creates the maps. Errors from a kernel that
// lacks something wrap ErrNotSupported and say what in one line.
func Load(cfg Config) (*Objects, error) {
	spec, err := loadTunnel()
	if err != nil {
		return nil, fmt.Errorf("ebpf: read tunnel programs: %w", err)
	}
	if cfg.MaxRules != 0 {
		spec.Maps["rules"].MaxEntries = cfg.MaxRules
	}
	o := &Objects{pinDir: cfg.PinDir}
	if err := spec.LoadAndAssign(&o.objs, nil); err != nil {
		return nil, fmt.Errorf("ebpf: load tunnel programs: %w", summarize(err))
	}
	if cfg.PinDir != "" {
		if err := o.pin(); err != nil {
			return nil, errors.Join(err, o.Close(), Unpin(cfg.PinDir))
		}
	}
	return o, nil
}

func (o *Objects) pin() error {
	if err := ensureBPFFS(filepath.Dir(o.pinDir)); err != nil {
		return err
	}
	if err := os.MkdirAll(o.pinDir, 0o700); err != nil {
		return fmt.Errorf("ebpf: create pin directory: %w", err)
	}
	for name, m := range o.maps() {
		if err := m.Pin(filepath.Join(o.pinDir, name)); err != nil {
			return fmt.Errorf("ebpf: pin %s: %w", name, err)
		}
	}
	return nil
}

func (o *Objects) maps() map[string]*ebpf.Map {
	return map[string]*ebpf.Map{"rules": o.objs.Rules, "decaps": o.objs.Decaps, "configs": o.objs.Configs, "drops": o.objs.Drops, "not_ours": o.objs.NotOurs}
}

// Table returns the endpoint's rule table.
func (o *Objects) Table() *Table {
	return newTable(o.objs.Rules, o.objs.Decaps, o.objs.Configs, o.objs.Drops, o.objs.NotOurs)
}

func newTable(rules, decaps, configs, drops, notOurs *ebpf.Map) *Table {
	return &Table{
		rules:  mapStore[tunnelRuleKey, tunnelRule]{rules},
		decaps: mapStore[tunnelDecapKey, tunnelDecap]{decaps},
		drops:  percpuSums(drops, len(DropReasons)),
		notOurs: func() (uint64, error) {
			n, err := percpuSums(notOurs, 1)()
			if err != nil {
				return 0, err
			}
			return n[0], nil
		},
		config: func(c tunnelConfig) error { return configs.Update(uint32(0), c, ebpf.UpdateAny) },
	}
}

// Egress and Ingress are the programs, for BPF_PROG_TEST_RUN.
func (o *Objects) Egress() *ebpf.Program  { return o.objs.TunnelEgress }
func (o *Objects) Ingress() *ebpf.Program { return o.objs.TunnelIngress }

// Close releases the file descriptors. Attached programs and pinned maps
// stay in the kernel.
func (o *Objects) Close() error { return o.objs.Close() }

// programs are the two filters Attach puts on a device.
func (o *Objects) programs() ([]clsact.Program, error) {
	var ps []clsact.Program
	for _, p := range []struct {
		parent, name string
		prog         *ebpf.Program
	}{
		{clsact.Ingress, "tunbench_ingress", o.objs.TunnelIngress},
		{clsact.Egress, "tunbench_egress", o.objs.TunnelEgress},
	} {
		info, err := p.prog.Info()
		if err != nil {
			return nil, fmt.Errorf("ebpf: read the ID of %s: %w", p.name, err)
		}
		id, _ := info.ID()
		ps = append(ps, clsact.Program{Name: p.name, Parent: p.parent, FD: p.prog.FD(), ID: uint32(id)})
	}
	return ps, nil
}

// Plan says how Attach would put the programs on dev in the namespace of
// h (see clsact.Plan): on dev's clsact qdisc, or on one it creates when
// dev has none, at the lowest free priorities. Journal the result, then
// Attach it.
func (o *Objects) Plan(h *netlink.Handle, dev string) (clsact.Attachment, error) {
	ps, err := o.programs()
	if err != nil {
		return clsact.Attachment{}, err
	}
	a, err := clsact.Plan(h, dev, ps)
	if err != nil {
		return a, fmt.Errorf("ebpf: %w", err)
	}
	return a, nil
}

// Attach puts the ingress and egress programs on a.Dev as Plan planned
// them (tc filters in direct-action mode), in the namespace of h: what
// "tc filter add dev DEV ingress|egress pref N handle 1 bpf da ..."
// does, after "tc qdisc add dev DEV clsact" when the device has no
// clsact qdisc. It replaces nothing. When a qdisc appeared since Plan it
// uses that one and clears a.QdiscCreated.
func (o *Objects) Attach(h *netlink.Handle, a *clsact.Attachment) error {
	ps, err := o.programs()
	if err != nil {
		return err
	}
	if err := clsact.Add(h, a, ps); err != nil {
		return fmt.Errorf("ebpf: %w", err)
	}
	return nil
}

// Detach takes the programs of a off its device: only tunbench's filters
// a lists, and the clsact qdisc when a created it and no other filter is
// left on it (see clsact.Remove). A missing device, qdisc or filter is
// not an error.
func Detach(h *netlink.Handle, a clsact.Attachment) error {
	if _, err := clsact.Remove(h, a); err != nil {
		return fmt.Errorf("ebpf: %w", err)
	}
	return nil
}

// Unpin removes a pin directory made by Load; a missing one is fine.
func Unpin(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("ebpf: unpin %s: %w", dir, err)
	}
	// The parent goes too once the last endpoint is gone.
	_ = os.Remove(filepath.Dir(dir))
	return nil
}

// Pinned is a table opened from pinned maps.
type Pinned struct {
	*Table
	Dir  string
	maps []*ebpf.Map
}

// Close releases the maps.
func (p *Pinned) Close() error {
	var errs []error
	for _, m := range p.maps {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// OpenPinned opens the maps an endpoint pinned in dir.
func OpenPinned(dir string) (*Pinned, error) {
	p := &Pinned{Dir: dir}
	byName := map[string]*ebpf.Map{}
	for _, name := range []string{"rules", "decaps", "configs", "drops", "not_ours"} {
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if errors.Is(err, os.ErrNotExist) && name == "not_ours" {
			err = fmt.Errorf("%w (pinned by an older tunbench, whose counters are laid out differently)", err)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("ebpf: open pinned %s: %w", name, err), p.Close())
		}
		p.maps = append(p.maps, m)
		byName[name] = m
	}
	p.Table = newTable(byName["rules"], byName["decaps"], byName["configs"], byName["drops"], byName["not_ours"])
	return p, nil
}

// PinDirs lists the pin directories under PinRoot.
func PinDirs() ([]string, error) {
	entries, err := os.ReadDir(PinRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ebpf: list %s: %w", PinRoot, err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(PinRoot, e.Name()))
		}
	}
	return dirs, nil
}

// ensureBPFFS makes sure dir lies on a bpffs, mounting one on
// /sys/fs/bpf when nothing is mounted there.
func ensureBPFFS(dir string) error {
	const bpffs = "/sys/fs/bpf"
	var st unix.Statfs_t
	if err := unix.Statfs(bpffs, &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		return os.MkdirAll(dir, 0o700)
	}
	if !strings.HasPrefix(dir, bpffs) {
		return fmt.Errorf("ebpf: %s is not on a bpffs", dir)
	}
	if err := unix.Mount("bpffs", bpffs, "bpf", 0, ""); err != nil {
		return fmt.Errorf("ebpf: mount bpffs on %s: %w", bpffs, err)
	}
	return os.MkdirAll(dir, 0o700)
}

// summarize turns a verifier error into its last line, so that a kernel
// which rejects the programs gets one readable reason.
func summarize(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		last := ""
		if n := len(ve.Log); n > 0 {
			last = ve.Log[n-1]
		}
		return fmt.Errorf("%w: the kernel's verifier rejects tunbench's tunnel programs: %s", ErrNotSupported, last)
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return err
}

// ErrNotSupported marks a kernel that cannot run the data path.
var ErrNotSupported = errors.New("not supported")
