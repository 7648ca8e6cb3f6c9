package method

import "context"

// Native is the baseline: traffic over the underlay devices, no tunnel.
type Native struct{}

func (Native) Name() string           { return "native" }
func (Native) Implementation() string { return "underlay veth, no tunnel" }
func (Native) Overhead(string) int    { return 0 }
func (Native) Families() []string     { return []string{IPv4, IPv6} }

// Scale says native sets up one path (method.Scaler): it is the
// underlay itself, with no tunnel to repeat.
func (Native) Scale(string, Values) Scale {
	return Scale{Unit: "underlay path", Max: 1,
		Why: "native is the underlay itself, with no tunnel to repeat: it is measured once, the baseline beside the other methods' N"}
}

// Options declares the scenario options (see Option).
func (Native) Options() []Option { return nil }

// Listens declares no socket (method.Listener): native is the underlay
// itself.
func (Native) Listens(Values, string) []Listen { return nil }

// Requirements is empty: native needs nothing beyond the underlay. (The
// local testbed's veth pair, CONFIG_VETH, is the testbed's requirement,
// checked by the local preflight; an ssh host's underlay is its own
// device.)
func (Native) Requirements() []Requirement { return nil }

// Setup returns the underlay addresses; it creates nothing.
func (Native) Setup(_ context.Context, env *Env) (*Path, error) {
	return &Path{
		A:       env.A.Addr(env.Family),
		B:       env.B.Addr(env.Family),
		Devices: map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}},
		Variant: "veth",
	}, nil
}

// Teardown has nothing to remove.
func (Native) Teardown(context.Context, *Env) error { return nil }
