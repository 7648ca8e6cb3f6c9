package render

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
	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/testenv"
)

// screenshotEnv names a file the browser test also copies its screenshot
// to, for a person to look at.
const screenshotEnv = "TUNBENCH_REPORT_SCREENSHOT"

// TestReportInBrowser opens the HTML report of the fixture database (and
// of the Go-built run with the tests' records, figuresRun) in a real
// headless Chromium and checks what a reader would: no console error,
// no request for anything but the file itself (nothing fetched over the
// network), every figure kind present and every figure drawn with a size,
// its texts inside the figure and clear of one another (from the
// browser's own layout boxes, so with the fonts the browser substituted),
// every table rendered, and the summary table sorting on a header click. It saves a
// full-page screenshot in the test's temp dir (and to $TUNBENCH_REPORT_SCREENSHOT
// when set).
func TestReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	// The fixture database's runs, and a Go-built run with the records of
	// the parallel, udp_sizes and latency_under_load tests and an MSS
	// sweep, so that their figures and summary columns are drawn too.
	runs := fixtureDB(t)
	run, cells := seedRun()
	// And a run whose scenario carries the paper's published figures, so
	// the reference tables are laid out and checked with the rest
	// (under an id of its own: it is built from a run already on the page).
	ref := referenceRun()
	ref.Run.ID += "-ref"
	for i := range ref.Cells {
		ref.Cells[i].RunID = ref.Run.ID
	}
	// And the tunnels dimension's run: its figures, tunnels column and
	// Tunnels table.
	scaleRun, scaleCells := fixture.ScaleRun()
	runs = append(runs, RunRecords{Run: run, Cells: cells}, ref, RunRecords{Run: scaleRun, Cells: scaleCells})
	b, htmlPath := writeReport(t, dir, runs, true)

	var (
		mu       sync.Mutex
		problems []string
		requests []string
		// fetched are the requests the browser put on the wire (any
		// scheme but file and data): a report must make none.
		fetched []string
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
			if u, err := url.Parse(e.Request.URL); err != nil || u.Scheme != "file" && u.Scheme != "data" {
				fetched = append(fetched, e.Request.URL)
			}
		case *network.EventWebSocketCreated:
			fetched = append(fetched, e.URL)
		}
	}
	ctx := chromium(t, listen, 2*time.Minute)

	fileURL := (&url.URL{Scheme: "file", Path: htmlPath}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL)); err != nil {
		t.Fatalf("open %s in chromium: %v", fileURL, err)
	}
	// Every figure kind (report section) is on the page: the fixtures
	// must draw each, so that the layout checks below see them all.
	for _, s := range Sections {
		n := 0
		for _, r := range b.Runs {
			for _, c := range r.Charts {
				if c.Section == s.ID {
					n++
				}
			}
		}
		if n == 0 {
			t.Errorf("no figure of section %q (%s) in the report: the browser test's fixtures should draw every kind", s.ID, s.Heading)
		}
	}
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]figureLayout](figureLayoutJS))
	if err != nil {
		t.Fatal(err)
	}
	want, mains := 0, 0
	for _, r := range b.Runs {
		want += len(r.Figures)
		mains += len(r.Charts)
	}
	if len(figs) != want {
		t.Errorf("page shows %d figure drawings, want %d", len(figs), want)
	}
	ids := map[string]bool{}
	for _, fl := range figs {
		ids[fl.Figure] = true
		if fl.Width < 100 || fl.Height < 60 || fl.Shapes < 10 || fl.Texts < 3 {
			t.Errorf("figure %s (%s) rendered %gx%g with %d shapes and %d texts", fl.Figure, fl.Part, fl.Width, fl.Height, fl.Shapes, fl.Texts)
		}
		for _, p := range fl.Problems {
			t.Errorf("figure %s (%s): %s", fl.Figure, fl.Part, p)
		}
	}
	if len(ids) != mains {
		t.Errorf("page shows %d figures, want %d", len(ids), mains)
	}
	tables, err := chromedp.Run(ctx, chromedp.Evaluate[[]tableLayout](tableLayoutJS))
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) == 0 {
		t.Error("page shows no table")
	}
	references := 0
	for _, tl := range tables {
		if tl.Shown && (tl.Width < 50 || tl.Height < 10) {
			t.Errorf("table %d (%q) rendered %gx%g", tl.Index, tl.Class, tl.Width, tl.Height)
		}
		if tl.Reference {
			references++
			if !tl.Shown || tl.Rows == 0 {
				t.Errorf("reference table %d: shown %v, %d body rows", tl.Index, tl.Shown, tl.Rows)
			}
		}
	}
	if references == 0 {
		t.Error("no reference table (the paper's numbers beside ours) on the page")
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

	// Figures harder to lay out than the fixtures': a title naming every
	// parameter, eight methods with long names, a legend of eight
	// entries. Drawn on a page of their own, checked the same way.
	stressURL := stressPage(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(stressURL)); err != nil {
		t.Fatalf("open %s in chromium: %v", stressURL, err)
	}
	stress, err := chromedp.Run(ctx, chromedp.Evaluate[[]figureLayout](figureLayoutJS))
	if err != nil {
		t.Fatal(err)
	}
	if len(stress) != 3 {
		t.Errorf("stress page shows %d figure drawings, want 3", len(stress))
	}
	for _, fl := range stress {
		for _, p := range fl.Problems {
			t.Errorf("stress figure %s (%s): %s", fl.Figure, fl.Part, p)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser reported: %s", p)
	}
	for _, r := range requests {
		if r != fileURL && r != stressURL && !strings.HasPrefix(r, "data:") {
			t.Errorf("request for something other than the file itself: %s", r)
		}
	}
	if len(fetched) > 0 {
		t.Errorf("page fetched over the network: %q", fetched)
	}
	if !slices.Contains(requests, fileURL) {
		t.Errorf("no request for the file itself seen (requests: %q)", requests)
	}
}

// figureLayout is what the browser laid out for one drawing of a figure
// (its main view, or the other x scale).
type figureLayout struct {
	Figure, Part  string
	Width, Height float64
	Shapes, Texts int
	// Problems are texts outside the figure's box, overlapping another
	// text of the figure, empty or drawn with no size.
	Problems []string
}

// figureLayoutJS measures every drawing of every figure on the page,
// showing the hidden ones (the other x scale) while it measures them. A
// text lies inside its figure when its box is within the SVG's (half a
// pixel of rounding allowed); two texts overlap when their boxes share
// more than half a pixel each way.
const figureLayoutJS = `(() => {
	const eps = 0.5, out = [];
	const where = b => '[' + [b.left, b.top, b.right, b.bottom].map(v => v.toFixed(1)).join(' ') + ']';
	for (const f of document.querySelectorAll('figure')) {
		for (const div of f.querySelectorAll('.fig')) {
			const hidden = div.hidden;
			div.hidden = false;
			const res = {Figure: f.id, Part: div.classList.contains('alt') ? 'other scale' : 'main', Width: 0, Height: 0, Shapes: 0, Texts: 0, Problems: []};
			const svg = div.querySelector('svg');
			if (svg) {
				const r = svg.getBoundingClientRect();
				res.Width = r.width; res.Height = r.height;
				res.Shapes = Array.from(svg.querySelectorAll('path')).reduce((n, p) => n + ((p.getAttribute('d') || '').match(/M/g) || []).length, 0); // subpaths: compactSVG merges paths of one style
				const seen = [];
				for (const t of svg.querySelectorAll('text')) {
					res.Texts++;
					const s = t.textContent, b = t.getBoundingClientRect();
					if (s.trim() === '') { res.Problems.push('empty text element at ' + where(b)); continue; }
					if (b.width <= 0 || b.height <= 0) { res.Problems.push('"' + s + '" drawn with no size'); continue; }
					if (b.left < r.left - eps || b.right > r.right + eps || b.top < r.top - eps || b.bottom > r.bottom + eps) {
						res.Problems.push('"' + s + '" at ' + where(b) + ' runs outside the figure ' + where(r));
					}
					for (const o of seen) {
						const w = Math.min(b.right, o.b.right) - Math.max(b.left, o.b.left);
						const h = Math.min(b.bottom, o.b.bottom) - Math.max(b.top, o.b.top);
						if (w > eps && h > eps) {
							res.Problems.push('"' + s + '" at ' + where(b) + ' overlaps "' + o.s + '" at ' + where(o.b));
						}
					}
					seen.push({s, b});
				}
			}
			div.hidden = hidden;
			out.push(res);
		}
	}
	return out;
})()`

// tableLayout is the rendered size of one table of the page.
type tableLayout struct {
	Index         int
	Class         string
	Shown         bool // false inside a closed <details>
	Width, Height float64
	Rows          int
	// Reference is set for a table of the paper's published figures
	// beside ours (referenceTableSelector), which must render with rows.
	Reference bool
}

// referenceTableSelector picks the tables of the paper's reference
// figures beside ours (reference.go), which the browser test checks
// render.
const referenceTableSelector = "table.reference"

// tableLayoutJS measures every table of the page (summaries,
// comparisons, devices, environment, reference figures).
const tableLayoutJS = `Array.from(document.querySelectorAll('table')).map((t, i) => {
	const r = t.getBoundingClientRect();
	const rows = Array.from(t.tBodies).reduce((n, b) => n + b.rows.length, 0);
	return {Index: i, Class: t.className, Shown: t.getClientRects().length > 0, Width: r.width, Height: r.height, Rows: rows,
		Reference: t.matches('` + referenceTableSelector + `')};
})`

// stressPage writes a page of figures that are hard to lay out to dir
// and returns its file URL.
func stressPage(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><style>figure{width:560px} .fig svg{width:100%;height:auto;display:block}</style></head><body>`)
	for _, c := range stressCharts() {
		rs, err := Render(c)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, `<figure id="%s">`, c.ID)
		for i, r := range rs {
			part := "main"
			if i > 0 {
				part = "alt"
			}
			fmt.Fprintf(&b, `<div class="fig %s">%s</div>`, part, inlineSVG(r.SVG))
		}
		b.WriteString("</figure>")
	}
	b.WriteString("</body></html>")
	path := filepath.Join(dir, "stress.html")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return (&url.URL{Scheme: "file", Path: path}).String()
}

// stressCharts are figures harder to lay out than the fixtures': a title
// naming every parameter, eight methods with long names as bar
// categories, legends of eight entries.
func stressCharts() []Chart {
	methods := []string{"native", "vxlan", "ovs-geneve", "ovs-vxlan", "wireguard/wireguard-go", "ipsec/strongswan", "geneve/kernel", "openvpn-udp"}
	title := "ipv6, MTU 9000, offloads off (set udp-tnl-seg), 16 streams, bbr, pinned, MSS 1400, reverse, WAN 20ms ±2ms 0.1% loss, frankfurt-a → virginia-b"
	bars := Chart{ID: "stress-bars", Kind: KindBars, Title: "CPU (" + title + ")", XLabel: "method", YLabel: "CPU (cores)", Categories: methods}
	lines := Chart{ID: "stress-lines", Kind: KindLines, Title: "Throughput over time (" + title + ")", XLabel: "time (s)", YLabel: "throughput (Gbit/s)",
		LogX: true, AltScale: true}
	for i, m := range methods {
		y := make([]float64, len(methods))
		for j := range y {
			y[j] = float64(1+(i+j)%5) * 0.37
		}
		bars.Series = append(bars.Series, Series{Name: "side " + m, Color: i, Stack: fmt.Sprint(i % 3), Y: y})
		lines.Series = append(lines.Series, Series{Name: m, Color: i, Dashed: i%2 == 1,
			X: []float64{0.5, 1, 1.5, 2}, Y: []float64{float64(10 + i), float64(12 + i), float64(9 + i), float64(11 + i)}})
	}
	return []Chart{bars, lines}
}

// writeReport writes the HTML report of runs to dir/report.html, and with
// files its figure files beside it, and returns the report and the path.
func writeReport(t *testing.T, dir string, runs []RunRecords, files bool) (*Built, string) {
	t.Helper()
	htmlPath := filepath.Join(dir, "report.html")
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
	if files {
		if err := b.WriteFiles(filepath.Join(dir, "report-files")); err != nil {
			t.Fatal(err)
		}
	}
	return b, htmlPath
}

// chromium starts a headless Chromium with a profile of its own, which
// is removed at the test's end, and returns a context driving it for at
// most timeout; listen gets its events. It skips (a failure in strict
// mode) when Chromium is not installed.
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
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	// Cleanups run last added first: the timeout, the browser, then the
	// profile directory.
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancel)
	t.Cleanup(cancelTimeout)
	return ctx
}
