package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
)

// progress prints where the run is: step, ETA across the matrix and the
// live throughput of the running cell. On a terminal the line rewrites
// itself; otherwise one line per finished step is printed.
type progress struct {
	w       io.Writer
	tty     bool
	steps   []plan.Step
	start   time.Time
	mu      sync.Mutex
	cur     plan.Step
	elapsed float64 // measured seconds of finished steps
	total   float64 // measured seconds of the whole plan
	of      int     // steps in the whole plan (a resumed run skips some)
}

func newProgress(w io.Writer, tty bool, steps []plan.Step, of int) *progress {
	p := &progress{w: w, tty: tty, steps: steps, of: of, start: time.Now()}
	for _, s := range steps {
		p.total += s.Measured()
	}
	return p
}

// eta scales the remaining planned time by the overhead observed so far.
func (p *progress) eta() time.Duration {
	remaining := p.total - p.elapsed
	ratio := 1.1
	if p.elapsed > 0 {
		ratio = time.Since(p.start).Seconds() / p.elapsed
	}
	return time.Duration(remaining * ratio * float64(time.Second)).Round(time.Second)
}

func (p *progress) prefix(s plan.Step) string {
	cc := ""
	if s.Params.CongestionControl != "" {
		cc = " cc " + s.Params.CongestionControl
	}
	return fmt.Sprintf("[%d/%d ETA %s] %s %s mtu %d offloads %s%s rep %d",
		s.Index, p.of, p.eta(), s.Method, s.Params.Family, s.Params.UnderlayMTU, onOff(s.Params.Offloads), cc, s.Repetition)
}

func (p *progress) begin(s plan.Step) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur = s
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s: setting up", p.prefix(s))
	}
}

func (p *progress) live(bps float64) {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s: %.2f Gbit/s", p.prefix(p.cur), bps/1e9)
}

func (p *progress) end(s plan.Step, c result.Cell) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.elapsed += s.Measured()
	what := "failed: " + c.Error
	if c.Status == result.StatusOK {
		what = okSummary(c)
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.prefix(s), what)
}

func (p *progress) done() {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// okSummary is the progress line's account of an ok cell: throughput and
// p50 RTT when measured, the connect and recover times when measured,
// else "ok".
func okSummary(c result.Cell) string {
	var parts []string
	if c.Throughput != nil {
		what := fmt.Sprintf("%.2f Gbit/s", c.Throughput.BitsPerSecond/1e9)
		if c.Latency != nil {
			what += fmt.Sprintf(", p50 RTT %.0f µs", c.Latency.P50)
		}
		parts = append(parts, what)
	}
	if k := c.Connect; k != nil {
		parts = append(parts, fmt.Sprintf("connect %.0f ms", 1000*k.Total))
	}
	if r := c.Recover; r != nil && r.Recovered {
		parts = append(parts, fmt.Sprintf("recover %.0f ms, %d lost", 1000*r.Recovery, r.Lost))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ", ")
}
