// Package buildinfo says which rlbench this binary is: the module version
// recorded by the Go toolchain (runtime/debug.ReadBuildInfo), stamped into
// the evidence it writes (evidence.FileState.Version, the run manifest) and
// shown by `rlbench version`. It is a leaf: it imports no rlbench package.
package buildinfo

import "runtime/debug"

// Version is rlbench's module version from the build info, e.g. "v0.3.0"
// for `go install github.com/rlbench/rlbench/cmd/rlbench@v0.3.0`, and
// "(devel)" in a checkout or when the binary carries no build info.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
