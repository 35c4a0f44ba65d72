// Package buildinfo says which rlbench this binary is: the module version
// and the version control revision recorded by the Go toolchain
// (runtime/debug.ReadBuildInfo; the settings vcs.revision, vcs.time and
// vcs.modified are documented in `go help buildinfo` and runtime/debug's
// BuildSetting), stamped into the evidence it writes
// (evidence.FileState.Version, the run manifest) and shown by
// `rlbench --version`. It is a leaf: it imports no rlbench package.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is rlbench's module version from the build info, e.g. "v0.3.0"
// for `go install github.com/rlbench/rlbench/cmd/rlbench@v0.3.0`, and
// "(devel)" in a checkout or when the binary carries no build info.
func Version() string { return Read().Version }

// Build is what the Go toolchain recorded about this binary.
type Build struct {
	// Version is the main module's version: "v0.3.0" for `go install
	// ...@v0.3.0`, a pseudo-version (v0.0.0-yyyymmddhhmmss-abcdefabcdef)
	// for `@latest` of an untagged commit, one with "+dirty" for a build
	// of a modified clone (Go 1.24 and later), "(devel)" when none was
	// recorded (`go run`, `go test`, a build outside a module).
	Version string
	// Revision is the VCS commit the binary was built from (vcs.revision,
	// a full git hash), "" when not recorded: only `go build` and `go
	// install` inside a clone stamp it (not `go run`, `go test`,
	// -buildvcs=false, nor `go install MODULE@VERSION`, whose version
	// names the commit instead).
	Revision string
	// Time is the commit time of Revision (vcs.time, RFC 3339 in UTC), ""
	// when not recorded.
	Time string
	// Modified is true when the work tree had uncommitted changes at build
	// time (vcs.modified=true).
	Modified bool
	// GoVersion is the toolchain that built the binary, e.g. "go1.26.8".
	GoVersion string
}

// Read returns the running binary's Build (runtime/debug.ReadBuildInfo).
func Read() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts a Build from bi; a nil bi (a binary without build
// info) gives Version "(devel)" and the running toolchain's GoVersion.
func FromBuildInfo(bi *debug.BuildInfo) Build {
	b := Build{Version: "(devel)", GoVersion: runtime.Version()}
	if bi == nil {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one line `rlbench --version` prints after "rlbench
// version ": the module version, then the revision, its commit time and
// whether the tree was modified, then the toolchain, e.g.
//
//	v0.3.0 (go1.26.8)
//	(devel) (revision 0123abcd..., 2026-12-05T10:00:00Z, modified; go1.26.8)
//	(devel) (no VCS revision recorded: go run, go test or -buildvcs=false; go1.26.8)
func (b Build) String() string {
	var parts []string
	switch {
	case b.Revision != "":
		parts = append(parts, "revision "+b.Revision)
		if b.Time != "" {
			parts = append(parts, b.Time)
		}
		if b.Modified {
			parts = append(parts, "modified")
		}
	case b.Version == "(devel)":
		parts = append(parts, "no VCS revision recorded: go run, go test or -buildvcs=false")
	}
	detail := b.GoVersion
	if len(parts) > 0 {
		detail = strings.Join(parts, ", ") + "; " + b.GoVersion
	}
	return b.Version + " (" + detail + ")"
}
