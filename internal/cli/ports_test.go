package cli

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method/registry"
)

// TestSSHDocListsPorts keeps the table of docs/ssh.md's "Ports a run
// opens" equal to the methods' declarations (method.Listener) and the
// runner's load servers (go test ./internal/cli -run TestSSHDocListsPorts
// -update-docs rewrites it). That the declarations are true is checked
// by every method test that sets its method up (methodtest.Setup reads
// the sockets open in the namespaces).
func TestSSHDocListsPorts(t *testing.T) {
	generatedBlock(t, "../../docs/ssh.md", "ports", "TestSSHDocListsPorts", listensMarkdown(registry.Builtin()), "the ports table")
}

// TestMethodsOptionsListsPorts: "tunbench methods --options NAME" prints
// the sockets the method declares, with why one is not bound.
func TestMethodsOptionsListsPorts(t *testing.T) {
	code, out, stderr := run(t, "methods", "--options", "openvpn")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"Sockets a run opens", "openvpn (server)", "1194 (option port)", "underlay (the site's address)"} {
		if !strings.Contains(out, w) {
			t.Errorf("methods --options openvpn lacks %q:\n%s", w, out)
		}
	}
	code, out, _ = run(t, "methods", "--options", "wireguard-go")
	if code != 0 || !strings.Contains(out, "wildcard: 0.0.0.0 and ::") || !strings.Contains(out, "no address") {
		t.Errorf("methods --options wireguard-go: exit %d:\n%s", code, out)
	}
	code, out, _ = run(t, "methods", "--options", "native")
	if code != 0 || !strings.Contains(out, "native takes no options") || !strings.Contains(out, "none: native") {
		t.Errorf("methods --options native: exit %d:\n%s", code, out)
	}
}
