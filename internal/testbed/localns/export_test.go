package localns

// What the tests (package localns_test) use of the package's insides.

// SplitCPUs is splitCPUs.
var SplitCPUs = splitCPUs

// ReleaseLock drops the run-directory lock, as the death of the process
// would: the tests simulate a killed run with it.
func (l *Local) ReleaseLock() { l.releaseLock() }
