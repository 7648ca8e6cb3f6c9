package testbed

import (
	"context"
	"fmt"
)

// Testbed is where the cells of a run happen: it builds, for each cell, the
// pair of endpoints the cell runs between. The runner talks to this
// interface only, so the local namespaces and remote ssh hosts (and later
// other engines) plug in without touching methods or load drivers.
type Testbed interface {
	// Name is the testbed's kind, recorded with the run: "local", "ssh".
	Name() string
	// Pair builds the endpoints of one cell. Closing the pair kills what
	// was started on them and removes what the pair itself created.
	Pair(ctx context.Context, spec Spec) (*Pair, error)
}

// Spec is what a cell asks of its endpoints.
type Spec struct {
	// UnderlayMTU is the MTU of the underlay; 0 leaves it as it is.
	UnderlayMTU int
	// Pin splits the CPUs between the two sides (local testbed).
	Pin bool
	// A and B name the sites (ssh testbed); empty picks the testbed's
	// first two.
	A, B string
	// Network is where the endpoints live on their hosts: "" the host's
	// own network stack, NetworkPod an ordinary pod's network (testbed
	// kubernetes, for the method pod-network).
	Network string
}

// NetworkPod places a cell's endpoints in ordinary pods of a cluster, on
// its pod network, rather than in the nodes' own network stacks.
const NetworkPod = "pod"

// errNoPodNetwork refuses a cell that asks for pods on a testbed without
// them.
func errNoPodNetwork(bed string) error {
	return fmt.Errorf("testbed: the %s testbed has no pod network: the method pod-network runs on testbed kubernetes", bed)
}

// CheckNetwork returns nil when spec asks for the host's own network, and
// the error that says which testbed has pods otherwise; testbeds without
// pods call it from Pair.
func CheckNetwork(bed string, spec Spec) error {
	if spec.Network != "" {
		return errNoPodNetwork(bed)
	}
	return nil
}

// Pair is the two endpoints of one cell: a sends, b receives.
type Pair struct {
	A, B *Endpoint
	// Dir identifies the pair's private state (Env.Dir): the local run
	// directory, or a directory of the pair on side a's host.
	Dir string
	// Notes describe where the pair lives beyond its hosts (testbed
	// kubernetes: the pods and nodes); the runner records them with the
	// cell (Meta.Extra).
	Notes map[string]string
	close func() error
}

// NewPair returns a pair whose Close calls closer.
func NewPair(a, b *Endpoint, dir string, closer func() error) *Pair {
	return &Pair{A: a, B: b, Dir: dir, close: closer}
}

// Endpoints returns both endpoints, a first.
func (p *Pair) Endpoints() []*Endpoint { return []*Endpoint{p.A, p.B} }

// Close tears the pair down; safe to call more than once.
func (p *Pair) Close() error {
	if p == nil || p.close == nil {
		return nil
	}
	c := p.close
	p.close = nil
	return c()
}
