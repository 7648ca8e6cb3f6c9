package serve

// The report reads what each testbed is (its reference class, whether
// its endpoints are this machine's) from package kind, which the testbed
// registry fills when it is linked, as it is in the tunbench binary.
import _ "github.com/tunbench/tunbench/internal/bed/registry"
