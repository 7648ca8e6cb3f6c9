// Package clsacttest gives a test device the tc filters of a host with a
// datapath of its own (Cilium, any tc-BPF program, a u32 filter), and
// describes a device's tc state, for the tests that tunbench leaves
// them exactly as they were.
package clsacttest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// HostProg is the name of the host's BPF filter.
const HostProg = "host_prog"

// HostPrefs are the priorities of the host's filters: its BPF filter on
// ingress and egress, and its u32 filter on ingress.
const (
	HostBPFPref = 1
	HostU32Pref = 49000
)

// AddHostFilters gives dev (in the namespace of h) a clsact qdisc with, on ingress and egress, a BPF
// direct-action filter HostProg at pref 1 handle 1 that returns
// TC_ACT_UNSPEC for every packet (as a datapath that lets others'
// packets go on does), and on ingress a u32 filter at pref 49000 that
// matches every IPv4 packet (classid 1:1).
func AddHostFilters(t testing.TB, h *netlink.Handle, dev string) {
	t.Helper()
	AddQdisc(t, h, dev)
	AddBPF(t, h, dev, netlink.HANDLE_MIN_INGRESS, HostBPFPref, HostProg)
	AddBPF(t, h, dev, netlink.HANDLE_MIN_EGRESS, HostBPFPref, HostProg)
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	u32 := &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: link.Attrs().Index, Parent: netlink.HANDLE_MIN_INGRESS, Priority: HostU32Pref, Protocol: unix.ETH_P_IP},
		ClassId:     netlink.MakeHandle(1, 1),
	}
	if err := h.FilterAdd(u32); err != nil {
		t.Fatalf("add the host's u32 filter to %s: %v", dev, err)
	}
}

// AddQdisc adds a clsact qdisc to dev.
func AddQdisc(t testing.TB, h *netlink.Handle, dev string) {
	t.Helper()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.QdiscAdd(&netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}); err != nil {
		t.Fatalf("add a clsact qdisc to %s: %v", dev, err)
	}
}

// AddBPF adds a BPF direct-action filter named name at pref handle 1 on
// parent (netlink.HANDLE_MIN_INGRESS or HANDLE_MIN_EGRESS) of dev's
// clsact qdisc, running a program that returns TC_ACT_UNSPEC.
func AddBPF(t testing.TB, h *netlink.Handle, dev string, parent uint32, pref uint16, name string) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:    HostProg,
		Type:    ebpf.SchedCLS,
		License: "MIT",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, -1), // TC_ACT_UNSPEC
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load a tc program: %v", err)
	}
	defer prog.Close()
	addFilter(t, h, dev, parent, pref, name, prog)
}

// addFilter attaches prog to dev's clsact qdisc at parent, priority pref,
// handle 1, direct-action, named name.
func addFilter(t testing.TB, h *netlink.Handle, dev string, parent uint32, pref uint16, name string, prog *ebpf.Program) {
	t.Helper()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: link.Attrs().Index, Parent: parent, Handle: 1, Priority: pref, Protocol: unix.ETH_P_ALL},
		Fd:          prog.FD(), Name: name, DirectAction: true,
	}
	if err := h.FilterAdd(f); err != nil {
		t.Fatalf("add BPF filter %s to %s: %v", name, dev, err)
	}
}

// State describes dev's tc state in the named namespace ns as tc prints
// it: its qdiscs, then its ingress and egress filters, one line each.
func State(t testing.TB, ns, dev string) []string {
	t.Helper()
	var lines []string
	for _, args := range [][]string{
		{"qdisc", "show", "dev", dev},
		{"filter", "show", "dev", dev, "ingress"},
		{"filter", "show", "dev", dev, "egress"},
	} {
		out, err := exec.Command("tc", append([]string{"-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		lines = append(lines, "# tc "+strings.Join(args[:len(args)-1], " ")+" "+args[len(args)-1])
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
	}
	return lines
}

// Prefs lists the filters on parent (netlink.HANDLE_MIN_INGRESS or
// HANDLE_MIN_EGRESS) of dev as "pref kind name" strings (name only for
// BPF filters), in the kernel's order.
func Prefs(t testing.TB, h *netlink.Handle, dev string, parent uint32) []string {
	t.Helper()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := h.FilterList(link, parent)
	if err != nil {
		t.Fatalf("list filters of %s: %v", dev, err)
	}
	var got []string
	for _, f := range fs {
		s := strconv.Itoa(int(f.Attrs().Priority)) + " " + f.Type()
		if b, ok := f.(*netlink.BpfFilter); ok {
			s += " " + b.Name
		}
		got = append(got, s)
	}
	return got
}

// HostCount is the name of AddCounter's filters.
const HostCount = "host_count"

// AddCounter adds a BPF direct-action filter HostCount at pref handle 1
// on parent of dev's clsact qdisc that counts the packets it sees and
// returns TC_ACT_UNSPEC, as a host's lower-priority filter that must see
// every packet no filter before it claimed. It returns the count.
func AddCounter(t testing.TB, h *netlink.Handle, dev string, parent uint32, pref uint16) func() uint64 {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatalf("create a counter map: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:    HostCount,
		Type:    ebpf.SchedCLS,
		License: "MIT",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, -1).WithSymbol("out"), // TC_ACT_UNSPEC
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load a counting tc program: %v", err)
	}
	defer prog.Close()
	addFilter(t, h, dev, parent, pref, HostCount, prog)
	return func() uint64 {
		var n uint64
		if err := m.Lookup(uint32(0), &n); err != nil {
			t.Fatalf("read %s's count: %v", HostCount, err)
		}
		return n
	}
}
