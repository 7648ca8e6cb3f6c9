package ebpftun

import (
	"context"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// SetupEBPFSide sets m up on ep alone, toward its peer (interop tests put a
// kernel device on the other side).
func SetupEBPFSide(m EBPF, env *method.Env, ep *testbed.Endpoint) error {
	p, err := m.params(env)
	if err != nil {
		return err
	}
	_, err = m.setupSide(context.Background(), env, ep, p)
	return err
}

// TeardownEBPFSide removes what SetupEBPFSide made.
func TeardownEBPFSide(m EBPF, env *method.Env, ep *testbed.Endpoint) error {
	return m.teardownSide(context.Background(), env, ep)
}

// FillerRules exposes the scale measurement's filler rules.
var FillerRules = fillerRules

// ClsactUndoName names the journal entry of a side's tc programs on dev.
var ClsactUndoName = clsactUndo

// PinDir is where side ep pins its maps.
var PinDir = ebpfPinDir
