package sshtunnel

// NewPinningAnotherKey returns the method pinning, in a's known_hosts, a
// host key other than b's.
func NewPinningAnotherKey() *SSHTunnel {
	m := New()
	m.pinOther = true
	return m
}

// NewWithUnits returns the method using tun units a and b.
func NewWithUnits(a, b int) *SSHTunnel {
	m := New()
	m.units = [2]int{a, b}
	return m
}
