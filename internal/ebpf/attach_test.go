package ebpf_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/clsact"
	"github.com/tunbench/tunbench/internal/clsact/clsacttest"
	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
)

// handle is ep's netlink handle, in its namespace.
func handle(t *testing.T, ep *testbed.Endpoint) *netlink.Handle {
	t.Helper()
	h, ok := ep.NL.(*netlink.Handle)
	if !ok {
		t.Fatalf("endpoint %s has no local netlink handle", ep.Side)
	}
	return h
}

func loadOrSkip(t *testing.T) *ebpf.Objects {
	t.Helper()
	if err := ebpf.Probe(); err != nil {
		t.Skipf("cannot load the data path here: needs %v", err)
	}
	o, err := ebpf.Load(ebpf.Config{MaxRules: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// TestAttachKeepsHostFilters attaches the programs to a device that has a
// host's own tc filters (a BPF filter at pref 1 handle 1 on both sides, a
// u32 at pref 49000 on ingress): tunbench's go to the free priorities
// beside them, and Detach takes off only those, leaving the device's tc
// state exactly as it was.
func TestAttachKeepsHostFilters(t *testing.T) {
	o := loadOrSkip(t)
	l := testbedtest.New(t, 1500)
	ep, h := l.A, handle(t, l.A)
	clsacttest.AddHostFilters(t, h, ep.Dev)
	before := clsacttest.State(t, ep.Namespace, ep.Dev)

	a, err := o.Plan(h, ep.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if a.QdiscCreated {
		t.Errorf("plan creates a clsact qdisc on %s, which has one", ep.Dev)
	}
	if err := o.Attach(h, &a); err != nil {
		t.Fatal(err)
	}
	t.Logf("tc state before:\n%s\nattached:\n%s", strings.Join(before, "\n"), strings.Join(clsacttest.State(t, ep.Namespace, ep.Dev), "\n"))
	want := map[uint32][]string{
		netlink.HANDLE_MIN_INGRESS: {"1 bpf host_prog", "2 bpf tunbench_ingress", "49000 u32"},
		netlink.HANDLE_MIN_EGRESS:  {"1 bpf host_prog", "2 bpf tunbench_egress"},
	}
	for parent, w := range want {
		if diff := cmp.Diff(w, clsacttest.Prefs(t, h, ep.Dev, parent)); diff != "" {
			t.Errorf("filters on %x while attached (-want +got):\n%s", parent, diff)
		}
	}
	for _, f := range a.Filters {
		if f.Priority != 2 || f.Handle != clsact.Handle || f.ProgID == 0 {
			t.Errorf("attachment records %+v, want pref 2 handle 1 and the program's ID", f)
		}
	}
	// A second attachment (another run on the same device) takes the
	// next free priority and replaces nothing.
	o2 := loadOrSkip(t)
	a2, err := o2.Plan(h, ep.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Attach(h, &a2); err != nil {
		t.Fatal(err)
	}
	if got := clsacttest.Prefs(t, h, ep.Dev, netlink.HANDLE_MIN_EGRESS); !cmp.Equal(got, []string{"1 bpf host_prog", "2 bpf tunbench_egress", "3 bpf tunbench_egress"}) {
		t.Errorf("egress filters with two attachments: %q", got)
	}
	// Attaching at a taken place fails rather than replacing.
	if err := o2.Attach(h, &a2); err == nil {
		t.Error("a second Attach at the same places succeeded, want it to fail")
	}
	if err := ebpf.Detach(h, a2); err != nil {
		t.Fatal(err)
	}
	if err := ebpf.Detach(h, a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
		t.Errorf("tc state after Detach (-before +after):\n%s", diff)
	}
	// Detaching again finds nothing of tunbench's and touches nothing.
	if err := ebpf.Detach(h, a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
		t.Errorf("tc state after a second Detach (-before +after):\n%s", diff)
	}
}

// TestDetachLeavesForeignFilter: a filter of the host's at the place the
// attachment records (tunbench's gone, the host's put there) stays, and
// so does the qdisc tunbench created while that filter is on it.
func TestDetachLeavesForeignFilter(t *testing.T) {
	loadOrSkip(t)
	l := testbedtest.New(t, 1500)
	ep, h := l.A, handle(t, l.A)
	clsacttest.AddHostFilters(t, h, ep.Dev)
	before := clsacttest.State(t, ep.Namespace, ep.Dev)
	a := clsact.Attachment{Dev: ep.Dev, QdiscCreated: true, Filters: []clsact.Filter{
		{Parent: clsact.Ingress, Priority: clsacttest.HostBPFPref, Handle: 1, Name: "tunbench_ingress"},
		{Parent: clsact.Egress, Priority: clsacttest.HostBPFPref, Handle: 1, Name: "tunbench_egress"},
	}}
	if err := ebpf.Detach(h, a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
		t.Errorf("tc state after Detach (-before +after):\n%s", diff)
	}
}

// TestAttachCreatesQdisc: on a device without a clsact qdisc, Attach
// creates one and Detach removes it.
func TestAttachCreatesQdisc(t *testing.T) {
	o := loadOrSkip(t)
	l := testbedtest.New(t, 1500)
	ep, h := l.A, handle(t, l.A)
	before := clsacttest.State(t, ep.Namespace, ep.Dev)
	a, err := o.Plan(h, ep.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if !a.QdiscCreated {
		t.Errorf("plan uses a clsact qdisc on %s, which has none", ep.Dev)
	}
	if err := o.Attach(h, &a); err != nil {
		t.Fatal(err)
	}
	if got := clsacttest.Prefs(t, h, ep.Dev, netlink.HANDLE_MIN_INGRESS); !cmp.Equal(got, []string{"1 bpf tunbench_ingress"}) {
		t.Errorf("ingress filters while attached: %q", got)
	}
	if err := ebpf.Detach(h, a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
		t.Errorf("tc state after Detach (-before +after):\n%s", diff)
	}
}
