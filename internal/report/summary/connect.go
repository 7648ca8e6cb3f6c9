package summary

import (
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// ConnectSummary is the connect and recover tests over the ok
// repetitions of one cell (docs/measurement.md); figures not measured
// have N == 0 and are omitted from JSON.
type ConnectSummary struct {
	// Connect: the method's set-up, the handshake after it (first answer
	// of the probe), their sum, and the harness's own part of the
	// handshake (starting the probe).
	Setup     Figure `json:"connect_setup_s,omitzero"`
	Handshake Figure `json:"connect_handshake_s,omitzero"`
	Total     Figure `json:"connect_total_s,omitzero"`
	Harness   Figure `json:"connect_harness_s,omitzero"`
	// Recover: the underlay's down time, the time from up to the first
	// answer, the requests lost and the longest time without an answer;
	// Recovered counts the repetitions in which traffic came back.
	Down      float64 `json:"recover_down_s,omitempty"`
	Recovery  Figure  `json:"recover_s,omitzero"`
	Lost      Figure  `json:"recover_lost_requests,omitzero"`
	Outage    Figure  `json:"recover_outage_s,omitzero"`
	Recovered int     `json:"recover_recovered,omitempty"`
	// Rekey: the stream across a forced rekey, for methods that can.
	RekeyHow    string `json:"rekey_how,omitempty"`
	RekeyOutage Figure `json:"rekey_outage_s,omitzero"`
	RekeyLost   Figure `json:"rekey_lost_requests,omitzero"`
}

// Units of the connect and recover figures.
const (
	UnitSeconds  = "s"
	UnitRequests = "requests"
)

// summarizeConnect summarises the connect and recover records of reps;
// nil when there are none.
func summarizeConnect(reps []result.Cell) *ConnectSummary {
	var setup, hs, total, harness, rec, lost, outage, rko, rkl []float64
	cs := &ConnectSummary{}
	seen := false
	for _, c := range reps {
		if c.Status != result.StatusOK {
			continue
		}
		if k := c.Connect; k != nil {
			seen = true
			setup, hs = append(setup, k.Setup), append(hs, k.Handshake)
			total, harness = append(total, k.Total), append(harness, k.Harness)
		}
		if r := c.Recover; r != nil {
			seen = true
			cs.Down = c.Params.RecoverDown
			if r.Recovered {
				cs.Recovered++
				rec = append(rec, r.Recovery)
			}
			lost, outage = append(lost, float64(r.Lost)), append(outage, r.Outage)
			if k := r.Rekey; k != nil && k.Error == "" {
				cs.RekeyHow = k.How
				rko, rkl = append(rko, k.Outage), append(rkl, float64(k.Lost))
			}
		}
	}
	if !seen {
		return nil
	}
	cs.Setup, cs.Handshake = FigureOf(UnitSeconds, setup), FigureOf(UnitSeconds, hs)
	cs.Total, cs.Harness = FigureOf(UnitSeconds, total), FigureOf(UnitSeconds, harness)
	cs.Recovery, cs.Lost, cs.Outage = FigureOf(UnitSeconds, rec), FigureOf(UnitRequests, lost), FigureOf(UnitSeconds, outage)
	cs.RekeyOutage, cs.RekeyLost = FigureOf(UnitSeconds, rko), FigureOf(UnitRequests, rkl)
	return cs
}

// writeConnectTable writes the connect and recover table when a row has
// them.
func writeConnectTable(b *strings.Builder, rows []Summary, v Varying) error {
	var grid []GridRow
	ms := func(f Figure) Figure {
		f.Mean *= 1000
		return f
	}
	for _, r := range rows {
		t := r.Tests
		if t == nil || t.Connect == nil {
			continue
		}
		c := t.Connect
		grid = append(grid, GridRow{Cells: []GridCell{{Text: RowName(r, v)},
			num(ms(c.Setup), 1, false), num(ms(c.Handshake), 1, false), num(ms(c.Total), 1, false),
			num(ms(c.Recovery), 1, false), num(c.Lost, 0, false), num(ms(c.Outage), 0, false),
			num(ms(c.RekeyOutage), 1, false), num(c.RekeyLost, 0, false)}})
	}
	if len(grid) == 0 {
		return nil
	}
	b.WriteString("\nconnect and recover: set-up, first answer; underlay down and up, forced rekey (a UDP request every 10 ms)\n")
	cols := []GridColumn{{Header: "method", Left: true}, {Header: "set-up ms"}, {Header: "handshake ms"}, {Header: "connect ms"},
		{Header: "recover ms"}, {Header: "lost"}, {Header: "outage ms"}, {Header: "rekey outage ms"}, {Header: "rekey lost"}}
	return RenderGrid(b, cols, grid)
}
