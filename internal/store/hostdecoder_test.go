package store

import (
	"database/sql"
	"encoding/json"
	"reflect"
	"testing"
	"time"

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

// TestParseStoredTime: the stored times' own parser gives what time.Parse
// gives, and leaves what it does not read to time.Parse.
func TestParseStoredTime(t *testing.T) {
	for _, v := range []string{"2025-03-14T09:26:53.589793238Z", "2024-02-29T23:59:59.000000001Z", "0001-01-01T00:00:00.000000000Z"} {
		got, ok := parseStoredTime(v)
		want, err := time.Parse(time.RFC3339Nano, v)
		if !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, %v; time.Parse %v, %v", v, got, ok, want, err)
		}
	}
	for _, v := range []string{"2025-02-30T00:00:00.000000000Z", "2025-13-01T00:00:00.000000000Z", "2025-03-14T09:26:53Z",
		"2025-03-14T09:26:53.589793238+02:00", "2025-03-14 09:26:53.589793238Z", "2025-03-14T09:26:5x.589793238Z"} {
		if got, ok := parseStoredTime(v); ok {
			t.Errorf("%s: read as %v, want it left to time.Parse", v, got)
		}
	}
	if got, err := parseTime(sql.NullString{String: "2025-03-14T09:26:53+02:00", Valid: true}); err != nil || !got.Equal(time.Date(2025, 3, 14, 7, 26, 53, 0, time.UTC)) {
		t.Errorf("an offset time: %v, %v", got, err)
	}
}
