package buildinfo

import (
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
