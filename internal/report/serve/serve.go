// Package serve is a read-only web view of a results store: the runs
// (filtered by method, testbed, machine, kernel and label), a run's report
// (internal/report/render), two runs compared, and a series' trend with
// its change points marked and linked to their runs.
//
// Contract:
//   - Pages are rendered on the server with html/template; figures are
//     the report's inline SVG. No page loads anything from another origin.
//   - Nothing is written: the handler only reads the store.
//   - Bad input gets a 4xx page that names the parameter and the fix: an
//     unknown run or page 404, a malformed filter 400. A store error is
//     the only 5xx.
//
// A *Server is safe for concurrent use.
package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/report/render"
	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// DefaultAddr is where Serve listens unless told otherwise: the loopback
// address only.
const DefaultAddr = "127.0.0.1:8080"

// Server serves one store.
type Server struct {
	st  *store.Store
	mux *http.ServeMux

	// perPage is how many runs the runs page lists; 0 means runsPerPage.
	perPage int

	mu      sync.Mutex
	reports map[string]*render.Built // finished runs' reports, by run ids
	order   []string

	// series keeps the trend pages' series (seriesCache).
	kept seriesCache
}

// maxCached is how many built reports are kept for their figure files.
const maxCached = 16

// New returns a server over st.
func New(st *store.Store) *Server {
	s := &Server{st: st, mux: http.NewServeMux(), reports: map[string]*render.Built{}}
	s.mux.HandleFunc("GET /{$}", s.runs)
	s.mux.HandleFunc("GET /run/{id}", s.run)
	s.mux.HandleFunc("GET /run/{id}/files/{file}", s.file)
	s.mux.HandleFunc("GET /compare", s.compare)
	s.mux.HandleFunc("GET /compare/{a}/{b}/files/{file}", s.compareFile)
	s.mux.HandleFunc("GET /trend", s.trend)
	s.mux.HandleFunc("GET /trend/series", s.series)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.fail(w, http.StatusMethodNotAllowed, "this view is read-only: only GET is served")
			return
		}
		s.fail(w, http.StatusNotFound, fmt.Sprintf("no page %s: the pages are / (runs), /run/RUN, /compare?a=RUN&b=RUN and /trend", r.URL.Path))
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// CheckAddr refuses an address that is not host:port before anything
// listens.
func CheckAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("--addr %q: use host:port, e.g. %s (a wildcard such as 0.0.0.0:8080 only when you mean every interface)", addr, DefaultAddr)
	}
	return nil
}

// Serve listens on addr and serves until ctx ends; ready, when not nil,
// receives the address listened on (the port chosen for ":0").
func Serve(ctx context.Context, st *store.Store, addr string, ready func(net.Addr)) error {
	if err := CheckAddr(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: New(st), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(discard{}, "", 0)}
	if ready != nil {
		ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// httpError is a failure with its status and the message shown.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// fail writes an error page.
func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	pages.ExecuteTemplate(w, "error", struct {
		Title  string
		Status int
		Text   string
		Msg    string
	}{fmt.Sprintf("%d %s", status, http.StatusText(status)), status, http.StatusText(status), msg})
}

// failErr maps an error to its page: a lookup error to 404, a bad
// parameter to 400, anything else to 500.
func (s *Server) failErr(w http.ResponseWriter, err error) {
	if he, ok := errors.AsType[*httpError](err); ok {
		s.fail(w, he.status, he.msg)
		return
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAmbiguous) {
		s.fail(w, http.StatusNotFound, err.Error()+": see the runs on the first page")
		return
	}
	s.fail(w, http.StatusInternalServerError, err.Error())
}

// page renders template name with data, buffered so that a failure still
// gets its own status.
func (s *Server) page(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// runFilter is the runs page's filter.
type runFilter struct {
	Method, Testbed, Machine, Kernel string
	Labels                           map[string]string
	Label                            string
}

// checkParams refuses a query parameter the page does not know.
func checkParams(q url.Values, known ...string) error {
	for k := range q {
		if !slices.Contains(known, k) {
			return badRequest("unknown parameter %q: this page takes %s", k, strings.Join(known, ", "))
		}
	}
	return nil
}

type runRow struct {
	result.Run
	Methods []string
	Machine string
}

// runsPerPage is how many runs the runs page lists at once.
const runsPerPage = 100

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkParams(q, "method", "testbed", "machine", "kernel", "label", "page"); err != nil {
		s.failErr(w, err)
		return
	}
	f := runFilter{Method: q.Get("method"), Testbed: q.Get("testbed"), Machine: q.Get("machine"), Kernel: q.Get("kernel"), Label: q.Get("label")}
	if f.Label != "" {
		labels, err := trend.ParseLabels(strings.Split(f.Label, ","))
		if err != nil {
			s.failErr(w, badRequest("label %q: use key=value, several joined by commas", f.Label))
			return
		}
		f.Labels = labels
	}
	page := 1
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			s.failErr(w, badRequest("page %q: use a page number from 1, as the links under the list give", p))
			return
		}
		page = n
	}
	per := s.perPage
	if per <= 0 {
		per = runsPerPage
	}
	l, err := s.st.ListRuns(r.Context(), store.RunFilter{Method: f.Method, Testbed: f.Testbed, Machine: f.Machine, Kernel: f.Kernel, Labels: f.Labels},
		(page-1)*per, per)
	if err != nil {
		s.failErr(w, err)
		return
	}
	pages := max(1, (l.Matched+per-1)/per)
	if page > pages {
		s.fail(w, http.StatusNotFound, fmt.Sprintf("no page %d: the runs that pass these filters fill %d page(s)", page, pages))
		return
	}
	rows := make([]runRow, len(l.Runs))
	for i, run := range l.Runs {
		rows[i] = runRow{Run: run, Methods: l.Methods[run.ID], Machine: trend.Machine(run)}
	}
	link := func(p int) string {
		if p < 1 || p > pages {
			return ""
		}
		v := url.Values{}
		for k, vs := range q {
			if k != "page" {
				v[k] = vs
			}
		}
		if p > 1 {
			v.Set("page", strconv.Itoa(p))
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	s.page(w, "runs", struct {
		Title          string
		Filter         runFilter
		Rows           []runRow
		Matched, Total int
		Page, Pages    int
		First, Last    int
		Newer, Older   string
	}{"Runs", f, rows, l.Matched, l.Total, page, pages, (page-1)*per + 1, (page-1)*per + len(rows), link(page - 1), link(page + 1)})
}

// built returns the report of runs ids, from the cache when every run is
// finished. Its figure links are relative to the page: RUN/files/ under
// /run/, compare/A/B/files/ for /compare.
func (s *Server) built(ctx context.Context, ids []string) (*render.Built, error) {
	var recs []render.RunRecords
	var full []string
	for _, id := range ids {
		run, cells, err := s.st.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		recs = append(recs, render.RunRecords{Run: run, Cells: cells})
		full = append(full, run.ID)
	}
	key := strings.Join(full, " ")
	s.mu.Lock()
	b := s.reports[key]
	s.mu.Unlock()
	if b != nil {
		return b, nil
	}
	filesDir := url.PathEscape(full[0]) + "/files"
	if len(full) == 2 {
		filesDir = "compare/" + url.PathEscape(full[0]) + "/" + url.PathEscape(full[1]) + "/files"
	}
	b, err := render.Build(recs, filesDir)
	if err != nil {
		return nil, err
	}
	for _, rr := range recs {
		if rr.Run.Status == result.RunRunning {
			return b, nil // still growing: not cached
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.reports[key]; !ok {
		s.reports[key] = b
		s.order = append(s.order, key)
		if len(s.order) > maxCached {
			delete(s.reports, s.order[0])
			s.order = s.order[1:]
		}
	}
	return b, nil
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query()); err != nil {
		s.failErr(w, err)
		return
	}
	id := r.PathValue("id")
	b, err := s.built(r.Context(), []string{id})
	if err != nil {
		s.failErr(w, err)
		return
	}
	s.report(w, b)
}

func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkParams(q, "a", "b"); err != nil {
		s.failErr(w, err)
		return
	}
	a, b := q.Get("a"), q.Get("b")
	if a == "" || b == "" {
		s.failErr(w, badRequest("compare needs two runs: /compare?a=RUN_A&b=RUN_B"))
		return
	}
	rep, err := s.built(r.Context(), []string{a, b})
	if err != nil {
		s.failErr(w, err)
		return
	}
	s.report(w, rep)
}

// report writes a built report's HTML, with a link back to the runs.
func (s *Server) report(w http.ResponseWriter, b *render.Built) {
	var buf bytes.Buffer
	if err := b.WriteHTML(&buf); err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	html := buf.Bytes()
	nav := []byte(`<nav class="serve"><a href="/">runs</a> · <a href="/trend">trend</a></nav>`)
	if i := bytes.Index(html, []byte("<body>")); i >= 0 {
		html = slices.Concat(html[:i+len("<body>")], nav, html[i+len("<body>"):])
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(html)
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	b, err := s.built(r.Context(), []string{id})
	if err != nil {
		s.failErr(w, err)
		return
	}
	s.figure(w, b, r.PathValue("file"))
}

func (s *Server) compareFile(w http.ResponseWriter, r *http.Request) {
	b, err := s.built(r.Context(), []string{r.PathValue("a"), r.PathValue("b")})
	if err != nil {
		s.failErr(w, err)
		return
	}
	s.figure(w, b, r.PathValue("file"))
}

// figure serves one figure file (STEM.svg or STEM.png) of a report.
func (s *Server) figure(w http.ResponseWriter, b *render.Built, file string) {
	stem, ext, _ := strings.Cut(file, ".")
	for _, run := range b.Runs {
		for _, f := range run.Figures {
			if f.FileStem() != stem {
				continue
			}
			switch ext {
			case "svg":
				w.Header().Set("Content-Type", "image/svg+xml")
				w.Write(f.SVG)
				return
			case "png":
				png, err := f.PNG()
				if err != nil {
					s.fail(w, http.StatusInternalServerError, err.Error())
					return
				}
				w.Header().Set("Content-Type", "image/png")
				w.Write(png)
				return
			}
		}
	}
	s.fail(w, http.StatusNotFound, fmt.Sprintf("no figure %s in this report", file))
}

// trendFilter reads the trend pages' filters.
func trendFilter(q url.Values, extra ...string) (trend.Filter, error) {
	if err := checkParams(q, append([]string{"method", "testbed", "machine", "condition", "label", "metric", "since"}, extra...)...); err != nil {
		return trend.Filter{}, err
	}
	f := trend.Filter{Method: q.Get("method"), Testbed: q.Get("testbed"), Machine: q.Get("machine"), Metric: q.Get("metric")}
	if c := q.Get("condition"); c != "" {
		f.Condition = strings.Split(c, ",")
	}
	if l := q.Get("label"); l != "" {
		labels, err := trend.ParseLabels(strings.Split(l, ","))
		if err != nil {
			return f, badRequest("label %q: use key=value, several joined by commas", l)
		}
		f.Labels = labels
	}
	if f.Metric != "" && !slices.Contains(trend.Metrics, f.Metric) {
		return f, badRequest("metric %q: use one of %s", f.Metric, strings.Join(trend.Metrics, ", "))
	}
	var err error
	if f.Since, err = trend.ParseSince(q.Get("since"), time.Now()); err != nil {
		return f, badRequest("since %q: use a date (2026-01-31), an RFC 3339 time or an age such as 36h or 7d", q.Get("since"))
	}
	return f, nil
}

// load builds the series that pass f, reading from the store only the
// runs and cells f can select (as tunbench trend does), and only the
// cells of key when it is given. Series built before are given again
// while the store's generation is the one they were built at: nothing a
// trend reads has been written since, by any process (seriesCache).
func (s *Server) load(ctx context.Context, f trend.Filter, key string) ([]trend.Series, error) {
	// The generation is read before the runs: a write committed in
	// between raises it past the one the series are kept under, so they
	// are never given for a store that has changed.
	gen, err := s.st.Generation(ctx)
	if err != nil {
		return nil, err
	}
	id := cacheKey(f, key)
	if series, ok := s.kept.get(id, gen); ok {
		return series, nil
	}
	series, err := s.build(ctx, f, key)
	if err != nil {
		return nil, err
	}
	s.kept.put(id, gen, series)
	return series, nil
}

// build reads the runs and cells f can select and builds their series.
func (s *Server) build(ctx context.Context, f trend.Filter, key string) ([]trend.Series, error) {
	runs, err := s.st.RunsWithCells(ctx, store.RunQuery{Testbed: f.Testbed, Machine: f.Machine, Since: f.Since, Method: f.Method,
		Key: key, KeyParts: f.Condition, FiguresOnly: true, Keep: f.SelectRun})
	if err != nil {
		return nil, err
	}
	recs := make([]trend.RunRecords, len(runs))
	for i, r := range runs {
		recs[i] = trend.RunRecords{Run: r.Run, Cells: r.Cells}
	}
	acks, err := s.st.Acks(ctx)
	if err != nil {
		return nil, err
	}
	return trend.Build(recs, trend.Options{Filter: f, Acked: acks}), nil
}

// seriesCache keeps the series of the last maxSeriesCached trend pages,
// each with the store generation it was built at. Pages are read-only
// views of the series: they are shared between requests, never changed.
type seriesCache struct {
	mu      sync.Mutex
	entries map[string]seriesEntry
	order   []string // oldest first
}

type seriesEntry struct {
	gen    int64
	series []trend.Series
}

// maxSeriesCached is how many trend pages' series are kept.
const maxSeriesCached = 16

// get returns the series kept under id if they were built at gen.
func (c *seriesCache) get(id string, gen int64) ([]trend.Series, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || e.gen != gen {
		return nil, false
	}
	return e.series, true
}

// put keeps series under id, built at gen, dropping the oldest page's
// beyond maxSeriesCached.
func (c *seriesCache) put(id string, gen int64, series []trend.Series) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]seriesEntry{}
	}
	if e, ok := c.entries[id]; ok && e.gen > gen {
		return // a later build is kept already
	}
	if _, ok := c.entries[id]; !ok {
		c.order = append(c.order, id)
	}
	c.entries[id] = seriesEntry{gen: gen, series: series}
	for len(c.order) > maxSeriesCached {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// cacheKey is what selects a page's series: its filter and cell key.
func cacheKey(f trend.Filter, key string) string {
	labels := make([]string, 0, len(f.Labels))
	for k, v := range f.Labels {
		labels = append(labels, strconv.Quote(k)+"="+strconv.Quote(v))
	}
	slices.Sort(labels)
	return strings.Join([]string{strconv.Quote(f.Method), strconv.Quote(f.Testbed), strconv.Quote(f.Machine),
		strconv.Quote(strings.Join(f.Condition, ",")), strings.Join(labels, ","), strconv.Quote(f.Metric),
		f.Since.UTC().Format(time.RFC3339Nano), strconv.Quote(key)}, "|")
}

func (s *Server) trend(w http.ResponseWriter, r *http.Request) {
	f, err := trendFilter(r.URL.Query())
	if err != nil {
		s.failErr(w, err)
		return
	}
	series, err := s.load(r.Context(), f, "")
	if err != nil {
		s.failErr(w, err)
		return
	}
	s.page(w, "trend", struct {
		Title  string
		Query  string
		Series []trend.Series
	}{"Trend", r.URL.RawQuery, series})
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := trendFilter(q, "id")
	if err != nil {
		s.failErr(w, err)
		return
	}
	id := q.Get("id")
	parts := strings.Split(id, "|")
	if len(parts) != 4 {
		s.failErr(w, badRequest("id %q: a series id is machine|testbed|key|metric, as the trend page links it", id))
		return
	}
	f.Machine, f.Testbed, f.Metric = parts[0], parts[1], parts[3]
	// Only cells of the series' key can be its points (load reads no
	// others).
	if !slices.Contains(trend.Metrics, f.Metric) {
		s.failErr(w, badRequest("id %q: metric %q is none of %s", id, f.Metric, strings.Join(trend.Metrics, ", ")))
		return
	}
	all, err := s.load(r.Context(), f, parts[2])
	if err != nil {
		s.failErr(w, err)
		return
	}
	i := slices.IndexFunc(all, func(x trend.Series) bool { return x.ID == id })
	if i < 0 {
		s.fail(w, http.StatusNotFound, fmt.Sprintf("no series %s in this store (with these filters): see /trend", id))
		return
	}
	sr := all[i]
	s.page(w, "series", struct {
		Title  string
		Series trend.Series
		Chart  template.HTML
	}{sr.Title(), sr, chart(sr)})
}
