package registry_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method/registry"
)

// The install commands a family's Requirement.Install may hold.
var (
	goInstallPin    = regexp.MustCompile(`go install(?: -[a-z]+)* ((?:[^\s@"']+@[^\s"']+\s*)+)`)
	cargoInstallPin = regexp.MustCompile(`cargo install (\S+) --version (\S+)`)
	aptInstall      = regexp.MustCompile(`apt-get install -y --no-install-recommends ((?:[a-z0-9.+-]+\s*)+)`)
)

// TestEveryProgramIsInstalled: the programs a method family declares in
// its folder (Requirement.Program with its Debian Package or its Install
// command) are what "scripts/install.sh test" installs, so a method added
// with a new daemon cannot pass its own tests on a developer's machine
// and fail on a fresh one. A Debian package is in install.sh's list, or
// essential or of priority required, or a dependency of a listed package; a go or cargo install
// pin appears in install.sh with the same module and version; an apt-get
// install command names listed packages.
func TestEveryProgramIsInstalled(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "install.sh"), "--list", "test").Output()
	if err != nil {
		t.Fatalf("scripts/install.sh --list test: %v", err)
	}
	listed := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		listed[p] = true
	}
	installed := func(pkg string) bool {
		if listed[pkg] {
			return true
		}
		// Essential or priority required: every Debian system has it.
		if f, err := exec.Command("dpkg-query", "-W", "-f=${Essential} ${Priority}", pkg).Output(); err == nil && (strings.HasPrefix(string(f), "yes ") || strings.HasSuffix(string(f), " required")) {
			return true
		}
		for p := range listed {
			deps, err := exec.Command("dpkg-query", "-W", "-f=${Pre-Depends}, ${Depends}", p).Output()
			if err != nil {
				continue
			}
			for _, d := range strings.Split(string(deps), ",") {
				for _, alt := range strings.Split(d, "|") {
					if f := strings.Fields(alt); len(f) > 0 && strings.SplitN(f[0], ":", 2)[0] == pkg {
						return true
					}
				}
			}
		}
		return false
	}
	for _, m := range registry.Builtin().All() {
		for _, r := range m.Requirements() {
			if r.Program == "" {
				continue
			}
			if r.Package != "" && !installed(r.Package) {
				t.Errorf("%s: program %s: Debian package %s is neither in scripts/install.sh's test list, nor essential or required, nor a dependency of a listed package: add it to test_pkgs", m.Name(), r.Program, r.Package)
			}
			if r.Install == "" {
				continue
			}
			checked := false
			for _, g := range goInstallPin.FindAllStringSubmatch(r.Install, -1) {
				for _, pin := range strings.Fields(g[1]) {
					checked = true
					if !strings.Contains(string(script), pin) {
						t.Errorf("%s: program %s: install pin %s is not in scripts/install.sh (it builds another version, or none)", m.Name(), r.Program, pin)
					}
				}
			}
			for _, c := range cargoInstallPin.FindAllStringSubmatch(r.Install, -1) {
				checked = true
				if !strings.Contains(string(script), c[0]) {
					t.Errorf("%s: program %s: %q is not in scripts/install.sh", m.Name(), r.Program, c[0])
				}
			}
			for _, a := range aptInstall.FindAllStringSubmatch(r.Install, -1) {
				for _, pkg := range strings.Fields(a[1]) {
					checked = true
					if !installed(pkg) {
						t.Errorf("%s: program %s: its install command's package %s is not in scripts/install.sh's test list", m.Name(), r.Program, pkg)
					}
				}
			}
			if !checked {
				t.Errorf("%s: program %s: install command %q is none of go install MODULE@VERSION, cargo install NAME --version V, apt-get install -y --no-install-recommends PKG...", m.Name(), r.Program, r.Install)
			}
		}
	}
}
