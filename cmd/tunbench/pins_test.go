package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// The files where the repository pins what a fresh machine installs.
var pinFiles = []string{"Makefile", ".ci/run", "scripts/*.sh", "README.md", "docs/*.md"}

var (
	// go install|run|get PATH@VERSION
	goPin = regexp.MustCompile(`go (?:install|run|get)(?: -[a-z]+)* ([^\s@"']+)@([^\s"']+)`)
	// a variable holding PATH@VERSION, as install.sh keeps wireguard-go's
	goVarPin = regexp.MustCompile(`(?m)^\s*[A-Z_]+_MODULE=([^\s@]+)@(\S+)`)
	// cargo install NAME --version VERSION
	cargoPin = regexp.MustCompile(`cargo install (\S+)((?: --?[a-z-]+(?: [^-\s]\S*)?)*)`)
)

// TestPinsAreModuleVersions fails when a tool or module the repository
// pins is named by a tag, a branch or "latest" rather than a version its
// registry serves: the Go module proxy refuses tag names such as
// staticcheck's "2025.1.1" (its module version is v0.6.1), which once broke
// "make test" on a fresh machine while a developer's cached binary hid it.
func TestPinsAreModuleVersions(t *testing.T) {
	for line, want := range map[string]bool{
		"go install honnef.co/go/tools/cmd/staticcheck@2025.1.1":                           false,
		"go install golang.org/x/tools/gopls@latest":                                       false,
		"go install honnef.co/go/tools/cmd/staticcheck@v0.8.2":                             true,
		"GOBIN=x go install golang.zx2c4.com/wireguard@v0.0.0-20260522210424-ecfc5a8d5446": true,
	} {
		m := goPin.FindStringSubmatch(line)
		if m == nil || moduleVersion(m[2]) != want {
			t.Errorf("%q: match %q, module version %v; want %v", line, m, m != nil && moduleVersion(m[2]), want)
		}
	}
	root := filepath.Join("..", "..")
	found := 0
	for _, pattern := range pinFiles {
		paths, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			for _, re := range []*regexp.Regexp{goPin, goVarPin} {
				for _, m := range re.FindAllStringSubmatch(string(data), -1) {
					found++
					if !moduleVersion(m[2]) {
						t.Errorf("%s: %s@%s: not a module version (vMAJOR.MINOR.PATCH or a pseudo-version); the module proxy refuses tag names and @latest floats", rel, m[1], m[2])
					}
				}
			}
			for _, m := range cargoPin.FindAllStringSubmatch(string(data), -1) {
				found++
				flags := m[2]
				v := regexp.MustCompile(`--version (\S+)`).FindStringSubmatch(flags)
				if v == nil || !semver.IsValid("v"+strings.TrimPrefix(v[1], "=")) {
					t.Errorf("%s: cargo install %s: pin it with --version MAJOR.MINOR.PATCH", rel, m[1])
				}
				if !strings.Contains(flags, "--locked") {
					t.Errorf("%s: cargo install %s: add --locked, or its dependencies float", rel, m[1])
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("found no pins at all: the patterns no longer match the install scripts")
	}
}

// moduleVersion reports whether v is a full module version: vX.Y.Z, a
// pre-release or a pseudo-version, not "latest", a branch or a tag name.
func moduleVersion(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == strings.TrimSuffix(v, "+incompatible")
}

// TestToolsAreRequired checks go.mod: every tool directive's module is
// required at a module version, so "go tool NAME" fetches that version.
func TestToolsAreRequired(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tool) == 0 {
		t.Fatal("go.mod has no tool directive: the lint step needs go tool staticcheck")
	}
	for _, tool := range f.Tool {
		ok := false
		for _, r := range f.Require {
			if strings.HasPrefix(tool.Path, r.Mod.Path+"/") || tool.Path == r.Mod.Path {
				ok = semver.IsValid(r.Mod.Version)
			}
		}
		if !ok {
			t.Errorf("go.mod: tool %s has no require at a module version", tool.Path)
		}
	}
}
