package report

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tunbench/tunbench/internal/testenv"
)

// screenshotEnv names a file the browser test also copies its screenshot
// to, for a person to look at.
const screenshotEnv = "TUNBENCH_REPORT_SCREENSHOT"

// TestReportInBrowser opens the HTML report of the fixture database (and
// of the Go-built run with the tests' records, figuresRun) in a real
// headless Chromium and checks what a reader would: no console error,
// no request for anything but the file itself, every figure drawn with a
// size, and the summary table sorting on a header click. It saves a
// full-page screenshot in the test's temp dir (and to $TUNBENCH_REPORT_SCREENSHOT
// when set).
func TestReportInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		testenv.SkipMissing(t, "chromium is not installed (Debian package chromium; scripts/install.sh installs it): %v", err)
	}
	dir := t.TempDir()
	htmlPath := filepath.Join(dir, "report.html")
	// The fixture database's runs, and a Go-built run with the records of
	// the parallel, udp_sizes and latency_under_load tests, so that their
	// figures and summary columns are drawn too.
	runs := fixtureDB(t)
	run, cells := figuresRun()
	runs = append(runs, RunRecords{Run: run, Cells: cells})
	b, err := Build(runs, "report-files")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFiles(filepath.Join(dir, "report-files")); err != nil {
		t.Fatal(err)
	}

	profile, err := os.MkdirTemp("", "tunbench-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Chromium's helpers may still write for a moment after it exits.
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
		// Chromium keeps crash-report settings under $HOME/.config and a
		// singleton socket directory under $TMPDIR whatever the profile:
		// point both at the profile, so the test leaves nothing behind.
		chromedp.Env("HOME="+profile, "TMPDIR="+profile, "XDG_CONFIG_HOME="+filepath.Join(profile, "config"), "XDG_CACHE_HOME="+filepath.Join(profile, "cache")),
		chromedp.WindowSize(1400, 1000),
	)
	defer cancelAlloc()

	var (
		mu       sync.Mutex
		problems []string
		requests []string
	)
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				problems = append(problems, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		}
	}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(listen))
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	fileURL := (&url.URL{Scheme: "file", Path: htmlPath}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL)); err != nil {
		t.Fatalf("open %s in chromium: %v", fileURL, err)
	}
	type figureBox struct {
		ID            string
		Width, Height float64
		Shapes        int // subpaths: compactSVG merges paths of one style
	}
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]figureBox](`Array.from(document.querySelectorAll('figure')).map(f => {
		const svg = f.querySelector('.fig.main svg'); const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
		return {ID: f.id, Width: r.width, Height: r.height, Shapes: svg ? Array.from(svg.querySelectorAll('path')).reduce((n, p) => n + (p.getAttribute('d').match(/M/g) || []).length, 0) : 0};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, r := range b.Runs {
		want += len(r.Charts)
	}
	if len(figs) != want {
		t.Errorf("page shows %d figures, want %d", len(figs), want)
	}
	for _, fb := range figs {
		if fb.Width < 100 || fb.Height < 60 || fb.Shapes < 10 {
			t.Errorf("figure %s rendered %gx%g with %d shapes", fb.ID, fb.Width, fb.Height, fb.Shapes)
		}
	}
	// The other x scale of the RTT figures appears on its toggle.
	toggled, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const cb = document.querySelector('input.altscale'); cb.click();
		const f = cb.closest('figure');
		const alt = f.querySelector('.fig.alt svg').getBoundingClientRect();
		const main = f.querySelector('.fig.main svg').getBoundingClientRect();
		cb.click();
		return [alt.width, alt.height, main.width];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if toggled[0] < 100 || toggled[1] < 60 || toggled[2] != 0 {
		t.Errorf("scale toggle: other scale %gx%g, first figure still %g wide", toggled[0], toggled[1], toggled[2])
	}

	// Sort the first summary table by throughput, ascending then descending.
	const col = 6 // "Gbit/s ± CI95"
	column := fmt.Sprintf(`Array.from(document.querySelector('table.sortable').tBodies[0].rows).map(r => Number(r.cells[%d].dataset.v))`, col)
	before, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](column))
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf(`table.sortable thead th:nth-child(%d)`, col+1)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(header))); err != nil {
		t.Fatal(err)
	}
	asc, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](column))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(asc) || slices.Equal(asc, before) && !slices.IsSorted(before) {
		t.Errorf("after one click the throughput column is not ascending: %v", asc)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(header))); err != nil {
		t.Fatal(err)
	}
	desc, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](column))
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(desc)
	slices.Reverse(rev)
	if !slices.IsSorted(rev) || len(desc) < 2 || desc[0] == desc[len(desc)-1] {
		t.Errorf("after two clicks the throughput column is not descending: %v", desc)
	}

	// Make the viewport as tall as the page, so that the capture paints
	// every part (headless Chromium may leave regions beyond the viewport
	// unpainted).
	height, err := chromedp.Run(ctx, chromedp.Evaluate[int64](`document.documentElement.scrollHeight`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, height)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(dir, "report.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shotPath, len(shot))
	if p := os.Getenv(screenshotEnv); p != "" {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser reported: %s", p)
	}
	for _, r := range requests {
		if r != fileURL && !strings.HasPrefix(r, "data:") {
			t.Errorf("request for something other than the file itself: %s", r)
		}
	}
	if !slices.Contains(requests, fileURL) {
		t.Errorf("no request for the file itself seen (requests: %q)", requests)
	}
}
