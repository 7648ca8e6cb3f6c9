package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tunbench/tunbench/internal/result"
)

// baselineKey is what a row shares with its native baseline: every
// parameter except the overlay MTU (which depends on the method's overhead)
// and method-specific options.
type baselineKey struct {
	Family      string
	UnderlayMTU int
	Offloads    bool
	Streams     int
	Duration    float64
	Omit        float64
	Latency     float64
	Pin         bool
	Direction   string
	MSS         int
	WAN         string
	OffloadSet  string
	// SiteA and SiteB: on an ssh testbed a method compares with native
	// between the same two hosts.
	SiteA, SiteB string
	// CongestionControl: a method compares with native under the same
	// algorithm.
	CongestionControl string
}

func baselineOf(p result.Params) baselineKey {
	return baselineKey{p.Family, p.UnderlayMTU, p.Offloads, p.Streams, p.Duration, p.Omit, p.Latency, p.Pin, p.Direction, p.MSS, p.WAN.Label(), p.OffloadSet, p.SiteA, p.SiteB, p.CongestionControl}
}

// sortRows groups rows by baseline key in order of first appearance and
// puts native first within each group. The sort is stable.
func sortRows(rows []Summary) {
	rank := map[baselineKey]int{}
	for _, r := range rows {
		if _, ok := rank[baselineOf(r.Params)]; !ok {
			rank[baselineOf(r.Params)] = len(rank)
		}
	}
	slices.SortStableFunc(rows, func(a, b Summary) int {
		if c := cmp.Compare(rank[baselineOf(a.Params)], rank[baselineOf(b.Params)]); c != 0 {
			return c
		}
		an, bn := a.Method == NativeMethod, b.Method == NativeMethod
		switch {
		case an && !bn:
			return -1
		case bn && !an:
			return 1
		}
		return 0
	})
}

// labelRows names each row by its method, adding the implementation where
// one method has several in the run.
func labelRows(rows []Summary) {
	impls := map[string]map[string]bool{}
	for _, r := range rows {
		if impls[r.Method] == nil {
			impls[r.Method] = map[string]bool{}
		}
		impls[r.Method][r.Implementation] = true
	}
	for i := range rows {
		rows[i].Label = rows[i].Method
		if len(impls[rows[i].Method]) > 1 && rows[i].Implementation != "" {
			rows[i].Label = fmt.Sprintf("%s/%s", rows[i].Method, rows[i].Implementation)
		}
	}
}

// setPercentNative fills PercentNative from each row's native baseline.
func setPercentNative(rows []Summary) {
	native := map[baselineKey]float64{}
	for _, r := range rows {
		k := baselineOf(r.Params)
		if _, dup := native[k]; dup {
			continue // the first native row is the baseline
		}
		if r.Method == NativeMethod && r.Throughput.N > 0 && r.Throughput.Mean > 0 {
			native[k] = r.Throughput.Mean
		}
	}
	for i := range rows {
		base, ok := native[baselineOf(rows[i].Params)]
		if !ok || rows[i].Throughput.N == 0 {
			continue
		}
		p := round6(100 * rows[i].Throughput.Mean / base)
		rows[i].PercentNative = &p
	}
}
