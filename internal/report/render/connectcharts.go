package render

import (
	"fmt"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// Figures and take-aways of the connect and recover tests: bars per
// method with their 95% confidence intervals.

// SectionConnect holds the connect and recover figures.
const SectionConnect = "connect-recover"

// msFigure is f in milliseconds.
func msFigure(f summary.Figure) summary.Figure {
	f.Mean, f.HalfWidth = 1000*f.Mean, 1000*f.HalfWidth
	f.StdDev, f.CI95Low, f.CI95High = 1000*f.StdDev, 1000*f.CI95Low, 1000*f.CI95High
	f.Unit = "ms"
	return f
}

// barSeries makes one bar series of get over rows (0 where a row lacks
// the figure), and says whether any row has it.
func barSeries(name string, color int, rows []summary.Summary, get func(*summary.ConnectSummary) summary.Figure, scale func(summary.Figure) summary.Figure) (Series, bool) {
	s := Series{Name: name, Color: color, Stack: name}
	any := false
	for _, r := range rows {
		f := scale(get(r.Tests.Connect))
		if f.N > 0 {
			any = true
		}
		s.Y = append(s.Y, summary.Round6(f.Mean))
		s.YErr = append(s.YErr, summary.Round6(f.HalfWidth))
	}
	return s, any
}

func same(f summary.Figure) summary.Figure { return f }

// connectRows are the rows of a parameter set that ran connect or
// recover, and their labels.
func connectRows(ps paramSet) ([]summary.Summary, []string) {
	var rows []summary.Summary
	var cats []string
	for _, r := range ps.rows {
		if r.Tests != nil && r.Tests.Connect != nil {
			rows = append(rows, r)
			cats = append(cats, r.Label)
		}
	}
	return rows, cats
}

// connectCharts: per parameter set, the connect time split into the
// method's set-up and the handshake after it; the time traffic needs to
// flow again after the underlay came back, and the requests lost; and,
// for the methods that force one, the outage and the requests lost
// across a forced rekey.
func connectCharts(runID string, ps paramSet, _ map[string][]result.Cell) []Chart {
	rows, cats := connectRows(ps)
	if len(rows) == 0 {
		return nil
	}
	desc := describeAll(rows[0].Params)
	slug := ps.key.Slug()
	var out []Chart
	setup, ok1 := barSeries("set-up", 0, rows, func(c *summary.ConnectSummary) summary.Figure { return c.Setup }, msFigure)
	hs, ok2 := barSeries("handshake", 1, rows, func(c *summary.ConnectSummary) summary.Figure { return c.Handshake }, msFigure)
	if ok1 || ok2 {
		out = append(out, Chart{
			ID: fmt.Sprintf("%s-connect-%s", runID, slug), Section: SectionConnect, Kind: KindBars,
			Title: "Connect time (" + desc + ")",
			Caption: "Time from the start of the method's set-up to the first request answered through the tunnel, in two " +
				"bars per method: the set-up (devices, daemons, what the method waits for) and the handshake after it (from " +
				"set-up returned to the first answer of a UDP request sent every 10 ms, starting the probe included), mean " +
				"over repetitions, each of which set the method up afresh, with its 95% confidence interval.",
			XLabel: "method", YLabel: "time (ms)", Categories: cats, Series: []Series{setup, hs},
		})
	}
	down := rows[0].Tests.Connect.Down
	for _, r := range rows {
		down = max(down, r.Tests.Connect.Down)
	}
	rec, ok3 := barSeries("underlay up → first answer", 0, rows, func(c *summary.ConnectSummary) summary.Figure { return c.Recovery }, msFigure)
	if ok3 {
		lost, _ := barSeries("requests lost", 2, rows, func(c *summary.ConnectSummary) summary.Figure { return c.Lost }, same)
		out = append(out, Chart{
			ID: fmt.Sprintf("%s-recover-%s", runID, slug), Section: SectionConnect, Kind: KindBars,
			Title: "Recovery time (" + desc + ")",
			Caption: fmt.Sprintf("While a UDP request goes through the tunnel every 10 ms, side a's underlay device is taken "+
				"down for %s s and up again: the time from the device up to the first answered request, mean over the "+
				"repetitions in which traffic came back, with its 95%% confidence interval.", summary.Num3(down)),
			XLabel: "method", YLabel: "time (ms)", Categories: cats, Series: []Series{rec},
		}, Chart{
			ID: fmt.Sprintf("%s-recover-lost-%s", runID, slug), Section: SectionConnect, Kind: KindBars,
			Title: "Requests lost across the underlay flap (" + desc + ")",
			Caption: fmt.Sprintf("UDP requests (one every 10 ms) never answered while side a's underlay was down for %s s and "+
				"until traffic flowed again, mean over repetitions with its 95%% confidence interval.", summary.Num3(down)),
			XLabel: "method", YLabel: "requests lost", Categories: cats, Series: []Series{lost},
		})
	}
	// The forced rekey, for the methods that force one only: a method
	// without it has no bar, not a zero.
	var rk []summary.Summary
	var rkCats []string
	for _, r := range rows {
		if r.Tests.Connect.RekeyOutage.N > 0 {
			rk, rkCats = append(rk, r), append(rkCats, r.Label)
		}
	}
	if len(rk) > 0 {
		outage, _ := barSeries("longest time without an answer", 1, rk, func(c *summary.ConnectSummary) summary.Figure { return c.RekeyOutage }, msFigure)
		lost, _ := barSeries("requests lost", 3, rk, func(c *summary.ConnectSummary) summary.Figure { return c.RekeyLost }, same)
		out = append(out, Chart{
			ID: fmt.Sprintf("%s-rekey-%s", runID, slug), Section: SectionConnect, Kind: KindBars,
			Title: "Outage across a forced rekey (" + desc + ")",
			Caption: "The longest time without an answer while a UDP request goes through the tunnel every 10 ms and the " +
				"method forces a rekey (WireGuard: a new handshake; IPsec: a new CHILD_SA), for the methods that can force " +
				"one; 10 ms means no request was late. Mean over repetitions with its 95% confidence interval.",
			XLabel: "method", YLabel: "time (ms)", Categories: rkCats, Series: []Series{outage},
		}, Chart{
			ID: fmt.Sprintf("%s-rekey-lost-%s", runID, slug), Section: SectionConnect, Kind: KindBars,
			Title: "Requests lost across a forced rekey (" + desc + ")",
			Caption: "UDP requests (one every 10 ms) never answered across a rekey the method forced, for the methods that " +
				"can force one. Mean over repetitions with its 95% confidence interval.",
			XLabel: "method", YLabel: "requests lost", Categories: rkCats, Series: []Series{lost},
		})
	}
	return out
}

// connectClaims: per parameter set, the method that connects fastest and
// the one that recovers fastest, where Welch's t-test tells them apart
// from the next; each rests on usable rows with an interval.
func connectClaims(c claimCtx) {
	for _, ps := range paramSets(c.rows) {
		rows, _ := connectRows(ps)
		desc := at(describe(ps.rows[0].Params, c.v))
		slug := ps.key.Slug()
		fastest(c, rows, func(cs *summary.ConnectSummary) summary.Figure { return cs.Total },
			c.link(fmt.Sprintf("%s-connect-%s", c.runID, slug)),
			"%s connects fastest%s: %s ms from the start of set-up to the first answer, against %s ms for %s, the next (Welch's t-test, %s confidence).",
			"%s and %s connect indistinguishably fast%s: %s against %s ms (Welch's t-test finds no difference at %s confidence).", desc)
		fastest(c, rows, func(cs *summary.ConnectSummary) summary.Figure { return cs.Recovery },
			c.link(fmt.Sprintf("%s-recover-%s", c.runID, slug)),
			"%s carries traffic again soonest after the underlay comes back%s: %s ms, against %s ms for %s, the next (Welch's t-test, %s confidence).",
			"%s and %s recover indistinguishably fast after the underlay comes back%s: %s against %s ms (Welch's t-test finds no difference at %s confidence).", desc)
	}
}

// fastest claims the row with the lowest figure, if two or more rows
// carry it with an interval.
func fastest(c claimCtx, rows []summary.Summary, get func(*summary.ConnectSummary) summary.Figure, fig, differ, same, desc string) {
	var good []summary.Summary
	for _, r := range rows {
		if goodFigure(r, get(r.Tests.Connect)) {
			good = append(good, r)
		}
	}
	if len(good) < 2 {
		return
	}
	best, next := good[0], good[1]
	if get(next.Tests.Connect).Mean < get(best.Tests.Connect).Mean {
		best, next = next, best
	}
	for _, r := range good[2:] {
		switch m := get(r.Tests.Connect).Mean; {
		case m < get(best.Tests.Connect).Mean:
			best, next = r, best
		case m < get(next.Tests.Connect).Mean:
			next = r
		}
	}
	fb, fn := msFigure(get(best.Tests.Connect)), msFigure(get(next.Tests.Connect))
	if welch(fb, fn) >= 1-ClaimConfidence {
		c.add(fmt.Sprintf(same, best.Label, next.Label, desc, withCI(fb), withCI(fn), pctText(100*ClaimConfidence)), fig, best, next)
		return
	}
	c.add(fmt.Sprintf(differ, best.Label, desc, withCI(fb), withCI(fn), next.Label, pctText(100*ClaimConfidence)), fig, best, next)
}
