package result

import "testing"

func TestHostClassLabel(t *testing.T) {
	for _, tc := range []struct {
		h        Host
		label    string
		emulated bool
	}{
		{Host{}, "", false},
		{Host{Emulated: true}, "emulated", true}, // a record older than Class
		{Host{Class: ClassBareMetal}, "bare-metal", false},
		{Host{Class: ClassVM, Hypervisor: "KVM"}, "vm (KVM)", false},
		{Host{Class: ClassVM}, "vm", false},
		{Host{Class: ClassEmulated, Hypervisor: "QEMU TCG"}, "emulated (QEMU TCG)", true},
		{Host{Class: ClassEmulated, Hypervisor: "QEMU TCG", Emulated: true}, "emulated (QEMU TCG)", true},
		{Host{Class: ClassUnknown}, "unknown", false},
	} {
		if got := tc.h.ClassLabel(); got != tc.label {
			t.Errorf("%+v: label %q, want %q", tc.h, got, tc.label)
		}
		if got := tc.h.IsEmulated(); got != tc.emulated {
			t.Errorf("%+v: emulated %v, want %v", tc.h, got, tc.emulated)
		}
	}
}
