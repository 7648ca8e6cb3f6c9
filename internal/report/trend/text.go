package trend

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// MetricName is how a metric reads in text.
func MetricName(m string) string {
	switch m {
	case MetricThroughput:
		return "throughput"
	case MetricP50RTT:
		return "p50 RTT"
	case MetricP99RTT:
		return "p99 RTT"
	}
	return m
}

// Value formats a series' value with its unit.
func Value(v float64, unit string) string {
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// Title is a series' one-line name.
func (s Series) Title() string {
	return fmt.Sprintf("%s %s on %s (%s)", s.Key, MetricName(s.Metric), s.Machine, s.Testbed)
}

// Write prints every series: one line each, and under it its change
// points with the runs either side and what differed between them.
func Write(w io.Writer, series []Series) error {
	var b strings.Builder
	if len(series) == 0 {
		b.WriteString("no series: no stored run has a cell that passes the filters\n")
	}
	changes := 0
	for _, s := range series {
		excluded := 0
		for _, p := range s.Points {
			if p.Excluded != "" {
				excluded++
			}
		}
		fmt.Fprintf(&b, "%s: %d runs", s.Title(), len(s.Points))
		if excluded > 0 {
			fmt.Fprintf(&b, " (%d left out: measured on a busy or emulated host)", excluded)
		}
		switch len(s.Changes) {
		case 0:
			b.WriteString(", no change point\n")
		case 1:
			b.WriteString(", 1 change point\n")
		default:
			fmt.Fprintf(&b, ", %d change points\n", len(s.Changes))
		}
		for _, c := range s.Changes {
			changes++
			kind := "improvement"
			if c.Regression {
				kind = "REGRESSION"
			}
			if c.Acked {
				kind += " (acknowledged)"
			}
			fmt.Fprintf(&b, "  change %s: %+.1f%% (%s -> %s, p=%.2g, %d runs before, %d after) %s\n",
				c.ID, c.Percent, Value(c.Before, s.Unit), Value(c.After, s.Unit), c.P, c.NBefore, c.NAfter, kind)
			fmt.Fprintf(&b, "    last run before: %s (%s); first run after: %s (%s)\n",
				c.LastBefore, c.BeforeTime.Local().Format(time.DateTime), c.FirstAfter, c.AfterTime.Local().Format(time.DateTime))
			if len(c.Differences) == 0 {
				b.WriteString("    changed between: nothing tunbench records (kernel, tools, labels are the same)\n")
			}
			for _, d := range c.Differences {
				fmt.Fprintf(&b, "    changed between: %s %s -> %s\n", d.Fact, orNone(d.Before), orNone(d.After))
			}
			for _, n := range c.Notes {
				fmt.Fprintf(&b, "    note: %s\n", n)
			}
		}
	}
	if len(series) > 0 {
		fmt.Fprintf(&b, "%d series, %s, %s\n", len(series), plural(changes, "change point"), plural(Regressions(series), "unacknowledged regression"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// JSON writes the series as indented JSON.
func JSON(w io.Writer, series []Series) error {
	if series == nil {
		series = []Series{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Series      []Series `json:"series"`
		Regressions int      `json:"unacknowledged_regressions"`
	}{series, Regressions(series)})
}
