package hostinfo

import "runtime/debug"

// tunbenchVersion is the main module's version when the binary was built
// from a tagged module ("go install ...@v1.2.3"), else the VCS revision
// (12 hex digits, "-dirty" when the tree had changes), else "devel".
func tunbenchVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev + dirty
}
