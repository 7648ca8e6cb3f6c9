package lab

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBzImageVersion(t *testing.T) {
	v, err := parseBzImageVersion(bytes.NewReader(fakeBzImage("6.1.0-56-amd64", nil)))
	if err != nil {
		t.Fatal(err)
	}
	if v != "6.1.0-56-amd64" {
		t.Errorf("version = %q, want 6.1.0-56-amd64", v)
	}
}

func TestParseBzImageVersionRejects(t *testing.T) {
	good := fakeBzImage("6.1.0-56-amd64", nil)
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"empty", "too short", nil},
		{"elf", "no HdrS magic at 0x202", append([]byte("\x7fELF"), make([]byte, 1024)...)},
		{"old protocol", "older than 2.00", mutate(func(b []byte) []byte { b[hdrVersionOffset+1] = 1; return b })},
		{"null pointer", "pointer at 0x20e is zero", mutate(func(b []byte) []byte { b[hdrKernelVerOffset], b[hdrKernelVerOffset+1] = 0, 0; return b })},
		{"pointer past end", "past the end", mutate(func(b []byte) []byte { b[hdrKernelVerOffset+1] = 0x70; return b })},
		{"empty string", "string is empty", mutate(func(b []byte) []byte { b[0x300] = 0; return b })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseBzImageVersion(bytes.NewReader(tt.data))
			if !errors.Is(err, ErrNotBzImage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrNotBzImage mentioning %q", err, tt.want)
			}
		})
	}
}

func TestImageVersionNotBzImage(t *testing.T) {
	p := writeFile(t, t.TempDir(), "vmlinux", append([]byte("\x7fELF"), make([]byte, 4096)...))
	_, err := ImageVersion(p)
	want := "kernel " + p + " is not a bzImage (no HdrS magic at 0x202): pass a vmlinuz"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrNotBzImage) {
		t.Errorf("err does not wrap ErrNotBzImage")
	}
	if _, err := ImageVersion(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "pass a vmlinuz") {
		t.Errorf("missing image: err = %v, want one naming the fix", err)
	}
}

func TestFromPath(t *testing.T) {
	dir := t.TempDir()
	image := writeFile(t, dir, "boot/vmlinuz-6.1.0-56-amd64", fakeBzImage("6.1.0-56-amd64", nil))
	good := filepath.Join(dir, "lib/modules/6.1.0-56-amd64")
	other := filepath.Join(dir, "lib/modules/6.12.111+deb12-amd64")
	for _, d := range []string{good, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	k, err := FromPath(image, good+"/")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Kernel{Image: image, Modules: good, Version: "6.1.0-56-amd64"}); k != want {
		t.Errorf("FromPath = %+v, want %+v", k, want)
	}

	_, err = FromPath(image, other)
	for _, want := range []string{"6.12.111+deb12-amd64", "6.1.0-56-amd64", "pass the lib/modules/6.1.0-56-amd64 directory"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mismatched modules: err = %v, want it to mention %q", err, want)
		}
	}
	if _, err := FromPath(image, filepath.Join(dir, "nope")); err == nil {
		t.Error("missing modules dir: no error")
	}
	if _, err := FromPath(filepath.Join(good, "x"), good); err == nil {
		t.Error("missing image: no error")
	}
}
