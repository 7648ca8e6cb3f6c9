package ebpf

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/stats"
)

// BenchmarkEgressRules times the egress program on one IPv6 TCP packet
// toward a rule's destination with 1, 100, 10,000 and 1,000,000 rules in
// the map, under BPF_PROG_TEST_RUN (one run per call, the kernel's own
// timing of the program). The other rules are host prefixes spread around
// the destination (FillerAddrs), so the lookup walks as deep a trie as
// that many rules make; each count has its own loaded maps and programs,
// and every round measures each count, in alternating order, so drift
// hits all alike. It reports the median ns per packet of each count and
// its difference from 1 rule: the data path's cost of the rule count,
// without the throughput noise of a shared machine (docs/performance.md).
func BenchmarkEgressRules(b *testing.B) {
	if err := Probe(); err != nil {
		b.Skipf("cannot load the data path here: needs %v", err)
	}
	counts := []int{1, 100, 10_000, 1_000_000}
	const rounds, calls = 6, 4000
	dst := inner6[1]
	rule := Rule{ID: 1, Dst: netip.PrefixFrom(dst, 128), Encap: Geneve, VNI: 42, Local: under6[0], Remote: under6[1]}
	fillers := FillerAddrs(netip.PrefixFrom(dst, 64).Masked(), counts[len(counts)-1]-1, inner6[0], dst)
	objs := map[int]*Objects{}
	for _, n := range counts {
		o, err := Load(Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer o.Close()
		rules := []Rule{rule}
		for i, a := range fillers[:n-1] {
			r := rule
			r.ID, r.Dst = uint32(i+2), netip.PrefixFrom(a, 128)
			rules = append(rules, r)
		}
		start := time.Now()
		if err := o.Table().PutRules(rules); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d rules installed in %v", n, time.Since(start).Round(time.Millisecond))
		objs[n] = o
	}
	pkt := tcp6(b, dst)
	for range b.N {
		perCount := map[int][]float64{}
		for round := range rounds {
			order := slices.Clone(counts)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, n := range order {
				ns := make([]float64, 0, calls)
				for range calls {
					ret, d, err := objs[n].Egress().Benchmark(pkt, 1, nil)
					if err != nil {
						b.Fatal(err)
					}
					if ret != actOK {
						b.Fatalf("%d rules: verdict %d, want TC_ACT_OK", n, ret)
					}
					ns = append(ns, float64(d.Nanoseconds()))
				}
				perCount[n] = append(perCount[n], stats.Median(ns))
			}
		}
		base := stats.Median(perCount[1])
		for _, n := range counts {
			m := stats.Median(perCount[n])
			b.Logf("%d rules: median %.0f ns per packet (rounds %v), %+.0f ns against 1 rule", n, m, perCount[n], m-base)
			b.ReportMetric(m, fmt.Sprintf("ns/pkt-%d-rules", n))
			if n > 1 {
				b.ReportMetric(m-base, fmt.Sprintf("extra-ns-%d-rules", n))
			}
		}
	}
	// Every call encapsulated (the rule's counter saw each one).
	c := func(n int) uint64 {
		s, err := objs[n].Table().Stats()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range s.Rules {
			if r.ID == 1 {
				return r.Counters.Packets
			}
		}
		return 0
	}
	for _, n := range counts {
		if got, want := c(n), uint64(b.N*rounds*calls); got != want {
			b.Errorf("%d rules: the rule encapsulated %d packets, want %d", n, got, want)
		}
	}
}
