package sshtunnel

import "time"

// SetInitTimeout sets the bound of each set-up wait and returns a
// function restoring it.
func SetInitTimeout(d time.Duration) func() {
	old := initTimeout
	initTimeout = d
	return func() { initTimeout = old }
}

// NewPinningAnotherKey returns the method pinning, in a's known_hosts, a
// host key other than b's.
func NewPinningAnotherKey() *SSHTunnel {
	m := New()
	m.pinOther = true
	return m
}
