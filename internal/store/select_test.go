package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// TestRunsWithCells reads runs and cells in bulk with each filter, on
// SQLite and PostgreSQL, and checks them against what Run reads one run
// at a time.
func TestRunsWithCells(t *testing.T) {
	eachLocation(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		s := openAt(t, loc)
		add := func(id string, started time.Time, testbed, machine string, keys ...string) {
			t.Helper()
			r := newRun(id, started)
			r.Testbed, r.Host.Hostname = testbed, machine
			if err := s.BeginRun(ctx, &r); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				c := fullCell(id, i+1)
				c.Key, c.Method = k, ""
				if k != "" {
					c.Method = k[:len(k)-len("/ipv4/mtu1500/p1")]
				}
				if _, err := s.AddCell(ctx, &c); err != nil {
					t.Fatal(err)
				}
			}
		}
		add("r1", t0, "local", "bench1", "vxlan/ipv4/mtu1500/p1", "geneve/ipv4/mtu9000/p1", "vxlan/ipv4/mtu1500/p1")
		add("r2", t0.Add(time.Hour), "vm", "bench1", "gre_x/ipv4/mtu9000/p1")
		add("r3", t0.Add(2*time.Hour), "local", "bench2", "vxlan/ipv4/mtu9000/p1", "")
		add("empty", t0.Add(3*time.Hour), "local", "bench1")

		// want is what Run reads of each run, with only the cells keep keeps.
		want := func(keep func(result.Cell) bool, ids ...string) []RunCells {
			t.Helper()
			var out []RunCells
			for _, id := range ids {
				r, cells, err := s.Run(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, RunCells{Run: r, Cells: slices.DeleteFunc(cells, func(c result.Cell) bool { return !keep(c) })})
			}
			return out
		}
		all := func(result.Cell) bool { return true }
		keyed := func(part string) func(result.Cell) bool {
			return func(c result.Cell) bool { return c.Key == "" || hasParts(c.Key, []string{part}) }
		}
		for _, tc := range []struct {
			name string
			q    RunQuery
			want []RunCells
		}{
			{"all", RunQuery{}, want(all, "r1", "r2", "r3")},
			{"testbed", RunQuery{Testbed: "local"}, want(all, "r1", "r3")},
			{"machine", RunQuery{Machine: "bench2"}, want(all, "r3")},
			{"since", RunQuery{Since: t0.Add(time.Hour)}, want(all, "r2", "r3")},
			{"method", RunQuery{Method: "vxlan"}, want(func(c result.Cell) bool { return c.Method == "vxlan" }, "r1", "r3")},
			{"key part", RunQuery{KeyParts: []string{"mtu9000"}}, want(keyed("mtu9000"), "r1", "r2", "r3")},
			{"key part and testbed", RunQuery{Testbed: "local", KeyParts: []string{"mtu9000", "ipv4"}}, want(keyed("mtu9000"), "r1", "r3")},
			// Exact parts: no case folding, no LIKE wildcards.
			{"key part case", RunQuery{KeyParts: []string{"MTU9000"}}, want(func(c result.Cell) bool { return c.Key == "" }, "r3")},
			{"key part wildcard", RunQuery{KeyParts: []string{"gre_%"}}, want(func(c result.Cell) bool { return c.Key == "" }, "r3")},
			{"key part underscore", RunQuery{KeyParts: []string{"gre_x"}}, want(keyed("gre_x"), "r2", "r3")},
			{"without series", RunQuery{WithoutSeries: true}, slimmed(want(all, "r1", "r2", "r3"))},
			{"keep", RunQuery{Keep: func(r result.Run) bool { return r.Host.Hostname == "bench1" && r.Labels["ticket"] == "NET-42" }}, want(all, "r1", "r2")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.RunsWithCells(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("RunsWithCells(%+v):\n got %s\nwant %s", tc.q, ids(got), ids(tc.want))
				}
			})
		}
	})
}

// slimmed are rcs without intervals and CDFs (RunQuery.WithoutSeries).
func slimmed(rcs []RunCells) []RunCells {
	for _, rc := range rcs {
		for i := range rc.Cells {
			c := &rc.Cells[i]
			if c.Throughput == nil || len(c.Throughput.Intervals) == 0 || c.Latency == nil || len(c.Latency.CDF) == 0 {
				panic("slimmed: the fixture cell lacks intervals or a CDF")
			}
			t, l := *c.Throughput, *c.Latency
			t.Intervals, l.CDF = nil, nil
			c.Throughput, c.Latency = &t, &l
		}
	}
	return rcs
}

// ids lists runs and their cells' keys, for messages.
func ids(rcs []RunCells) []string {
	var out []string
	for _, rc := range rcs {
		s := rc.Run.ID + ":"
		for _, c := range rc.Cells {
			s += " " + c.Key
		}
		out = append(out, s)
	}
	return out
}

// TestListRuns pages through filtered runs, on SQLite and PostgreSQL, and
// checks each page against Runs and RunMethods filtered here.
func TestListRuns(t *testing.T) {
	eachLocation(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		s := openAt(t, loc)
		for i := range 7 {
			r := newRun(fmt.Sprintf("run%d", i), t0.Add(time.Duration(i)*time.Hour))
			r.Host.Hostname = []string{"bench1", "bench2"}[i%2]
			r.Host.Kernel = []string{"6.1", "6.12", "6.18"}[i%3]
			r.Testbed = []string{"local", "vm"}[i/4]
			r.Labels = map[string]string{"ticket": []string{"NET-1", "NET-2"}[i%2]}
			if i == 6 {
				r.Labels = nil
			}
			if err := s.BeginRun(ctx, &r); err != nil {
				t.Fatal(err)
			}
			for rep, m := range []string{"vxlan", "native", "vxlan"}[:1+i%3] {
				c := fullCell(r.ID, rep+1)
				c.Method = m
				if _, err := s.AddCell(ctx, &c); err != nil {
					t.Fatal(err)
				}
			}
		}
		runs, err := s.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		methods, err := s.RunMethods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			f    RunFilter
			keep func(result.Run) bool
		}{
			{"all", RunFilter{}, func(result.Run) bool { return true }},
			{"method", RunFilter{Method: "native"}, func(r result.Run) bool { return slices.Contains(methods[r.ID], "native") }},
			{"testbed", RunFilter{Testbed: "vm"}, func(r result.Run) bool { return r.Testbed == "vm" }},
			{"machine and kernel", RunFilter{Machine: "bench1", Kernel: "6.1"}, func(r result.Run) bool { return r.Host.Hostname == "bench1" && r.Host.Kernel == "6.1" }},
			{"label", RunFilter{Labels: map[string]string{"ticket": "NET-2"}}, func(r result.Run) bool { return r.Labels["ticket"] == "NET-2" }},
			{"empty label", RunFilter{Labels: map[string]string{"ticket": ""}}, func(r result.Run) bool { return r.Labels["ticket"] == "" }},
			{"none", RunFilter{Method: "wireguard"}, func(result.Run) bool { return false }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var want []result.Run
				for _, r := range runs {
					if tc.keep(r) {
						want = append(want, r)
					}
				}
				all, err := s.ListRuns(ctx, tc.f, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(all.Runs, want) || all.Matched != len(want) || all.Total != len(runs) {
					t.Errorf("ListRuns(%+v): %d of %d runs %v, want %d of %d %v", tc.f, all.Matched, all.Total, runIDs(all.Runs), len(want), len(runs), runIDs(want))
				}
				for _, r := range all.Runs {
					if !reflect.DeepEqual(all.Methods[r.ID], methods[r.ID]) {
						t.Errorf("run %s methods %v, want %v", r.ID, all.Methods[r.ID], methods[r.ID])
					}
				}
				var paged []result.Run
				for off := 0; off < len(want)+3; off += 3 {
					p, err := s.ListRuns(ctx, tc.f, off, 3)
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Runs) > 3 || p.Matched != len(want) {
						t.Fatalf("page at %d: %d runs, %d matched", off, len(p.Runs), p.Matched)
					}
					paged = append(paged, p.Runs...)
				}
				if !reflect.DeepEqual(paged, all.Runs) {
					t.Errorf("pages of 3: %v, want %v", runIDs(paged), runIDs(all.Runs))
				}
			})
		}
	})
}

func runIDs(rs []result.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}
