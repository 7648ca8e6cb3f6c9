package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// NamespacePrefix starts the name of every namespace a run creates.
const NamespacePrefix = "tunbench-"

// DefaultRoot is where runs keep their private directories.
const DefaultRoot = "/run/tunbench"

var idPattern = regexp.MustCompile(`^[0-9a-f]{6}$`)

// NewID returns a fresh run identifier: six lowercase hex digits, short
// enough to fit device names (15 bytes) with room for a suffix.
func NewID() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("testbed: read random: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id looks like an identifier NewID returns.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// NamespaceName is the namespace of side ("a" or "b") of run id.
func NamespaceName(id, side string) string { return NamespacePrefix + id + "-" + side }

// DevicePrefix is the prefix of every device of run id, "tb<id>".
func DevicePrefix(id string) string { return "tb" + id }

// ParseNamespace returns the run id and side of a namespace a run created,
// or ok=false when name is not one of ours.
func ParseNamespace(name string) (id, side string, ok bool) {
	rest, found := strings.CutPrefix(name, NamespacePrefix)
	if !found {
		return "", "", false
	}
	id, side, found = strings.Cut(rest, "-")
	if !found || !ValidID(id) || (side != "a" && side != "b") {
		return "", "", false
	}
	return id, side, true
}

// RunOfDevice returns the run id of a device a run created ("tb<id>" or
// "tb<id>-..."), or "" when the name is not one of ours.
func RunOfDevice(name string) string {
	if len(name) < 8 || name[:2] != "tb" || !ValidID(name[2:8]) {
		return ""
	}
	if len(name) > 8 && name[8] != '-' {
		return ""
	}
	return name[2:8]
}

// SiteDir is the directory of site's endpoint of run id under root on its
// host.
func SiteDir(root, id, site string) string {
	if root == "" {
		root = DefaultRoot
	}
	return filepath.Join(root, id, site)
}
