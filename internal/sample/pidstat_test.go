package sample

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProcPIDStatCaptured(t *testing.T) {
	tests := []struct {
		file string
		want ProcStat
	}{
		// /bin/sleep copied to a file named "tb (x) y) z".
		{"pid_stat_parens", ProcStat{PID: 8022, Comm: "tb (x) y) z", State: 'S', StartTime: 43657}},
		// A kernel thread: long name with "/" and "-".
		{"pid_stat_kworker", ProcStat{PID: 6, Comm: "kworker/R-kvfree_rcu_reclaim", State: 'I', StartTime: 31}},
		// A shell counting to 300000, read before and 1 s after.
		{"pid_stat_busy_t0", ProcStat{PID: 8026, Comm: "sh", State: 'R', StartTime: 43678}},
		{"pid_stat_busy_t1", ProcStat{PID: 8026, Comm: "sh", State: 'S', UTime: 55, StartTime: 43678}},
	}
	for _, tc := range tests {
		got, err := ParseProcPIDStat(readTestdata(t, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tc.file, diff)
		}
	}
}

func TestProcStatSeconds(t *testing.T) {
	if ClockTicks() != 100 {
		t.Errorf("ClockTicks() = %v, want 100 (USER_HZ on Linux)", ClockTicks())
	}
	p, err := ParseProcPIDStat(readTestdata(t, "pid_stat_busy_t1"))
	if err != nil {
		t.Fatal(err)
	}
	if p.UserSeconds() != 0.55 || p.SystemSeconds() != 0 {
		t.Errorf("UserSeconds, SystemSeconds = %v, %v; want 0.55, 0", p.UserSeconds(), p.SystemSeconds())
	}
}

func TestParseProcPIDStatErrors(t *testing.T) {
	whole := string(readTestdata(t, "pid_stat_self"))
	for name, in := range map[string]string{
		"empty":     "",
		"no comm":   "123 cat R 1 2 3",
		"truncated": whole[:strings.LastIndexByte(whole, ')')+30],
		"bad pid":   "x" + whole,
		"bad utime": strings.Replace(whole, ") R 7993 7993 2618 0 -1 4194304 120 0 0 0 0", ") R 7993 7993 2618 0 -1 4194304 120 0 0 0 z", 1),
	} {
		if _, err := ParseProcPIDStat([]byte(in)); err == nil || !strings.Contains(err.Error(), "stat") {
			t.Errorf("%s: err = %v, want a parse error", name, err)
		}
	}
}
