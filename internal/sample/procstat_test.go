package sample

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseTestdata(t testing.TB, name string) Stat {
	t.Helper()
	s, err := ParseProcStat(readTestdata(t, name))
	if err != nil {
		t.Fatalf("ParseProcStat(%s): %v", name, err)
	}
	return s
}

// testdata/proc_stat_t0 and _t1 are /proc/stat of this 2-core machine
// taken 1.1 s apart while a shell loop kept one core busy.
func TestParseProcStatCaptured(t *testing.T) {
	got := parseTestdata(t, "proc_stat_t0")
	want := Stat{
		All: Times{User: 13235, System: 5701, Idle: 66009, Iowait: 824, Softirq: 265, Steal: 798},
		CPUs: []CPUTimes{
			{ID: 0, Times: Times{User: 5598, System: 2372, Idle: 35021, Iowait: 53, Softirq: 50, Steal: 355}},
			{ID: 1, Times: Times{User: 7636, System: 3328, Idle: 30987, Iowait: 771, Softirq: 215, Steal: 443}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseProcStat mismatch (-want +got):\n%s", diff)
	}
}

func TestUsageCaptured(t *testing.T) {
	u := Usage(parseTestdata(t, "proc_stat_t0"), parseTestdata(t, "proc_stat_t1"))
	pct := func(x, total float64) float64 { return 100 * x / total }
	// Deltas read off the two files by hand.
	want := Utilization{
		All: Percent{Ticks: 220, User: pct(134, 220), System: pct(17, 220), Softirq: pct(1, 220),
			Iowait: pct(2, 220), Steal: pct(1, 220), Idle: pct(65, 220), Busy: pct(153, 220)},
		CPUs: []CorePercent{
			{ID: 0, Percent: Percent{Ticks: 111, User: pct(100, 111), System: pct(1, 111), Idle: pct(10, 111), Busy: pct(101, 111)}},
			{ID: 1, Percent: Percent{Ticks: 109, User: pct(35, 109), System: pct(17, 109), Iowait: pct(2, 109), Idle: pct(55, 109), Busy: pct(52, 109)}},
		},
	}
	if diff := cmp.Diff(want, u, approx); diff != "" {
		t.Errorf("Usage mismatch (-want +got):\n%s", diff)
	}
	// The busy loop shows: one core above 90% user.
	if u.CPUs[0].User < 90 {
		t.Errorf("core 0 user = %.1f%%, want > 90%% (it ran a busy loop)", u.CPUs[0].User)
	}
	for _, p := range append([]CorePercent{{ID: -1, Percent: u.All}}, u.CPUs...) {
		if sum := p.User + p.System + p.Softirq + p.Irq + p.Iowait + p.Steal + p.Idle; math.Abs(sum-100) > 1e-9 {
			t.Errorf("cpu %d: states sum to %v%%, want 100", p.ID, sum)
		}
	}
}

var approx = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })

func TestUsageNoTicksElapsed(t *testing.T) {
	s := parseTestdata(t, "proc_stat_t0")
	u := Usage(s, s)
	if u.All != (Percent{}) {
		t.Errorf("Usage of identical reads = %+v, want all zero", u.All)
	}
	if len(u.CPUs) != 2 || u.CPUs[0].Percent != (Percent{}) {
		t.Errorf("per-core usage of identical reads = %+v, want two zero entries", u.CPUs)
	}
	if _, err := json.Marshal(u); err != nil {
		t.Errorf("usage does not encode as JSON (NaN?): %v", err)
	}
}

func TestUsageCounterGoesBackwards(t *testing.T) {
	prev := Stat{All: Times{User: 100, Idle: 1000, Iowait: 50}}
	cur := Stat{All: Times{User: 150, Idle: 1050, Iowait: 40}} // iowait went back 10
	p := Usage(prev, cur).All
	if p.Ticks != 100 || p.Iowait != 0 || p.User != 50 || p.Busy != 50 {
		t.Errorf("Usage = %+v, want 100 ticks, 50%% user and busy, 0%% iowait", p)
	}
}

func TestUsageMatchesCoresByID(t *testing.T) {
	// Core 1 went offline between the reads; core 2 only appears later.
	prev := Stat{CPUs: []CPUTimes{{ID: 0, Times: Times{Idle: 10}}, {ID: 1, Times: Times{Idle: 10}}, {ID: 3, Times: Times{Idle: 10}}}}
	cur := Stat{CPUs: []CPUTimes{{ID: 0, Times: Times{Idle: 20}}, {ID: 2, Times: Times{User: 5}}, {ID: 3, Times: Times{User: 10, Idle: 10}}}}
	u := Usage(prev, cur)
	want := []CorePercent{{ID: 0, Percent: Percent{Ticks: 10, Idle: 100}}, {ID: 3, Percent: Percent{Ticks: 10, User: 100, Busy: 100}}}
	if diff := cmp.Diff(want, u.CPUs); diff != "" {
		t.Errorf("per-core usage mismatch (-want +got):\n%s", diff)
	}
}

func TestParseProcStatOldKernelAndErrors(t *testing.T) {
	s, err := ParseProcStat([]byte("cpu  10 1 5 100\ncpu0 10 1 5 100\nintr 0\n"))
	if err != nil {
		t.Fatalf("four-counter line: %v", err)
	}
	if s.All != (Times{User: 10, Nice: 1, System: 5, Idle: 100}) || len(s.CPUs) != 1 {
		t.Errorf("four-counter line parsed as %+v", s)
	}
	for name, in := range map[string]string{
		"empty":       "",
		"no cpu line": "intr 1 2 3\nctxt 5\n",
		"not numbers": "cpu  1 2 x 4 5 6 7 8 9 10\n",
		"negative":    "cpu  1 2 -3 4 5 6 7 8 9 10\n",
		"too few":     "cpu  1 2 3\n",
		"bad label":   "cpu  1 2 3 4\ncpuX 1 2 3 4\n",
		"overflow":    "cpu  99999999999999999999 2 3 4\n",
	} {
		if _, err := ParseProcStat([]byte(in)); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%s: err = %v, want an error naming /proc/stat", name, err)
		}
	}
}
