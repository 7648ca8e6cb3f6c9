package serve

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/store/benchdb"
	"github.com/tunbench/tunbench/internal/store/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m) // stops the PostgreSQL server TestFiguresMatchRecords starts
	benchdb.Remove()
	os.Exit(code)
}

// benchPage times one page of a fresh server (no cached report) over
// benchdb's store of 10,000 runs and 1,200,000 measured values, through
// the handler as a browser's request reaches it (docs/performance.md).
func benchPage(b *testing.B, target, want string) {
	benchPageOf(b, target, want, false)
}

// benchPageOf is benchPage; again asks one server for the page again and
// again, after a first request outside the timing: what a second viewer,
// or a reload, costs while nothing is written to the store.
func benchPageOf(b *testing.B, target, want string, again bool) {
	st, err := store.Open(benchdb.Path(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	shared := New(st)
	if again {
		rec := httptest.NewRecorder()
		shared.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	}
	size := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		rec := httptest.NewRecorder()
		srv := shared
		if !again {
			srv = New(st)
		}
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			b.Fatalf("GET %s: %d, want 200 with %q:\n%.500s", target, rec.Code, want, rec.Body.String())
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkServeRuns: the runs page, every run.
func BenchmarkServeRuns(b *testing.B) {
	benchPage(b, "/", benchdb.RunID(benchdb.Runs-1))
}

// BenchmarkServeRunsFiltered: the runs page, one machine's vxlan runs.
func BenchmarkServeRunsFiltered(b *testing.B) {
	benchPage(b, "/?method=vxlan&machine=bench1", benchdb.RunID(benchdb.Runs-3))
}

// BenchmarkServeRun: a run's report.
func BenchmarkServeRun(b *testing.B) {
	benchPage(b, "/run/"+benchdb.RunID(benchdb.Runs/2), benchdb.RunID(benchdb.Runs/2))
}

// BenchmarkServeCompare: two runs compared, a machine's vxlan runs
// either side of the kernel upgrade.
func BenchmarkServeCompare(b *testing.B) {
	a, c := benchdb.RunID(benchdb.Runs/2-4), benchdb.RunID(benchdb.Runs/2+4)
	benchPage(b, "/compare?a="+a+"&b="+c, c)
}

// BenchmarkServeSeries: a series' page, the one with the change.
func BenchmarkServeSeries(b *testing.B) {
	id := trend.SeriesID("bench1", "local", benchdb.Key("vxlan", 9000), trend.MetricThroughput)
	benchPage(b, "/trend/series?id="+url.QueryEscape(id), "change")
}

// BenchmarkServeTrendMethod: the trend page of one method.
func BenchmarkServeTrendMethod(b *testing.B) {
	benchPage(b, "/trend?method=vxlan&condition=mtu9000", "vxlan")
}

// BenchmarkServeTrendMethodAgain: the trend page of one method asked for
// again, nothing written in between (the series kept at the store's
// generation).
func BenchmarkServeTrendMethodAgain(b *testing.B) {
	benchPageOf(b, "/trend?method=vxlan&condition=mtu9000", "vxlan", true)
}

// BenchmarkServeSeriesAgain: a series' page asked for again.
func BenchmarkServeSeriesAgain(b *testing.B) {
	id := trend.SeriesID("bench1", "local", benchdb.Key("vxlan", 9000), trend.MetricThroughput)
	benchPageOf(b, "/trend/series?id="+url.QueryEscape(id), "change", true)
}

// cpuTime is the user and system CPU time this process has used: on the
// shared development machine wall time moves with other jobs, CPU time
// much less.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
