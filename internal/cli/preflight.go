package cli

import (
	"fmt"
	"strings"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
)

// skipUnavailable drops from s, for --skip-unavailable, the methods this
// machine cannot carry on testbed tb (its Unavailable; none on the remote
// testbeds, whose hosts are checked when the testbed opens), recording
// each with its reason in s.Skipped (the stored scenario keeps them, and
// the report names them). A scenario none of whose methods can run here
// is refused with every reason.
func skipUnavailable(s scenario.Scenario, reg *method.Registry, tb bed.Entry, env bed.Env) (scenario.Scenario, error) {
	if tb.Unavailable == nil {
		return s, nil
	}
	skip := tb.Unavailable(s, reg, env)
	if len(skip) == 0 {
		return s, nil
	}
	if len(skip) == len(s.Methods) {
		msgs := make([]string, len(skip))
		for i, k := range skip {
			msgs[i] = fmt.Sprintf("  method %s: %s", k.Method, k.Reason)
		}
		return s, fmt.Errorf("cannot run here: --skip-unavailable leaves no method to measure:\n%s", strings.Join(msgs, "\n"))
	}
	return s.SkipMethods(skip), nil
}
