package testbed_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/testbed"
)

func TestNames(t *testing.T) {
	id := testbed.NewID()
	if !testbed.ValidID(id) {
		t.Fatalf("NewID() = %q, not valid", id)
	}
	ns := testbed.NamespaceName(id, "a")
	gotID, side, ok := testbed.ParseNamespace(ns)
	if !ok || gotID != id || side != "a" {
		t.Fatalf("ParseNamespace(%q) = %q, %q, %v", ns, gotID, side, ok)
	}
	for _, other := range []string{"tunbench", "tunbench-xyz-a", "tunbench-abcdef-c", "foo-abcdef-a", "tunbench-abcdef"} {
		if _, _, ok := testbed.ParseNamespace(other); ok {
			t.Errorf("ParseNamespace(%q) claimed a namespace that is not ours", other)
		}
	}
	if len(testbed.DevicePrefix(id)+"-vx") > 15 {
		t.Errorf("device names too long for IFNAMSIZ")
	}
}
