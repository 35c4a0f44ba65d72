package rlsconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/testfix"
)

func entries(kv ...string) []evidence.DescriptorEntry {
	var out []evidence.DescriptorEntry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, evidence.DescriptorEntry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func mustParse(t *testing.T, name, src string) *Config {
	t.Helper()
	c, err := Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return c
}

func TestFixtureMatchesSharedCopy(t *testing.T) {
	sh := testfix.SharedFixtureDir(t, "rls")
	for _, f := range []string{"rls_local_config.yaml", "rls_local_3fb7025_rlconfig.txt"} {
		want, err := os.ReadFile(filepath.Join(sh, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s differs from shared fixture", f)
		}
	}
}

// TestParseFixtureAgainstRLSDump parses the config used for the real RLS runs
// and compares its rules with the RLS's own /rlconfig dump of that config.
func TestParseFixtureAgainstRLSDump(t *testing.T) {
	c, err := ParseFile("testdata/rls_local_config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Domain != "rlbench" || len(c.Descriptors) != 4 || c.File != "testdata/rls_local_config.yaml" {
		t.Fatalf("got domain %q, %d descriptors, file %q", c.Domain, len(c.Descriptors), c.File)
	}
	var got []string
	for _, r := range c.Rules() {
		rl := r.Descriptor.RateLimit
		unit := rl.Unit
		if rl.Unlimited {
			unit = "UNKNOWN"
		}
		got = append(got, fmt.Sprintf("%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t",
			r.FullKey, unit, rl.RequestsPerUnit, r.Descriptor.ShadowMode, r.Descriptor.QuotaMode))
	}
	raw, err := os.ReadFile("testdata/rls_local_3fb7025_rlconfig.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(raw)), "\n")
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules differ from RLS dump:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := c.Descriptors[0]; d.Line != 3 {
		t.Errorf("first descriptor line = %d, want 3", d.Line)
	}
}

func TestMatchFixture(t *testing.T) {
	c, err := ParseFile("testdata/rls_local_config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in             []evidence.DescriptorEntry
		ok, matched    bool
		full, stats    string
		limit          uint32
		unit           string
		shadow, unlimd bool
	}{
		{in: entries("generic_key", "fixed"), ok: true, matched: true, full: "rlbench.generic_key_fixed", stats: "rlbench.generic_key_fixed", limit: 3, unit: "MINUTE"},
		// default rule: request value dropped from the key (issue #311 aggregation).
		{in: entries("remote_address", "10.0.0.7"), ok: true, matched: true, full: "rlbench.remote_address", stats: "rlbench.remote_address", limit: 2, unit: "SECOND"},
		{in: entries("shadow", "x"), ok: true, matched: true, full: "rlbench.shadow_x", stats: "rlbench.shadow_x", limit: 1, unit: "MINUTE", shadow: true},
		{in: entries("free", "all"), ok: false, matched: true, full: "rlbench.free_all", stats: "rlbench.free_all", unlimd: true},
		{in: entries("generic_key", "other")},
		{in: entries("shadow", "y")},
		// request deeper than config: no limit.
		{in: entries("generic_key", "fixed", "extra", "1")},
		{in: entries("remote_address", "1.2.3.4", "path", "/")},
		{in: nil},
	}
	for _, tc := range tests {
		m, ok := c.Match(tc.in)
		if ok != tc.ok || (m != nil) != tc.matched {
			t.Errorf("%v: ok=%v matched=%v, want %v %v", tc.in, ok, m != nil, tc.ok, tc.matched)
			continue
		}
		if m == nil {
			continue
		}
		if m.FullKey != tc.full || m.StatsKey != tc.stats || m.Limit.RequestsPerUnit != tc.limit || m.Limit.Unit != tc.unit ||
			m.ShadowMode != tc.shadow || m.Limit.Unlimited != tc.unlimd || len(m.Path) != len(tc.in) {
			t.Errorf("%v: got %+v limit %+v", tc.in, m, m.Limit)
		}
	}
}

const nested = `
domain: inventory
descriptors:
  - key: tenant
    value: lab
    rate_limit: {unit: HOUR, requests_per_unit: 5}
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 2}
      - key: user
        value: root
        rate_limit: {unlimited: true}
      - key: path
        value: /api*
        rate_limit: {unit: second, requests_per_unit: 9}
        value_to_metric: true
  - key: tenant
    descriptors:
      - key: plan
        value: free
        detailed_metric: true
        rate_limit: {unit: day, requests_per_unit: 100}
  - key: group
    value: a
    descriptors:
      - key: sub
        rate_limit: {unit: week, requests_per_unit: 7}
`

func TestMatchNested(t *testing.T) {
	c := mustParse(t, "nested.yaml", nested)
	tests := []struct {
		in          []evidence.DescriptorEntry
		ok          bool
		full, stats string
		limit       uint32
	}{
		{entries("tenant", "lab"), true, "inventory.tenant_lab", "inventory.tenant_lab", 5},
		{entries("tenant", "lab", "user", "alice"), true, "inventory.tenant_lab.user", "inventory.tenant_lab.user", 2},
		// exact value wins over the default rule, and it is unlimited.
		{entries("tenant", "lab", "user", "root"), false, "inventory.tenant_lab.user_root", "inventory.tenant_lab.user_root", 0},
		// wildcard prefix with value_to_metric: stats carry the real value.
		{entries("tenant", "lab", "path", "/api/v1"), true, "inventory.tenant_lab.path_/api*", "inventory.tenant_lab.path_/api/v1", 9},
		{entries("tenant", "lab", "path", "/web"), false, "", "", 0},
		// tenant=lab2 falls to the default tenant rule, which has no limit of its own.
		{entries("tenant", "lab2"), false, "", "", 0},
		// detailed_metric: stats key keeps the request values of default rules.
		{entries("tenant", "lab2", "plan", "free"), true, "inventory.tenant.plan_free", "inventory.tenant_lab2.plan_free", 100},
		// group=a has no limit itself; depth 2 matches the default sub rule.
		{entries("group", "a"), false, "", "", 0},
		{entries("group", "a", "sub", "z"), true, "inventory.group_a.sub", "inventory.group_a.sub", 7},
		{entries("group", "b", "sub", "z"), false, "", "", 0},
		// more entries than the config depth.
		{entries("group", "a", "sub", "z", "x", "y"), false, "", "", 0},
		// order matters: sub before group matches nothing.
		{entries("sub", "z", "group", "a"), false, "", "", 0},
	}
	for _, tc := range tests {
		m, ok := c.Match(tc.in)
		if ok != tc.ok {
			t.Errorf("%v: ok=%v want %v (m=%+v)", tc.in, ok, tc.ok, m)
			continue
		}
		if tc.full == "" {
			if m != nil {
				t.Errorf("%v: unexpected match %+v", tc.in, m)
			}
			continue
		}
		if m == nil {
			t.Errorf("%v: no match", tc.in)
			continue
		}
		if m.FullKey != tc.full || m.StatsKey != tc.stats || (tc.ok && m.Limit.RequestsPerUnit != tc.limit) {
			t.Errorf("%v: got full=%q stats=%q limit=%d, want %q %q %d", tc.in, m.FullKey, m.StatsKey, m.Limit.RequestsPerUnit, tc.full, tc.stats, tc.limit)
		}
		if m.KeyPath != strings.TrimPrefix(m.FullKey, "inventory.") {
			t.Errorf("%v: KeyPath %q", tc.in, m.KeyPath)
		}
	}
}

// TestMatchFinalKeyCollision reproduces the RLS map semantics: a value-less
// rule whose key contains "_" is the same map key as key=value.
func TestMatchFinalKeyCollision(t *testing.T) {
	c := mustParse(t, "c.yaml", "domain: d\ndescriptors:\n  - key: a_b\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	m, ok := c.Match(entries("a", "b"))
	if !ok || m.FullKey != "d.a_b" {
		t.Fatalf("got %+v %v", m, ok)
	}
	if _, ok := c.Match(entries("a", "c")); ok {
		t.Fatal("a=c matched")
	}
}

func TestUnitSeconds(t *testing.T) {
	want := map[string]int64{"second": 1, "MINUTE": 60, "Hour": 3600, "DAY": 86400, "WEEK": 604800, "MONTH": 2592000, "YEAR": 31536000, "UNKNOWN": 0, "": 0, "fortnight": 0}
	for u, s := range want {
		if got := UnitSeconds(u); got != s {
			t.Errorf("UnitSeconds(%q) = %d, want %d", u, got, s)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		contains  string
	}{
		{"badunit.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", 5, "invalid rate limit unit 'fortnight'"},
		{"nounit.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n", 5, "invalid rate limit unit ''"},
		{"unknown.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n    shadowmode: true\n", 5, "unknown key 'shadowmode'"},
		{"misplaced.yaml", "domain: d\ndescriptors:\n  - key: k\n    unit: second\n", 4, "unknown key 'unit' in descriptor"},
		{"rootkey.yaml", "domain: d\nfoo: 1\n", 2, "unknown key 'foo' in config file"},
		{"dupkey.yaml", "domain: d\ndomain: e\n", 2, "duplicate key 'domain'"},
		{"nodomain.yaml", "descriptors:\n  - key: k\n", 1, "empty domain"},
		{"empty.yaml", "", 0, "empty domain"},
		{"emptykey.yaml", "domain: d\ndescriptors:\n  - value: v\n", 3, "descriptor has empty key"},
		{"unlimunit.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: second\n", 6, "should not specify rate limit unit when unlimited"},
		{"dupdesc.yaml", "domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n", 5, "duplicate descriptor composite key 'd.k_v'"},
		{"dupnested.yaml", "domain: d\ndescriptors:\n  - key: k\n    descriptors:\n      - key: x\n      - key: x\n", 6, "duplicate descriptor composite key 'd.k.x'"},
		{"negative.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}\n", 4, "requests_per_unit"},
		{"toobig.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 4294967296}\n", 4, "requests_per_unit"},
		{"strrpu.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: \"5\"}\n", 4, "requests_per_unit"},
		{"badbool.yaml", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", 4, "'shadow_mode' must be true or false"},
		{"notlist.yaml", "domain: d\ndescriptors: {key: k}\n", 2, "'descriptors' must be a list"},
		{"syntax.yaml", "domain: d\ndescriptors:\n  - key: k\n   value: [\n", 2, "error loading config file"},
		{"twodocs.yaml", "domain: d\n---\ndomain: e\n", 2, "more than one YAML document"},
		{"replaces.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, name: n, replaces: [{name: n}]}\n", 3, "replaces should not contain name of same descriptor"},
		{"share.yaml", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n", 3, "share_threshold can only be used with wildcard"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.name, []byte(tc.src))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %T %v is not *Error", tc.name, err, err)
			continue
		}
		if ce.File != tc.name || ce.Line != tc.line || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: got %q (line %d), want line %d containing %q", tc.name, err, ce.Line, tc.line, tc.contains)
		}
		if !strings.HasPrefix(err.Error(), tc.name+":") {
			t.Errorf("%s: error does not start with the file name: %q", tc.name, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	src := `domain: 123
descriptors:
  - key: port
    value: 8080
    quota_mode: true
    detailed_metric: false
    rate_limit:
      unit: Minute
      requests_per_unit: 0
      name: base
      replaces:
        - name: other
  - key: empty
    descriptors:
`
	c := mustParse(t, "ok.yaml", src)
	d := c.Descriptors[0]
	if c.Domain != "123" || d.Value != "8080" || !d.QuotaMode || d.RateLimit.Unit != "MINUTE" || d.RateLimit.RequestsPerUnit != 0 ||
		d.RateLimit.Name != "base" || len(d.RateLimit.Replaces) != 1 || d.RateLimit.Replaces[0] != "other" || c.Descriptors[1].Descriptors != nil {
		t.Fatalf("got %+v / %+v / %+v", c, d, d.RateLimit)
	}
	// requests_per_unit 0: matches, so every hit is over the limit.
	if m, ok := c.Match(entries("port", "8080")); !ok || m.Limit.RequestsPerUnit != 0 {
		t.Fatalf("match: %+v %v", m, ok)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", "domain: b\n")
	write("a.yml", "domain: a\n")
	write(".hidden.yaml", "garbage: [")
	write("notes.txt", "garbage: [")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || cfgs[0].Domain != "a" || cfgs[1].Domain != "b" || cfgs[0].File != filepath.Join(dir, "a.yml") {
		t.Fatalf("got %+v", cfgs)
	}
	idx, err := ByDomain(cfgs)
	if err != nil || idx["b"] != cfgs[1] {
		t.Fatalf("ByDomain: %v %v", idx, err)
	}

	write("c.yaml", "domain: a\n")
	_, err = LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), "duplicate domain 'a'") || !strings.Contains(err.Error(), "c.yaml") || !strings.Contains(err.Error(), "a.yml") {
		t.Fatalf("duplicate domain: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	write("d.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: eon}\n")
	_, err = LoadDir(dir)
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "d.yaml")+":4:") {
		t.Fatalf("bad file: %v", err)
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing dir: no error")
	}
}

func BenchmarkMatch(b *testing.B) {
	c, err := Parse("nested.yaml", []byte(nested))
	if err != nil {
		b.Fatal(err)
	}
	in := entries("tenant", "lab", "user", "alice")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Match(in); !ok {
			b.Fatal("no match")
		}
	}
}
