package serve

import (
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestServeInBrowser drives the web view in a real headless Chromium as a
// reader would: the runs page lists every run; a click on a run reaches
// its report with its figures drawn (each with a size); the trend page of
// the nightly series shows one marked change point linked to the first
// run after it, and a click on it reaches that run; an unknown run shows
// a 404 page that says so. No page requests anything from another
// origin, and none logs a script error.
func TestServeInBrowser(t *testing.T) {
	st, firstAfter := testStore(t)
	srv := httptest.NewServer(New(st))
	defer srv.Close()
	recs := fixture.DB(t)
	matrix := recs[0].Run.ID

	var (
		mu       sync.Mutex
		problems []string
		foreign  []string
	)
	ctx := chromium(t, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, "console.error")
			}
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, srv.URL) && !strings.HasPrefix(u, "data:") {
				foreign = append(foreign, u)
			}
		}
	}, 2*time.Minute)

	// The runs page lists every run.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#runs tr.run").length`))
	if err != nil || n != 10 {
		t.Fatalf("runs page: %d rows, %v; want 10", n, err)
	}
	// A click reaches a run's report, its figures drawn.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a.runlink[href="/run/`+matrix+`"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("figure svg"))); err != nil {
		t.Fatal(err)
	}
	type figs struct {
		URL   string
		Drawn int
		All   int
	}
	f, err := chromedp.Run(ctx, chromedp.Evaluate[figs](`(() => {
		const svgs = [...document.querySelectorAll("figure svg")].filter(s => s.getBoundingClientRect().width > 0);
		return {URL: location.pathname, All: svgs.length,
			Drawn: svgs.filter(s => { const r = s.getBoundingClientRect(); return r.width > 100 && r.height > 100 && s.querySelectorAll("path,line,rect,polyline").length > 0; }).length};
	})()`))
	if err != nil || f.URL != "/run/"+matrix || f.All < 5 || f.Drawn != f.All {
		t.Errorf("run page: %+v, %v; want /run/%s with every figure drawn", f, err, matrix)
	}

	// The trend page marks the change point and links it to its run.
	series := trend.SeriesID(recs[1].Run.Host.Hostname, recs[1].Run.Testbed, trendKey, trend.MetricThroughput)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/trend")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a.serieslink[href="/trend/series?`+url.Values{"id": {series}}.Encode()+`"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#trendchart svg"))); err != nil {
		t.Fatal(err)
	}
	type marks struct {
		Runs   []string
		Points int
		Width  float64
	}
	m, err := chromedp.Run(ctx, chromedp.Evaluate[marks](`(() => {
		const cps = [...document.querySelectorAll("#trendchart g.changepoint")];
		return {Runs: cps.map(g => g.dataset.run), Points: document.querySelectorAll("#trendchart circle.point").length,
			Width: cps.length ? cps[0].getBoundingClientRect().height : 0};
	})()`))
	if err != nil || len(m.Runs) != 1 || m.Runs[0] != firstAfter || m.Points != 10 || m.Width < 100 {
		t.Fatalf("trend page: %+v, %v; want one change point marked at run %s over 10 points (both fixture runs and eight nightly ones)", m, err, firstAfter)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#trendchart g.changepoint line"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("figure svg"))); err != nil {
		t.Fatal(err)
	}
	path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil || path != "/run/"+firstAfter {
		t.Errorf("the change point's link went to %q, %v; want /run/%s", path, err, firstAfter)
	}

	// Bad input: a page that says what is wrong.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/run/ffffff")); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("h1").textContent + ": " + document.querySelector("#error").textContent`))
	if err != nil || !strings.Contains(msg, "404") || !strings.Contains(msg, "ffffff: not found") {
		t.Errorf("unknown run: %q, %v; want a 404 page naming the run", msg, err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("script problems: %v", problems)
	}
	if len(foreign) > 0 {
		t.Errorf("requests to another origin: %v", foreign)
	}
}

// chromium starts a headless Chromium with a profile of its own, removed
// at the test's end, and returns a context driving it for at most
// timeout (as internal/report/render's browser test does). It skips (a
// failure in strict mode) when Chromium is not installed.
func chromium(t *testing.T, listen func(ev any), timeout time.Duration) context.Context {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		testenv.SkipMissing(t, "chromium is not installed (Debian package chromium; scripts/install.sh installs it): %v", err)
	}
	profile, err := os.MkdirTemp("", "tunbench-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.Env("HOME="+profile, "TMPDIR="+profile, "XDG_CONFIG_HOME="+filepath.Join(profile, "config"), "XDG_CACHE_HOME="+filepath.Join(profile, "cache")),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancel)
	t.Cleanup(cancelTimeout)
	return ctx
}
