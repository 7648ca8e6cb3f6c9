package ebpf

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// TestGeneratedUpToDate regenerates the bpf2go output into a temporary
// directory, with the arguments of the go:generate line in doc.go, and
// fails when the committed tunnel_bpfel.go or tunnel_bpfel.o differ: the
// C source changed and "go generate ./internal/ebpf/" was not run.
func TestGeneratedUpToDate(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		testenv.SkipMissing(t, "clang not installed (apt-get install -y --no-install-recommends clang llvm libbpf-dev): cannot check the committed bpf2go output")
	}
	if _, err := os.Stat("/usr/include/bpf/bpf_helpers.h"); err != nil {
		testenv.SkipMissing(t, "libbpf headers not installed (apt-get install -y --no-install-recommends libbpf-dev): cannot check the committed bpf2go output")
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "//go:generate go tool bpf2go "
	var line string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, prefix) {
			line = strings.TrimPrefix(l, prefix)
		}
	}
	if line == "" {
		t.Fatal("doc.go has no go:generate line for bpf2go")
	}
	args, err := splitQuoted(line)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", append([]string{"tool", "bpf2go", "-output-dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GOPACKAGE=ebpf")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	for _, name := range []string{"tunnel_bpfel.go", "tunnel_bpfel.o"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("committed %s is stale against tunnel.c/tunnel.h: run go generate ./internal/ebpf/ and commit the result", name)
		}
	}
}

// splitQuoted splits a go:generate line into words, honouring double
// quotes (as go generate does).
func splitQuoted(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			inWord = true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, os.ErrInvalid
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
