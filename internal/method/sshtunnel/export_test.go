package sshtunnel

// NewPinningAnotherKey returns the method pinning, in a's known_hosts, a
// host key other than b's.
func NewPinningAnotherKey() *SSHTunnel {
	m := New()
	m.pinOther = true
	return m
}
