package summary

import (
	"fmt"
	"slices"
	"strings"
)

// SiteMatrix is one method's throughput between every measured ordered
// pair of sites of an ssh testbed (seed 000's multi-cloud picture): row
// From sends to column To. Cells not measured are nil.
type SiteMatrix struct {
	Label string `json:"label"`
	// Params names the other parameters shared by the matrix's cells.
	Params string       `json:"params,omitempty"`
	Sites  []string     `json:"sites"`
	Gbps   [][]*float64 `json:"throughput_gbps"`
}

// SiteMatrices groups rows measured between sites into one matrix per
// method and parameter set, sites in order of first appearance.
func SiteMatrices(rows []Summary) []SiteMatrix {
	type group struct {
		m     *SiteMatrix
		cells map[[2]string]float64
	}
	var order []string
	groups := map[string]*group{}
	for _, r := range rows {
		if r.Params.SiteA == "" || r.Throughput.N == 0 {
			continue
		}
		p := r.Params
		p.SiteA, p.SiteB = "", ""
		ps := []string{p.Family, fmt.Sprintf("MTU %d", p.UnderlayMTU), Streams(p.Streams)}
		if p.Tunnels > 1 {
			ps = append(ps, Tunnels(p.Tunnels))
		}
		params := strings.Join(append(ps, extraParams(p)...), ", ")
		key := r.Label + "\x00" + params
		g := groups[key]
		if g == nil {
			g = &group{m: &SiteMatrix{Label: r.Label, Params: params}, cells: map[[2]string]float64{}}
			groups[key] = g
			order = append(order, key)
		}
		for _, s := range []string{r.Params.SiteA, r.Params.SiteB} {
			if !slices.Contains(g.m.Sites, s) {
				g.m.Sites = append(g.m.Sites, s)
			}
		}
		g.cells[[2]string{r.Params.SiteA, r.Params.SiteB}] = r.Throughput.Mean
	}
	var out []SiteMatrix
	for _, k := range order {
		g := groups[k]
		n := len(g.m.Sites)
		g.m.Gbps = make([][]*float64, n)
		for i, a := range g.m.Sites {
			g.m.Gbps[i] = make([]*float64, n)
			for j, b := range g.m.Sites {
				if v, ok := g.cells[[2]string{a, b}]; ok {
					g.m.Gbps[i][j] = &v
				}
			}
		}
		out = append(out, *g.m)
	}
	return out
}

// writeSiteMatrices prints each method's site × site throughput.
func writeSiteMatrices(b *strings.Builder, rows []Summary) {
	ms := SiteMatrices(rows)
	if len(ms) == 0 {
		return
	}
	b.WriteString("\nsite × site, Gbit/s (mean; row sends to column):\n")
	for _, m := range ms {
		fmt.Fprintf(b, "\n%s (%s)\n", m.Label, m.Params)
		w := 6
		for _, s := range m.Sites {
			w = max(w, len(s)+1)
		}
		fmt.Fprintf(b, "  %-*s", w, "")
		for _, s := range m.Sites {
			fmt.Fprintf(b, "%*s", w+2, s)
		}
		b.WriteString("\n")
		for i, s := range m.Sites {
			fmt.Fprintf(b, "  %-*s", w, s)
			for j := range m.Sites {
				switch v := m.Gbps[i][j]; {
				case i == j:
					fmt.Fprintf(b, "%*s", w+2, "·")
				case v == nil:
					fmt.Fprintf(b, "%*s", w+2, Missing)
				default:
					fmt.Fprintf(b, "%*.2f", w+2, *v)
				}
			}
			b.WriteString("\n")
		}
	}
}
