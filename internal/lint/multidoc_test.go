package lint

import (
	"os"
	"strings"
	"testing"
)

// TestSecondDocumentRefused (issue 27): a bootstrap followed by a second
// YAML document ("---" and a document with content) linted the first and
// said "0 error(s)", the second never checked. It is an E_DECODE error
// naming the separator's line; a lone trailing "---" is still accepted.
func TestSecondDocumentRefused(t *testing.T) {
	b, err := os.ReadFile("../../examples/envoy/local-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := string(b)
	lines := strings.Count(base, "\n")
	rep := lintString(t, "two.yaml", base+"---\nstatic_resources:\n  listeners: []\n", Options{})
	if len(rep.Findings) != 1 {
		t.Fatalf("findings:%s", dump(rep))
	}
	if f := rep.Findings[0]; f.Code != CodeDecode || f.Level != LevelError || f.Line != lines+1 || !strings.Contains(f.Message, "a second YAML document") {
		t.Errorf("finding %s: want E_DECODE at line %d naming the second document", f, lines+1)
	}
	rep = lintString(t, "trailing.yaml", base+"---\n", Options{})
	for _, f := range rep.Findings {
		if f.Level == LevelError {
			t.Errorf("a lone trailing separator: %s", f)
		}
	}
}
