package serve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// trendKey is the series the test store's nightly runs make a trend of.
const trendKey = "native/ipv4/mtu1500/offloads-on/p1"

// testStore is a store with the fixture database's two real runs and
// eight nightly runs made of the streams run's native cells, the last
// four at a quarter of the throughput and on another kernel. It returns
// the store and the id of the first run after the change.
func testStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	recs := fixture.DB(t)
	add := func(run result.Run, cells []result.Cell) {
		t.Helper()
		if err := st.BeginRun(ctx, &run); err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			c.RunID = run.ID
			if _, err := st.AddCell(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishRun(ctx, run.ID, result.RunDone, "", run.Started.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs {
		add(r.Run, r.Cells)
	}
	streams := recs[1]
	var native []result.Cell
	for _, c := range streams.Cells {
		if c.Key == trendKey {
			native = append(native, c)
		}
	}
	if len(native) == 0 {
		t.Fatalf("the fixture's streams run has no %s cells", trendKey)
	}
	var firstAfter string
	for i := range 8 {
		run := streams.Run
		run.ID = fmt.Sprintf("n%05d", i)
		run.Started = streams.Run.Started.AddDate(0, 0, i+1)
		cells := native
		if i >= 4 {
			run.Host.Kernel = "6.19.0-test"
			cells = fixture.ScaleThroughput(native, "native", 0.25)
			if firstAfter == "" {
				firstAfter = run.ID
			}
		}
		add(run, cells)
	}
	return st, firstAfter
}

func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestRunsPages pages through the runs, newest first, keeping the
// filters in the links.
func TestRunsPages(t *testing.T) {
	st, _ := testStore(t)
	all, err := st.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := New(st)
	s.perPage = 4
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, tc := range []struct {
		path      string
		want      []string
		first     int // index in all of the first run listed
		n         int
		notWanted string
	}{
		{"/", []string{"10 of 10 runs, 1 to 4 here", "page 1 of 3", `href="/?page=2">older runs`}, 0, 4, "newer runs"},
		{"/?page=2", []string{"5 to 8 here", `href="/">newer runs`, `href="/?page=3">older runs`}, 4, 4, ""},
		{"/?page=3", []string{"9 to 10 here", "page 3 of 3", `href="/?page=2">newer runs`}, 8, 2, "older runs"},
		{"/?kernel=6.19.0-test&page=1", []string{"4 of 10 runs. Tick"}, -1, 4, "page 1 of"},
	} {
		status, body := get(t, srv.URL, tc.path)
		for _, w := range tc.want {
			if status != 200 || !strings.Contains(body, w) {
				t.Errorf("GET %s: %d, want 200 with %q\n%.600s", tc.path, status, w, body)
			}
		}
		if tc.notWanted != "" && strings.Contains(body, tc.notWanted) {
			t.Errorf("GET %s: has %q", tc.path, tc.notWanted)
		}
		if n := strings.Count(body, `class="runlink"`); n != tc.n {
			t.Errorf("GET %s: %d runs listed, want %d", tc.path, n, tc.n)
		}
		if tc.first >= 0 && !strings.Contains(body, `href="/run/`+all[tc.first].ID+`"`) {
			t.Errorf("GET %s: run %s not listed", tc.path, all[tc.first].ID)
		}
	}
	status, body := get(t, srv.URL, "/?testbed=local&page=2")
	if status != 200 || !strings.Contains(body, `href="/?page=3&amp;testbed=local"`) {
		t.Errorf("GET /?testbed=local&page=2: %d, want the older link to keep the filter\n%.600s", status, body)
	}
}

// TestPages: every page answers, bad input gets a 4xx page that says
// what to do, never a 500.
func TestPages(t *testing.T) {
	st, firstAfter := testStore(t)
	srv := httptest.NewServer(New(st))
	defer srv.Close()
	recs := fixture.DB(t)
	matrix := recs[0].Run.ID
	series := trend.SeriesID(recs[1].Run.Host.Hostname, recs[1].Run.Testbed, trendKey, trend.MetricThroughput)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/", 200, "10 of 10 runs"},
		{"/?method=vxlan", 200, "2 of 10 runs"},
		{"/?kernel=6.19.0-test", 200, "4 of 10 runs"},
		{"/run/" + matrix, 200, "<svg"},
		{"/run/" + matrix[:4], 200, "<svg"},
		{"/compare?a=" + matrix + "&b=" + recs[1].Run.ID, 200, "<svg"},
		{"/trend", 200, trendKey},
		{"/trend/series?" + url.Values{"id": {series}}.Encode(), 200, `data-run="` + firstAfter + `"`},
		{"/run/ffffff", 404, "find run ffffff: not found"},
		{"/run/n0", 404, "ambiguous"},
		{"/run/" + matrix + "/files/nope.svg", 404, "no figure nope.svg"},
		{"/nope", 404, "the pages are"},
		{"/?label=novalue", 400, "use key=value"},
		{"/?colour=red", 400, "unknown parameter &#34;colour&#34;"},
		{"/?page=1", 200, "10 of 10 runs. Tick"},
		{"/?page=0", 400, "use a page number from 1"},
		{"/?page=2", 404, "no page 2: the runs that pass these filters fill 1 page(s)"},
		{"/trend?since=yesterday", 400, "since"},
		{"/trend?metric=bogus", 400, "metric"},
		{"/trend/series?id=garbage", 400, "a series id is machine|testbed|key|metric"},
		{"/trend/series?" + url.Values{"id": {"x|y|z|throughput"}}.Encode(), 404, "no series"},
		{"/compare?a=" + matrix, 400, "compare needs two runs"},
		{"/compare?a=" + matrix + "&b=ffffff", 404, "not found"},
	} {
		status, body := get(t, srv.URL, tc.path)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d, want %d with %q\n%.600s", tc.path, status, tc.status, tc.want, body)
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
	// A figure file the report links to is served.
	_, body := get(t, srv.URL, "/run/"+matrix)
	i := strings.Index(body, `href="`+matrix+`/files/`)
	if i < 0 {
		t.Fatalf("the run page links no figure file under %s/files/", matrix)
	}
	link := body[i+len(`href="`):]
	link = link[:strings.IndexByte(link, '"')]
	resp, err = http.Get(srv.URL + "/run/" + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
		t.Errorf("GET /run/%s: %d %s, want an image", link, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "[::1]:0", "0.0.0.0:8080", "localhost:9000"} {
		if err := CheckAddr(ok); err != nil {
			t.Errorf("CheckAddr(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"8080", "", "127.0.0.1", "127.0.0.1:"} {
		if err := CheckAddr(bad); err == nil || !strings.Contains(err.Error(), "--addr") {
			t.Errorf("CheckAddr(%q) = %v, want an error naming --addr", bad, err)
		}
	}
	if !strings.HasPrefix(DefaultAddr, "127.0.0.1:") {
		t.Errorf("DefaultAddr %s is not the loopback address", DefaultAddr)
	}
}

// TestTrendPagesFollowWrites: a trend page asked for again with nothing
// written in between is given from the series built the first time; a
// run another process adds, and a change it acknowledges, are on the
// next page at once.
func TestTrendPagesFollowWrites(t *testing.T) {
	st, firstAfter := testStore(t)
	ctx := context.Background()
	s := New(st)
	srv := httptest.NewServer(s)
	defer srv.Close()
	recs := fixture.DB(t)
	streams := recs[1]
	series := trend.SeriesID(streams.Run.Host.Hostname, streams.Run.Testbed, trendKey, trend.MetricThroughput)
	page := "/trend/series?" + url.Values{"id": {series}}.Encode()

	a, err := s.load(ctx, trend.Filter{}, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.load(ctx, trend.Filter{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || &a[0] != &b[0] {
		t.Errorf("the trend's series asked for twice with nothing written in between were built twice")
	}
	_, body := get(t, srv.URL, page)
	if strings.Contains(body, `href="/run/n00099"`) || !strings.Contains(body, `data-run="`+firstAfter+`"`) {
		t.Fatalf("series page before the write: want the change at %s and no run n00099:\n%.600s", firstAfter, body)
	}

	// Another process (its own handle on the file) adds a run and
	// acknowledges the change.
	other, err := store.Open(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	run := streams.Run
	run.ID, run.Started = "n00099", streams.Run.Started.AddDate(0, 0, 30)
	if err := other.BeginRun(ctx, &run); err != nil {
		t.Fatal(err)
	}
	for _, c := range streams.Cells {
		if c.Key == trendKey {
			c.RunID = run.ID
			if _, err := other.AddCell(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := other.FinishRun(ctx, run.ID, result.RunDone, "", run.Started.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, srv.URL, page)
	if !strings.Contains(body, `href="/run/n00099"`) {
		t.Errorf("series page after another process added run n00099 does not list it:\n%.600s", body)
	}
	all, err := s.load(ctx, trend.Filter{}, "")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(x trend.Series) bool { return x.ID == series })
	if i < 0 || len(all[i].Changes) == 0 {
		t.Fatalf("no change in series %s", series)
	}
	if err := other.Ack(ctx, all[i].Changes[0].ID, "known", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, body = get(t, srv.URL, page); !strings.Contains(body, ", acknowledged") {
		t.Errorf("series page after another process acknowledged change %s does not say so:\n%.600s", all[i].Changes[0].ID, body)
	}
}
