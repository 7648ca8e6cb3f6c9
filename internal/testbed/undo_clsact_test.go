package testbed_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/clsact/clsacttest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/vishvananda/netlink"
)

// TestCleanSiteClsactKeepsHostFilters applies clsact journal entries, as
// written on disk, the way "tunbench clean" does (CleanSite) on devices
// that carry the host's own tc filters: only tunbench's filters go, the
// host's qdisc stays.
//
//   - jnew0: an entry of this tunbench, listing the filters it added at
//     pref 2 beside the host's at pref 1 (and a u32 at 49000) on the
//     qdisc the host had (qdisc_created false).
//   - jold0: an entry of a tunbench that journalled only the device (it
//     attached at pref 1 handle 1 and replaced the qdisc): its tunbench_*
//     filters at pref 1 handle 1 go, the host's filter elsewhere and the
//     qdisc stay.
//   - jmade0: the run created the qdisc, but a host filter was added to
//     it since: the qdisc stays with that filter.
//   - jempty0: the run created the qdisc and nothing else is on it: it
//     goes.
func TestCleanSiteClsactKeepsHostFilters(t *testing.T) {
	h := inFreshNS(t)

	in, eg := uint32(netlink.HANDLE_MIN_INGRESS), uint32(netlink.HANDLE_MIN_EGRESS)
	addDummy(t, h, "jnew0")
	clsacttest.AddHostFilters(t, h, "jnew0")
	addDummy(t, h, "jold0")
	clsacttest.AddQdisc(t, h, "jold0")
	clsacttest.AddBPF(t, h, "jold0", in, 1, "tunbench_ingress")
	clsacttest.AddBPF(t, h, "jold0", eg, 1, "tunbench_egress")
	clsacttest.AddBPF(t, h, "jold0", eg, 5, "host_prog")
	addDummy(t, h, "jmade0")
	clsacttest.AddQdisc(t, h, "jmade0")
	clsacttest.AddBPF(t, h, "jmade0", eg, 2, "host_prog")
	addDummy(t, h, "jempty0")
	clsacttest.AddQdisc(t, h, "jempty0")

	devs := []string{"jnew0", "jold0", "jmade0", "jempty0"}
	state := func() []string {
		var lines []string
		for _, d := range devs {
			l, err := h.LinkByName(d)
			if err != nil {
				t.Fatal(err)
			}
			qs, err := h.QdiscList(l)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, d)
			for _, q := range qs {
				lines = append(lines, d+" qdisc "+q.Type())
			}
			for _, f := range clsacttest.Prefs(t, h, d, in) {
				lines = append(lines, d+" ingress "+f)
			}
			for _, f := range clsacttest.Prefs(t, h, d, eg) {
				lines = append(lines, d+" egress "+f)
			}
		}
		return lines
	}
	// The run's filters on jnew0, where it found the host's.
	clsacttest.AddBPF(t, h, "jnew0", in, 2, "tunbench_ingress")
	clsacttest.AddBPF(t, h, "jnew0", eg, 2, "tunbench_egress")

	root := t.TempDir()
	id := testbed.NewID()
	dir := testbed.SiteDir(root, id, "j")
	for name, entry := range map[string]string{
		"ebpf-clsact-jnew0": `{"kind":"clsact","dev":"jnew0","filters":[` +
			`{"parent":"ingress","priority":2,"handle":1,"name":"tunbench_ingress"},` +
			`{"parent":"egress","priority":2,"handle":1,"name":"tunbench_egress"}]}`,
		"ebpf-clsact-jold0": `{"kind":"clsact","dev":"jold0"}`,
		"ebpf-clsact-jmade0": `{"kind":"clsact","dev":"jmade0","qdisc_created":true,"filters":[` +
			`{"parent":"ingress","priority":1,"handle":1,"name":"tunbench_ingress"},` +
			`{"parent":"egress","priority":1,"handle":1,"name":"tunbench_egress"}]}`,
		"ebpf-clsact-jempty0": `{"kind":"clsact","dev":"jempty0","qdisc_created":true,"filters":[` +
			`{"parent":"ingress","priority":1,"handle":1,"name":"tunbench_ingress","prog_id":4000000000}]}`,
	} {
		if err := os.MkdirAll(filepath.Join(dir, "undo"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "undo", name), []byte(entry), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := agent.CleanSite(root, id, "j")
	if err != nil {
		t.Fatalf("CleanSite: %v", err)
	}
	var restored []string
	for _, r := range removed {
		if r.Kind == "restored" {
			restored = append(restored, r.Name)
		}
	}
	sort.Strings(restored)
	wantRestored := []string{
		"clsact qdisc removed from jempty0",
		"tc programs detached from jnew0",
		"tc programs detached from jold0",
	}
	if diff := cmp.Diff(wantRestored, restored); diff != "" {
		t.Errorf("CleanSite restored (-want +got):\n%s", diff)
	}
	want := []string{
		"jnew0", "jnew0 qdisc clsact",
		"jnew0 ingress 1 bpf host_prog", "jnew0 ingress 49000 u32", "jnew0 egress 1 bpf host_prog",
		"jold0", "jold0 qdisc clsact", "jold0 egress 5 bpf host_prog",
		"jmade0", "jmade0 qdisc clsact", "jmade0 egress 2 bpf host_prog",
		"jempty0",
	}
	if diff := cmp.Diff(want, state()); diff != "" {
		t.Errorf("tc state after CleanSite (-want +got):\n%s", diff)
	}
}
