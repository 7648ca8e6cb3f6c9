package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// TestHostDecoderCopies: runs read together decode each distinct host
// record once, yet every run's Host is its own: changing one run's maps
// or NIC changes no other's. The test fails when Host gains a field of a
// kind the decoder would share (a map, slice or pointer it does not copy).
func TestHostDecoderCopies(t *testing.T) {
	h := newRun("a", t0).Host
	h.NIC = &result.NIC{Dev: "eth0", Driver: "virtio_net", MTU: 1500}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	decode := hostDecoder()
	first, err := decode(string(b))
	if err != nil {
		t.Fatal(err)
	}
	second, err := decode(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, h) || !reflect.DeepEqual(second, h) {
		t.Fatalf("decoded %+v and %+v, want %+v", first, second, h)
	}
	second.Tools["iperf3"], second.Sysctls["net.core.rmem_max"], second.NIC.MTU = "changed", "changed", 9000
	if !reflect.DeepEqual(first, h) {
		t.Errorf("changing the second host changed the first: %+v", first)
	}
	typ := reflect.TypeFor[result.Host]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch f.Type.Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
			if f.Name != "Tools" && f.Name != "Sysctls" && f.Name != "NIC" {
				t.Errorf("Host.%s is a %s: hostDecoder must copy it", f.Name, f.Type.Kind())
			}
		}
	}
	if _, err := decode("{"); err == nil {
		t.Error("a malformed host record decoded")
	}
}
