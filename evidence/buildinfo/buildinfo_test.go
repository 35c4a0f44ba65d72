package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

// In a test binary (or a checkout build) there is no module version: the
// answer is "(devel)"; a released build says vX.Y.Z. Never empty.
func TestVersionShape(t *testing.T) {
	v := Version()
	if v != "(devel)" && !strings.HasPrefix(v, "v") {
		t.Fatalf("Version() = %q, want (devel) or vX.Y.Z", v)
	}
}

// The build info's module version and VCS settings reach Build and its
// line: an installed release names its version, a clone build its
// revision, commit time and a modified tree; no build info is "(devel)",
// never an empty version.
func TestFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want Build
		line string
	}{
		{"installed at a version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rlbench/rlbench", Version: "v0.3.0"}},
			Build{Version: "v0.3.0", GoVersion: "go1.26.8"}, "v0.3.0 (go1.26.8)"},
		{"clone build, modified", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1-0.20261205100000-0123456789ab+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-05T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			Build{Version: "v0.3.1-0.20261205100000-0123456789ab+dirty", Revision: rev, Time: "2026-12-05T10:00:00Z", Modified: true, GoVersion: "go1.26.8"},
			"v0.3.1-0.20261205100000-0123456789ab+dirty (revision " + rev + ", 2026-12-05T10:00:00Z, modified; go1.26.8)"},
		{"clone build, clean, (devel)", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}},
			Build{Version: "(devel)", Revision: rev, GoVersion: "go1.26.8"}, "(devel) (revision " + rev + "; go1.26.8)"},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			Build{Version: "(devel)", GoVersion: "go1.26.8"}, "(devel) (no VCS revision recorded: go run, go test or -buildvcs=false; go1.26.8)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FromBuildInfo(c.bi)
			if got != c.want {
				t.Fatalf("FromBuildInfo = %+v, want %+v", got, c.want)
			}
			if s := got.String(); s != c.line {
				t.Fatalf("String() = %q, want %q", s, c.line)
			}
		})
	}
	if b := FromBuildInfo(nil); b.Version != "(devel)" || b.GoVersion == "" {
		t.Fatalf("FromBuildInfo(nil) = %+v, want (devel) and the running toolchain", b)
	}
}
