package sshtunnel

import "time"

// SetInitTimeout sets the bound of each set-up wait and returns a
// function restoring it.
func SetInitTimeout(d time.Duration) func() {
	old := initTimeout
	initTimeout = d
	return func() { initTimeout = old }
}
