package ops

import "runtime/debug"

// Version is the module's version and the revision it was built from, as
// the Go toolchain recorded them in the binary (`deskbot version`):
// "(devel)" for a build from a checkout, a tag for `go install ...@v1.2.3`;
// the revision is there when the build could read the repository (not with
// -buildvcs=false).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "deskbot: no build information in this binary"
	}
	v := "deskbot " + info.Main.Version
	if v == "deskbot " {
		v += "(unknown)"
	}
	var rev, at string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		v += ", revision unknown (built without version control information)"
	default:
		v += ", revision " + rev
		if dirty {
			v += " with uncommitted changes"
		}
		if at != "" {
			v += " of " + at
		}
	}
	return v + ", " + info.GoVersion
}
