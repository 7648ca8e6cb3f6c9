// Package benchdb builds the large results store the trend and serve
// benchmarks read (issue 42's performance targets): Runs nightly runs on
// four machines, each of ten cells (five methods at two MTUs) whose
// records carry what a real throughput and latency test stores (ten
// per-second intervals, a 20-point RTT CDF, CPU), so that the
// measured_values view holds Values (1,200,000) values. The vxlan cells at MTU 9000
// lose a fifth of their throughput at the kernel upgrade half-way, so
// the detection has a change to find.
//
// The file is written once per test process, in one transaction straight
// through database/sql (the store's own writes commit every cell, which
// would take minutes), with each cell's figure columns as the store
// writes them (store.CellFigureValues), to a temporary directory that Remove deletes: call
// it from TestMain after m.Run.
package benchdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// The store's size.
const (
	Runs          = 10000
	CellsPerRun   = 10
	ValuesPerCell = 12 // the view's figures: 3 of throughput, 6 of RTT, 3 of CPU
	Values        = Runs * CellsPerRun * ValuesPerCell
)

// Methods and MTUs make a run's cells; Machines are the runs' host names,
// in turn; Start is the first run's start, one run every two hours after.
var (
	Methods  = []string{"native", "vxlan", "geneve", "gre", "wireguard"}
	MTUs     = []int{1500, 9000}
	Machines = []string{"bench0", "bench1", "bench2", "bench3"}
	Start    = time.Date(2024, 1, 1, 2, 0, 0, 0, time.UTC)
)

// Key is the cell key of method at mtu.
func Key(method string, mtu int) string {
	return fmt.Sprintf("%s/ipv4/mtu%d/offloads-on/p1", method, mtu)
}

// RunID is the id of run i.
func RunID(i int) string { return fmt.Sprintf("nightly-%05d", i) }

var (
	once  sync.Once
	dir   string
	path  string
	built error
)

// Path returns the store file, building it on the first call.
func Path(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		start := time.Now()
		dir, built = os.MkdirTemp("", "tunbench-benchdb-")
		if built != nil {
			return
		}
		path = filepath.Join(dir, "results.db")
		built = build(path)
		if built == nil {
			tb.Logf("benchdb: %d runs, %d cells, %d measured values written in %.1fs", Runs, Runs*CellsPerRun, Values, time.Since(start).Seconds())
		}
	})
	if built != nil {
		tb.Fatalf("benchdb: %v", built)
	}
	return path
}

// Remove deletes the store Path built, if any.
func Remove() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// timeFormat is the store's (fixed-width UTC RFC 3339 with nanoseconds).
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func build(path string) error {
	st, err := store.Open(path) // the schema
	if err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	insRun, err := tx.PrepareContext(ctx, `INSERT INTO runs (id, schema, started, finished, status, error, testbed, scenario, host) VALUES (?, ?, ?, ?, ?, '', ?, '', ?)`)
	if err != nil {
		return err
	}
	insLabel, err := tx.PrepareContext(ctx, `INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	insCell, err := tx.PrepareContext(ctx, `INSERT INTO cells (run_id, key, method, implementation, repetition, status, error, started, finished, record, `+
		store.CellFigureColumns+`) VALUES (?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	for i := range Runs {
		r := run(i)
		host, err := json.Marshal(r.Host)
		if err != nil {
			return err
		}
		if _, err := insRun.ExecContext(ctx, r.ID, result.SchemaVersion, r.Started.Format(timeFormat), r.Finished.Format(timeFormat),
			r.Status, r.Testbed, string(host)); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
			if _, err := insLabel.ExecContext(ctx, r.ID, k, r.Labels[k]); err != nil {
				return err
			}
		}
		for j, c := range cells(i, r) {
			rec, err := json.Marshal(&c)
			if err != nil {
				return err
			}
			args := append([]any{r.ID, c.Key, c.Method, c.Implementation, c.Repetition, c.Status,
				c.Started.Format(timeFormat), c.Finished.Format(timeFormat), string(rec)}, store.CellFigureValues(&c)...)
			if _, err := insCell.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("run %s cell %d: %w", r.ID, j, err)
			}
		}
	}
	return tx.Commit()
}

// run is run i: machine i%4, kernel 6.1 for the first half, 6.12 after.
func run(i int) result.Run {
	started := Start.Add(time.Duration(i) * 2 * time.Hour)
	kernel := "6.1.0-28-amd64"
	if i >= Runs/2 {
		kernel = "6.12.9-amd64"
	}
	return result.Run{
		ID: RunID(i), Schema: result.SchemaVersion, Started: started, Finished: started.Add(20 * time.Minute),
		Status: result.RunDone, Testbed: "local", Labels: map[string]string{"branch": "main"},
		Host: result.Host{
			Hostname: Machines[i%len(Machines)], Kernel: kernel, Arch: "x86_64", CPUModel: "AMD EPYC 7763", CPUCount: 16,
			MemoryMiB: 65536, Tunbench: "0.9.0", GoVersion: "go1.26.0", OSRelease: "Debian GNU/Linux 13 (trixie)",
			Class: result.ClassBareMetal, Tools: map[string]string{"iperf3": "3.18", "ip": "6.15.0", "ethtool": "6.14"},
			Sysctls: map[string]string{"net.core.rmem_max": "212992", "net.ipv4.tcp_congestion_control": "cubic"},
		},
	}
}

// cells are run i's cells, one repetition of each method and MTU.
func cells(i int, r result.Run) []result.Cell {
	var out []result.Cell
	n := 0
	for _, m := range Methods {
		for _, mtu := range MTUs {
			n++
			gbps := 9.0 + float64(n) + float64((i*7+n*3)%10)/20 // about 2.5% noise
			if m == "vxlan" && mtu == 9000 && i >= Runs/2 {
				gbps *= 0.8
			}
			bps := gbps * 1e9
			started := r.Started.Add(time.Duration(n) * time.Minute)
			var iv []result.Interval
			for s := range 10 {
				iv = append(iv, result.Interval{Start: float64(s), End: float64(s + 1), Bytes: int64(bps / 8),
					BitsPerSecond: bps * (1 + float64((s*5+i)%7-3)/100), Retransmits: int64((s + i) % 3)})
			}
			rtt := 40 + float64(n) + float64((i*3+n)%9)
			var cdf []result.Quantile
			for q := 1; q <= 20; q++ {
				cdf = append(cdf, result.Quantile{Fraction: float64(q) / 20, RTT: rtt * (0.8 + float64(q)/20)})
			}
			out = append(out, result.Cell{
				Schema: result.SchemaVersion, RunID: r.ID, Key: Key(m, mtu), Method: m, Repetition: 1, Status: result.StatusOK,
				Started: started, Finished: started.Add(40 * time.Second),
				Params: result.Params{Family: "ipv4", UnderlayMTU: mtu, OverlayMTU: mtu - 50, Offloads: true, Streams: 1, Duration: 10, Latency: 10},
				Throughput: &result.Throughput{Tool: "iperf3", Version: "3.18", BitsPerSecond: bps, SenderBitsPerSecond: bps * 1.01,
					Bytes: int64(bps * 10 / 8), Retransmits: int64(i % 5), Seconds: 10, Intervals: iv,
					SenderToolCPUPercent: 60, ReceiverToolCPUPercent: 70},
				Latency: &result.Latency{Tool: "netperf", Samples: 10000, Min: rtt * 0.8, Mean: rtt * 1.05, P50: rtt, P90: rtt * 1.3,
					P99: rtt * 1.7, Max: rtt * 2.5, StdDev: rtt / 10, CDF: cdf},
				CPU:  &result.CPU{Interval: 1, Cores: 16, BusyMin: 5, BusyAvg: 7, BusyMax: 9, SenderCores: 0.9},
				Meta: result.Meta{Kernel: r.Host.Kernel, BackgroundBusy: 2},
			})
		}
	}
	return out
}
