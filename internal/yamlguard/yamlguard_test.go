package yamlguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

func TestBombRefusedCheaply(t *testing.T) {
	bomb := testfix.AliasBomb("", 8, 10) // 10^9 nodes
	if len(bomb) > 1024 {
		t.Fatalf("bomb is %d bytes, want <= 1 KiB", len(bomb))
	}
	var err error
	n := testfix.Allocated(func() { _, err = Parse("bomb.yaml", []byte(bomb), Limits{}) })
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("Parse(bomb) = %v, want *Error", err)
	}
	if !strings.Contains(err.Error(), "excessive aliasing") || ge.Name != "bomb.yaml" || ge.Line < 2 || ge.Line > 9 {
		t.Errorf("error %q (line %d): want excessive aliasing at a line of the bomb", err, ge.Line)
	}
	if n > 50<<20 {
		t.Errorf("refusing a 1 KiB bomb allocated %d bytes, want < 50 MiB", n)
	}
}

func TestRecursiveAlias(t *testing.T) {
	for _, doc := range []string{"a: &a [*a]", "a: &a {b: *a}", "x:\n  y: &y\n    - z\n    - *y\n"} {
		_, err := Parse("cyc.yaml", []byte(doc), Limits{})
		if err == nil || !strings.Contains(err.Error(), "recursive alias") {
			t.Errorf("%q: err = %v, want a recursive alias error", doc, err)
		}
	}
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	if _, err := Parse("deep.yaml", []byte(deep), Limits{}); err == nil || !strings.Contains(err.Error(), "deeper than 200") {
		t.Errorf("deep: err = %v", err)
	}
	// Depth reached only through an alias.
	aliasDeep := "a: &a " + strings.Repeat("[", 150) + strings.Repeat("]", 150) + "\nb: " + strings.Repeat("[", 100) + "*a" + strings.Repeat("]", 100) + "\n"
	if _, err := Parse("ad.yaml", []byte(aliasDeep), Limits{}); err == nil || !strings.Contains(err.Error(), "alias *a makes the document nest deeper") {
		t.Errorf("alias depth: err = %v", err)
	}
	big := "[" + strings.Repeat("1,", 100) + "1]"
	if _, err := Parse("big.yaml", []byte(big), Limits{MaxNodes: 50}); err == nil || !strings.Contains(err.Error(), "more than 50 nodes") {
		t.Errorf("node limit: err = %v", err)
	}
	if _, err := Parse("bytes.yaml", []byte(big), Limits{MaxBytes: 10}); err == nil || !strings.Contains(err.Error(), "larger than the limit of 10 bytes") {
		t.Errorf("byte limit: err = %v", err)
	}
	// The budget is shared by the documents of a stream.
	stream := strings.Repeat("[1, 2, 3, 4]\n---\n", 20)
	if _, err := Parse("stream.yaml", []byte(stream), Limits{MaxNodes: 60}); err == nil {
		t.Errorf("stream of 20 documents of 5+ nodes passed a budget of 60")
	}
}

func TestOrdinaryAnchorsPass(t *testing.T) {
	doc := `
defaults: &defaults
  connect_timeout: 1s
  type: STATIC
  lb_policy: ROUND_ROBIN
clusters:
  - <<: *defaults
    name: a
  - <<: *defaults
    name: b
shared: &s [1, 2, 3]
lists: [*s, *s, *s]
`
	n, err := Parse("ok.yaml", []byte(doc), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if n == nil || len(n.Content) != 1 {
		t.Fatalf("Parse returned %v", n)
	}
	for _, empty := range []string{"", "# only a comment\n", "---\n"} {
		n, err := Parse("empty.yaml", []byte(empty), Limits{})
		if err != nil {
			t.Errorf("%q: %v", empty, err)
		}
		if empty == "" && n != nil {
			t.Errorf("empty input gave a document")
		}
	}
	// Syntax errors come back as yaml.v3 reports them.
	if _, err := Parse("bad.yaml", []byte("a: [1, 2"), Limits{}); err == nil || IsGuard(err) || !strings.Contains(err.Error(), "yaml:") {
		t.Errorf("syntax error = %v", err)
	}
}

func TestAliasBudgetIsExact(t *testing.T) {
	// 10 aliases of a 101-node list (the list and 100 scalars) = 1010 aliased nodes.
	var b strings.Builder
	b.WriteString("a: &a [" + strings.TrimSuffix(strings.Repeat("x,", 100), ",") + "]\nb: [")
	b.WriteString(strings.TrimSuffix(strings.Repeat("*a,", 10), ","))
	b.WriteString("]\n")
	if _, err := Parse("x.yaml", []byte(b.String()), Limits{MaxAliasNodes: 1010}); err != nil {
		t.Errorf("1010 aliased nodes refused with a budget of 1010: %v", err)
	}
	if _, err := Parse("x.yaml", []byte(b.String()), Limits{MaxAliasNodes: 1009}); err == nil {
		t.Errorf("1010 aliased nodes passed a budget of 1009")
	}
}

func BenchmarkRefuseBomb(b *testing.B) {
	bomb := []byte(testfix.AliasBomb("", 8, 10))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bomb.yaml", bomb, Limits{}); err == nil {
			b.Fatal("bomb passed")
		}
	}
}
