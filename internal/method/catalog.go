package method

// Catalog is a registry as the scenario's validation and the plan see
// it (scenario.Catalog, scenario.UnderlayCatalog,
// scenario.TestbedCatalog, scenario.TestsCatalog, scenario.ScaleCatalog,
// scenario.SpreadCatalog and scenario.GrowCatalog).
type Catalog struct{ R *Registry }

// Names lists the registered methods.
func (c Catalog) Names() []string { return c.R.Names() }

// Overhead is the bytes per packet name adds for family.
func (c Catalog) Overhead(name, family string) int {
	m, err := c.R.Get(name)
	if err != nil {
		return 0
	}
	return m.Overhead(family)
}

// Families lists the families name carries.
func (c Catalog) Families(name string) []string {
	m, err := c.R.Get(name)
	if err != nil {
		return nil
	}
	return m.Families()
}

// CheckOptions checks name's options against its declarations.
func (c Catalog) CheckOptions(name string, opts map[string]string) error {
	m, err := c.R.Get(name)
	if err != nil {
		return err
	}
	_, err = ParseOptions(m, opts)
	return err
}

// CheckTests checks the scenario's load against what name carries with
// opts (TestChecker; scenario.TestsCatalog). The options were checked
// on their own before (CheckOptions): an error there leaves this nil.
func (c Catalog) CheckTests(name string, opts map[string]string, tests, families []string, latencyTool string, mss []int, congestion []string) error {
	m, err := c.R.Get(name)
	if err != nil {
		return nil
	}
	tc, ok := m.(TestChecker)
	if !ok {
		return nil
	}
	vals, err := ParseOptions(m, opts)
	if err != nil {
		return nil
	}
	return tc.CheckTests(vals, Load{Tests: tests, Families: families, LatencyTool: latencyTool, MSS: mss, CongestionControl: congestion})
}

// Tunnels is how many tunnels name sets up in family with opts, what one
// is and what bounds it (Scaler; scenario.ScaleCatalog). Options that do
// not parse give one tunnel: CheckOptions reports them.
func (c Catalog) Tunnels(name, family string, opts map[string]string) (max int, unit, why string) {
	m, err := c.R.Get(name)
	if err != nil {
		return 1, "tunnel", ""
	}
	vals, err := ParseOptions(m, opts)
	if err != nil {
		return 1, "tunnel", ""
	}
	s := ScaleOf(m, family, vals)
	return s.Max, s.Unit, s.Why
}

// Carries reports whether every one of name's tunnels in family with
// opts carries load as the measured one does (Scale.Carries;
// scenario.SpreadCatalog), and what one tunnel is.
func (c Catalog) Carries(name, family string, opts map[string]string) (bool, string) {
	m, err := c.R.Get(name)
	if err != nil {
		return false, "tunnel"
	}
	vals, err := ParseOptions(m, opts)
	if err != nil {
		return false, "tunnel"
	}
	s := ScaleOf(m, family, vals)
	return s.Carries, s.Unit
}

// Grows reports whether name can add one more tunnel to a running
// set-up (Grower; scenario.GrowCatalog), what the reconf test does.
func (c Catalog) Grows(name string) bool {
	m, err := c.R.Get(name)
	if err != nil {
		return false
	}
	_, ok := m.(Grower)
	return ok
}

// TunnelCost is the estimated set-up and teardown of one of name's
// tunnels in family with opts, in seconds (Scale.TunnelCost;
// scenario.TunnelCostCatalog).
func (c Catalog) TunnelCost(name, family string, opts map[string]string) float64 {
	m, err := c.R.Get(name)
	if err != nil {
		return DefaultTunnelCost.Seconds()
	}
	vals, err := ParseOptions(m, opts)
	if err != nil {
		return DefaultTunnelCost.Seconds()
	}
	return ScaleOf(m, family, vals).TunnelCost().Seconds()
}

// Underlay is the family of the underlay addresses name needs to carry
// family (scenario.UnderlayCatalog).
func (c Catalog) Underlay(name, family string) string {
	m, err := c.R.Get(name)
	if err != nil {
		return family
	}
	return UnderlayFamily(m, family)
}

// Testbeds are the testbeds name runs on, nil for every one
// (scenario.TestbedCatalog).
func (c Catalog) Testbeds(name string) ([]string, string) {
	m, err := c.R.Get(name)
	if err != nil {
		return nil, ""
	}
	return Testbeds(m)
}
