package render

import (
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestReferenceInBrowser opens a report whose run carries a reference
// block in headless Chromium and checks, from the browser's own layout,
// that the paper's numbers render: the run's table of class "reference"
// and the one inside the native throughput figure are laid out with every
// row, the figure's table lies inside its figure's box, the paper's value
// and the ratio are in their cells, and the page requests nothing but
// itself.
func TestReferenceInBrowser(t *testing.T) {
	_, htmlPath := writeReport(t, t.TempDir(), []RunRecords{referenceRun()}, false)
	var (
		mu       sync.Mutex
		requests []string
	)
	ctx := chromium(t, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}, time.Minute)
	fileURL := (&url.URL{Scheme: "file", Path: htmlPath}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL)); err != nil {
		t.Fatalf("open %s in chromium: %v", fileURL, err)
	}

	type tableBox struct {
		Figure                 string
		Rows                   int
		Width, Height          float64
		Inside                 bool
		FirstPaper, FirstRatio string
		Headers                []string
	}
	tables, err := chromedp.Run(ctx, chromedp.Evaluate[[]tableBox](`Array.from(document.querySelectorAll('table.reference')).map(t => {
		const r = t.getBoundingClientRect(); const fig = t.closest('figure');
		let inside = true;
		if (fig) { const f = fig.getBoundingClientRect(); inside = r.left >= f.left && r.right <= f.right + 0.5 && r.top >= f.top && r.bottom <= f.bottom + 0.5; }
		const row = t.tBodies[0].rows[0];
		return {Figure: fig ? fig.id : '', Rows: t.tBodies[0].rows.length, Width: r.width, Height: r.height, Inside: inside,
			FirstPaper: row.cells[2].textContent, FirstRatio: row.cells[4].textContent,
			Headers: Array.from(t.tHead.rows[0].cells).map(c => c.textContent)};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	var run, fig *tableBox
	for i := range tables {
		switch {
		case tables[i].Figure == "":
			run = &tables[i]
		case strings.Contains(tables[i].Figure, "-throughput-time-native-"):
			fig = &tables[i]
		}
	}
	if run == nil || fig == nil {
		t.Fatalf("reference tables: %+v", tables)
	}
	if run.Rows != 6 || run.Width < 200 || run.Height < 60 || run.FirstPaper != "23.6 Gbit/s" || run.FirstRatio != "1.00" {
		t.Errorf("run's reference table: %+v", *run)
	}
	if strings.Join(run.Headers, ",") != "method,figure,paper,ours,ratio,% of native: paper / ours,note,source,drawn in" {
		t.Errorf("reference columns: %q", run.Headers)
	}
	if fig.Rows != 1 || fig.Width < 100 || fig.Height < 20 || !fig.Inside || fig.FirstPaper != "23.6 Gbit/s" {
		t.Errorf("native figure's reference table: %+v", *fig)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range requests {
		if r != fileURL && !strings.HasPrefix(r, "data:") {
			t.Errorf("request for something other than the file itself: %s", r)
		}
	}
}
