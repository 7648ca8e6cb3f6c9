package ebpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/testbed"
)

// TestPinRootCleaned: tunbench clean removes pins where the methods put
// them.
func TestPinRootCleaned(t *testing.T) {
	if PinRoot != testbed.BPFPinRoot {
		t.Errorf("ebpf.PinRoot %q, but tunbench clean looks in %q", PinRoot, testbed.BPFPinRoot)
	}
}

// TestCountersAligned: the LPM trie stores a rule right after the key's
// data (the key without prefixlen), so that data must be a multiple of 8
// bytes, and the counters a multiple of 8 bytes into the rule, for the
// program's atomic adds to be 8-byte aligned. A misaligned add can
// straddle a cache line (a split lock), which cost ~1 us per packet here
// (tunnel.h).
func TestCountersAligned(t *testing.T) {
	if n := binary.Size(tunnelRuleKey{}) - 4; n%8 != 0 {
		t.Errorf("rule_key data is %d bytes, not a multiple of 8: pad struct rule_key in tunnel.h", n)
	}
	if off := unsafe.Offsetof(tunnelRule{}.C); off%8 != 0 {
		t.Errorf("counters at offset %d of struct rule, not a multiple of 8", off)
	}
}

// fakeStore is an in-memory store with the capacity limit of a BPF map.
type fakeStore[K comparable, V any] struct {
	m    map[K]V
	max  int
	puts int // calls to put
}

func newFake[K comparable, V any](max int) *fakeStore[K, V] {
	return &fakeStore[K, V]{m: map[K]V{}, max: max}
}

var errFull = errors.New("argument list too long") // what a full map answers (E2BIG)

func (f *fakeStore[K, V]) put(keys []K, vals []V) error {
	f.puts++
	for i, k := range keys {
		if _, ok := f.m[k]; !ok && len(f.m) >= f.max {
			return errFull
		}
		f.m[k] = vals[i]
	}
	return nil
}

func (f *fakeStore[K, V]) del(k K) error {
	if _, ok := f.m[k]; !ok {
		return errors.New("key does not exist")
	}
	delete(f.m, k)
	return nil
}

func (f *fakeStore[K, V]) each(fn func(K, V) error) error {
	for k, v := range f.m {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

type fakeTable struct {
	*Table
	rules   *fakeStore[tunnelRuleKey, tunnelRule]
	decaps  *fakeStore[tunnelDecapKey, tunnelDecap]
	cfg     tunnelConfig
	drops   []uint64
	notOurs uint64
}

func newFakeTable(maxRules int) *fakeTable {
	f := &fakeTable{
		rules:  newFake[tunnelRuleKey, tunnelRule](maxRules),
		decaps: newFake[tunnelDecapKey, tunnelDecap](16),
		drops:  make([]uint64, len(DropReasons)),
	}
	f.Table = &Table{
		rules:   f.rules,
		decaps:  f.decaps,
		drops:   func() ([]uint64, error) { return f.drops, nil },
		notOurs: func() (uint64, error) { return f.notOurs, nil },
		config:  func(c tunnelConfig) error { f.cfg = c; return nil },
	}
	return f
}

func geneveRule(id uint32, dst string) Rule {
	return Rule{ID: id, Dst: netip.MustParsePrefix(dst), Encap: Geneve, VNI: 42,
		Local: netip.MustParseAddr("198.18.0.1"), Remote: netip.MustParseAddr("198.18.0.2")}
}

// TestTableRules writes rules, reads them back through their map encoding
// and deletes one: adding a site is one map entry.
func TestTableRules(t *testing.T) {
	f := newFakeTable(100)
	v6 := Rule{ID: 3, Dst: netip.MustParsePrefix("2001:2:0:1::/64"), Encap: VXLAN, VNI: 7,
		Local: netip.MustParseAddr("2001:2::1"), Remote: netip.MustParseAddr("2001:2::2"),
		SrcPortMin: 1000, SrcPortMax: 2000}
	gre := Rule{ID: 2, Dst: netip.MustParsePrefix("198.19.1.0/24"), Encap: GRE, VNI: 99, GREKey: true,
		Local: netip.MustParseAddr("198.18.0.1"), Remote: netip.MustParseAddr("198.18.0.3")}
	if err := f.PutRules([]Rule{geneveRule(1, "198.19.0.2/32"), gre, v6}); err != nil {
		t.Fatal(err)
	}
	s, err := f.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.Rules {
		got = append(got, fmt.Sprintf("%d %s %s vni %d key %v %s>%s sport %d-%d dport %d inner %s>%s",
			r.ID, r.Dst, r.Encap, r.VNI, r.GREKey, r.Local, r.Remote, r.SrcPortMin, r.SrcPortMax, r.DstPort, r.InnerSrc, r.InnerDst))
	}
	want := []string{
		"1 198.19.0.2/32 geneve vni 42 key false 198.18.0.1>198.18.0.2 sport 49152-65535 dport 6081 inner 02:74:62:00:00:02>02:74:62:00:00:01",
		"2 198.19.1.0/24 gre vni 99 key true 198.18.0.1>198.18.0.3 sport 49152-65535 dport 0 inner 02:74:62:00:00:02>02:74:62:00:00:01",
		"3 2001:2:0:1::/64 vxlan vni 7 key false 2001:2::1>2001:2::2 sport 1000-2000 dport 4789 inner 02:74:62:00:00:02>02:74:62:00:00:01",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// The LPM key: 32 bits of family and padding, then the prefix.
	k := ruleKey(v6.Dst)
	if k.Prefixlen != 32+64 || k.Family != 6 || k.prefix() != v6.Dst {
		t.Errorf("key of %s: %+v", v6.Dst, k)
	}
	if err := f.DeleteRule(gre.Dst); err != nil {
		t.Fatal(err)
	}
	if len(f.rules.m) != 2 {
		t.Errorf("%d rules after delete, want 2", len(f.rules.m))
	}
	if err := f.DeleteRule(gre.Dst); err == nil || !strings.Contains(err.Error(), "delete rule 198.19.1.0/24") {
		t.Errorf("second delete: %v, want an error naming the rule", err)
	}
}

// TestTableRulesInvalid: a wrong rule writes nothing and says why.
func TestTableRulesInvalid(t *testing.T) {
	ok := geneveRule(1, "198.19.0.2/32")
	tests := []struct {
		mod  func(*Rule)
		want string
	}{
		{func(r *Rule) { r.Dst = netip.MustParsePrefix("198.19.0.2/24") }, "host bits set (want 198.19.0.0/24)"},
		{func(r *Rule) { r.Dst = netip.Prefix{} }, "no destination prefix"},
		{func(r *Rule) { r.VNI = 1 << 24 }, "geneve VNI 16777216 does not fit in 24 bits"},
		{func(r *Rule) { r.Encap = 9 }, "unknown encapsulation 9"},
		{func(r *Rule) { r.Remote = netip.MustParseAddr("2001:2::2") }, "different families"},
		{func(r *Rule) { r.Local = netip.Addr{} }, "local and remote underlay addresses are required"},
		{func(r *Rule) { r.SrcPortMin, r.SrcPortMax = 5, 4 }, "source port range 5-4 is empty"},
		{func(r *Rule) {
			r.Encap = IPIP
			r.Local, r.Remote = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
		}, "ipip needs an IPv4 underlay"},
	}
	for _, tt := range tests {
		f := newFakeTable(10)
		bad := ok
		bad.ID = 2
		tt.mod(&bad)
		err := f.PutRules([]Rule{ok, bad})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "rule 2 ") {
			t.Errorf("PutRules error %v, want one for rule 2 containing %q", err, tt.want)
		}
		if len(f.rules.m) != 0 {
			t.Errorf("%q: %d rules written, want none", tt.want, len(f.rules.m))
		}
	}
	f := newFakeTable(10)
	if err := f.PutRules([]Rule{ok, ok}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate destination: %v", err)
	}
}

// TestTableFull: a full map is an error that says how many rules were
// being written.
func TestTableFull(t *testing.T) {
	f := newFakeTable(2)
	rules := []Rule{geneveRule(1, "198.19.0.1/32"), geneveRule(2, "198.19.0.2/32"), geneveRule(3, "198.19.0.3/32")}
	if err := f.PutRules(rules); err == nil || !strings.Contains(err.Error(), "write 3 rules") || !errors.Is(err, errFull) {
		t.Errorf("PutRules into a map of 2: %v", err)
	}
}

// TestTableDecaps: decap entries switch their encapsulation on in the
// config the ingress program reads, with the standard ports.
func TestTableDecaps(t *testing.T) {
	f := newFakeTable(10)
	if err := f.PutDecaps([]Decap{{ID: 1, Encap: VXLAN, VNI: 42}, {ID: 2, Encap: GRE}}); err != nil {
		t.Fatal(err)
	}
	want := tunnelConfig{VxlanPort: 4789, GenevePort: 6081, DecapMask: 1<<VXLAN | 1<<GRE}
	if f.cfg != want {
		t.Errorf("config %+v, want %+v", f.cfg, want)
	}
	f.decaps.m[decapKey(Decap{Encap: VXLAN, VNI: 42})] = tunnelDecap{Id: 1, C: tunnelCounters{Packets: 3, Bytes: 4500, Drops: [4]uint64{1, 2}}}
	f.drops[0] = 5
	f.notOurs = 7
	s, err := f.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Decaps[0].String(); got != "packets 3 bytes 4500 drops truncated=1 bad-header=2" {
		t.Errorf("decap 1 counters %q", got)
	}
	if got := (Counters{Drops: s.Drops}).String(); got != "packets 0 bytes 0 drops truncated=5" {
		t.Errorf("global drops %q", got)
	}
	if s.NotOurs != 7 {
		t.Errorf("not-ours counter %d, want 7", s.NotOurs)
	}
	if err := f.PutDecaps([]Decap{{ID: 3, Encap: 0}}); err == nil {
		t.Error("decap entry with no encapsulation accepted")
	}
}

func TestOverhead(t *testing.T) {
	for _, tt := range []struct {
		e        Encap
		underlay string
		key      bool
		want     int
	}{
		{Geneve, "ipv4", false, 50}, {Geneve, "ipv6", false, 70}, {VXLAN, "ipv4", false, 50},
		{GRE, "ipv4", false, 24}, {GRE, "ipv4", true, 28}, {GRE, "ipv6", false, 44}, {IPIP, "ipv4", false, 20},
	} {
		if got := tt.e.Overhead(tt.underlay, tt.key); got != tt.want {
			t.Errorf("%s over %s (key %v): %d, want %d", tt.e, tt.underlay, tt.key, got, tt.want)
		}
	}
}
