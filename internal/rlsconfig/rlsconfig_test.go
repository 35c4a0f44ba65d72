package rlsconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/testfix"
)

func entries(kv ...string) []descriptor.DescriptorEntry {
	var out []descriptor.DescriptorEntry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, descriptor.DescriptorEntry{Key: kv[i], Value: kv[i+1]})
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

// depth returns the 1-based depth of rule in ds, 0 if absent.
func depth(ds []*Descriptor, rule *Descriptor, at int) int {
	for _, d := range ds {
		if d == rule {
			return at
		}
		if n := depth(d.Descriptors, rule, at+1); n > 0 {
			return n
		}
	}
	return 0
}

func mustParseFile(t *testing.T, path string) *Config {
	t.Helper()
	c, err := ParseFile(path)
	if err != nil {
		t.Fatalf("ParseFile(%s): %v", path, err)
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
		in             []descriptor.DescriptorEntry
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
			m.ShadowMode != tc.shadow || m.Limit.Unlimited != tc.unlimd || depth(c.Descriptors, m.Rule, 1) != len(tc.in) {
			t.Errorf("%v: got %+v limit %+v", tc.in, m, m.Limit)
		}
	}
}

func TestMatchNested(t *testing.T) {
	c := mustParseFile(t, "testdata/nested.yaml")
	tests := []struct {
		in          []descriptor.DescriptorEntry
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

// TestMatchDefaultLookupCollision: when an entry's "key_value" is not in the level's map, GetLimit looks up the
// entry's key alone, which also finds a value rule whose "key_value" equals that key: the entry (b_x, anything)
// matches the rule key b, value x. rlbench's former re-implementation looked only for value-less rules there and
// answered "no rule" (found by the differential test against the real RLS).
func TestMatchDefaultLookupCollision(t *testing.T) {
	c := mustParse(t, "c.yaml", `domain: d
descriptors:
  - key: a_b
    value: x_y
    descriptors:
      - key: b
        value: x
        rate_limit: {unit: day, requests_per_unit: 6}
  - key: b
    value: x
    rate_limit: {unit: hour, requests_per_unit: 3}
`)
	for _, tc := range []struct {
		in   []descriptor.DescriptorEntry
		full string
	}{
		{entries("b_x", "anything"), "d.b_x"},
		{entries("b_x", ""), "d.b_x"},
		{entries("a_b", "x_y", "b_x", "xy"), "d.a_b_x_y.b_x"},
		{entries("b", "x"), "d.b_x"},
	} {
		m, ok := c.Match(tc.in)
		if !ok || m.FullKey != tc.full {
			t.Errorf("%v: got %+v %v, want rule %s", tc.in, m, ok, tc.full)
		}
	}
	if m, ok := c.Match(entries("b_y", "x")); ok || m != nil {
		t.Errorf("b_y=x matched %+v", m)
	}
}

// TestDumpMatchesRealRLS: the RLS's own Dump of the file rlbench loaded equals the /rlconfig dump the real RLS
// served for it (3fb7025), line for line.
func TestDumpMatchesRealRLS(t *testing.T) {
	c := mustParseFile(t, "testdata/rls_local_config.yaml")
	raw, err := os.ReadFile("testdata/rls_local_3fb7025_rlconfig.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(c.rls.Dump()), "\n")
	want := strings.Split(strings.TrimSpace(string(raw)), "\n")
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Dump differs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPinnedModuleIsTheTestedService: the envoyproxy/ratelimit module rlbench links (go.mod) is the version the
// integration tests run as service_cmd (realparts.RLSModuleVersion, scripts/install-real-parts.sh).
func TestPinnedModuleIsTheTestedService(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(testfix.RepoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := strings.Cut(realparts.RLSModuleVersion, "@")
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "github.com/envoyproxy/ratelimit" {
			if f[1] != want {
				t.Fatalf("go.mod links envoyproxy/ratelimit %s, the tested service_cmd is %s", f[1], want)
			}
			if strings.Contains(string(mod), "replace github.com/envoyproxy/ratelimit") {
				t.Fatal("go.mod replaces envoyproxy/ratelimit")
			}
			return
		}
	}
	t.Fatal("go.mod does not require envoyproxy/ratelimit")
}

// aliasBomb returns a valid-looking RLS config whose descriptor lists are nested aliases: each of levels lists
// holds width descriptors nesting the previous list, width^levels descriptors once expanded.
func aliasBomb(levels, width int) []byte {
	anchor := func(i int) string { return string(rune('A'+i%26)) + strings.Repeat("z", i/26) }
	var b strings.Builder
	fmt.Fprintf(&b, "domain: b\ndescriptors:\n- key: a\n  descriptors: &%s [", anchor(0))
	for j := 0; j < width; j++ {
		if j > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "{key: %c}", 'a'+j)
	}
	b.WriteString("]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "- key: %d\n  descriptors: &%s [", i, anchor(i))
		for j := 0; j < width; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "{key: %c,descriptors: *%s}", 'a'+j, anchor(i-1))
		}
		b.WriteString("]\n")
	}
	return []byte(b.String())
}

// TestAliasBombRefused: a 1 KB config whose aliases expand to 5^5 descriptors (and a 2.5 KB one to 5^15) is refused before anything
// expands it, naming the alias's line, within 50 MB of allocations. Before the budget, rlbench's walker and
// envoyproxy/ratelimit's loader followed every alias (a 2.5 KB config grew to gigabytes in lint --rls-config and
// in plans with an inline RLS config).
func TestAliasBombRefused(t *testing.T) {
	for name, bomb := range map[string][]byte{"descriptors": aliasBomb(6, 5), "laughs": []byte("domain: d\n" + testfix.AliasBomb("", 8, 10))} {
		t.Run(name, func(t *testing.T) { refuseBomb(t, bomb) })
	}
	big := aliasBomb(15, 5)
	// A 2.5 KB bomb (5^15, 3e10 descriptors) is refused as cheaply.
	var err error
	alloc := testfix.Allocated(func() { _, err = Parse("big.yaml", big) })
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("%d-byte bomb: %v", len(big), err)
	}
	if alloc > 50<<20 {
		t.Errorf("refusing a %d-byte bomb allocated %d MB, want < 50 MB", len(big), alloc>>20)
	}

	// The same through a file (lint --rls-config FILE, rlbench lab --rls-config) and a directory (lint
	// --rls-config DIR).
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bomb.yaml"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(filepath.Join(dir, "bomb.yaml")); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("ParseFile: %v", err)
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("LoadDir: %v", err)
	}
}

func refuseBomb(t *testing.T, bomb []byte) {
	t.Helper()
	if len(bomb) > 1024 {
		t.Fatalf("bomb is %d bytes, want <= 1 KB", len(bomb))
	}
	var err error
	began := time.Now()
	alloc := testfix.Allocated(func() { _, err = Parse("bomb.yaml", bomb) })
	took := time.Since(began)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "excessive aliasing") || ce.Line < 5 || ce.File != "bomb.yaml" {
		t.Fatalf("got %v, want an excessive aliasing error naming bomb.yaml and the alias line", err)
	}
	if alloc > 50<<20 {
		t.Errorf("refusing a %d-byte bomb allocated %d MB, want < 50 MB", len(bomb), alloc>>20)
	}
	allocs := testing.AllocsPerRun(5, func() { _, _ = Parse("bomb.yaml", bomb) })
	if allocs > 200_000 {
		t.Errorf("%.0f allocations per refusal, want < 200000", allocs)
	}
	t.Logf("%d bytes refused in %v, %d bytes and %.0f allocations: %v", len(bomb), took, alloc, allocs, err)
}

func BenchmarkParseAliasBomb(b *testing.B) {
	bomb := aliasBomb(6, 5)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bomb.yaml", bomb); err == nil {
			b.Fatal("accepted")
		}
	}
}

func TestAliases(t *testing.T) {
	// A recursive alias is a cycle in the node tree: refused.
	_, err := Parse("cycle.yaml", []byte("domain: d\ndescriptors: &a\n  - key: k\n    descriptors: *a\n"))
	if err == nil || !strings.Contains(err.Error(), "recursive alias") || !strings.HasPrefix(err.Error(), "cycle.yaml:4:") {
		t.Errorf("recursive alias: %v", err)
	}
	// Anchors that save typing are fine, and the aliased rule is a rule of its own at each place.
	c := mustParse(t, "anchors.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: &r {unit: second, requests_per_unit: 4}\n  - key: j\n    rate_limit: *r\n")
	mk, _ := c.Match(entries("k", "1"))
	mj, _ := c.Match(entries("j", "1"))
	if mk == nil || mj == nil || mk.Rule == mj.Rule || mj.Limit.RequestsPerUnit != 4 || mj.Rule.Line != 5 {
		t.Errorf("anchored rate_limit: %+v %+v", mk, mj)
	}
}

func TestSizeLimit(t *testing.T) {
	big := append([]byte("domain: d\n#"), bytes.Repeat([]byte("x"), MaxFileBytes)...)
	if _, err := Parse("big.yaml", big); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("Parse: %v", err)
	}
	p := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	f.Close()
	if _, err := ParseFile(p); err == nil || !strings.Contains(err.Error(), "larger than the limit") || !strings.HasPrefix(err.Error(), p) {
		t.Errorf("ParseFile: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if _, err := ParseFile(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: %v", err)
	}
}

// TestEmptyConfigs: an empty file, a file of comments, null and {} are errors (the RLS's "config file cannot have
// empty domain"), never a config that matches nothing.
func TestEmptyConfigs(t *testing.T) {
	for src, line := range map[string]int{"": 0, "# only a comment\n": 0, "~\n": 1, "{}\n": 1, "descriptors: []\n": 1, "domain: \"\"\n": 1} {
		_, err := Parse("e.yaml", []byte(src))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != line || !strings.Contains(err.Error(), "config file cannot have empty domain") {
			t.Errorf("%q: %v, want the empty domain error at line %d", src, err, line)
		}
	}
}

// TestRLSOnlyErrors: what only the RLS's reading refuses still comes with a line.
func TestRLSOnlyErrors(t *testing.T) {
	for _, tc := range []struct {
		src      string
		line     int
		contains string
	}{
		{"domain: d\ndescriptors:\n  - key: k\n    value: 1.5\n", 4, `error checking config (the value "1.5" is read as float`},
		{"domain: d\ndescriptors:\n  - key: k\n  - key: j\n    descriptors:\n      - key: x\n        rate_limit: {unit: hour, requests_per_unit: 1, replaces: [{name: \"\"}]}\n", 6, "should not have an empty replaces entry"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: eon\n", 6, "envoyproxy/ratelimit ignores an invalid unit here"},
	} {
		_, err := Parse("x.yaml", []byte(tc.src))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%q: %v, want line %d containing %q", tc.src, err, tc.line, tc.contains)
		}
	}
}

func TestLoadDirNoConfig(t *testing.T) {
	root := t.TempDir()
	var nc *NoConfigError
	if _, err := LoadDir(root); !errors.As(err, &nc) || nc.Hint != "" || !strings.Contains(err.Error(), "no RLS config") {
		t.Errorf("empty dir: %v", err)
	}
	// The RLS's RUNTIME_ROOT layout: <root>/<subdirectory>/config/*.yaml, given as the root or the subdirectory.
	cfgDir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "ratelimit", "aaa"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "c.yaml"), []byte("domain: d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, "ratelimit")} {
		_, err := LoadDir(d)
		if !errors.As(err, &nc) || nc.Hint != cfgDir || !strings.Contains(err.Error(), "did you mean --rls-config "+cfgDir) {
			t.Errorf("%s: %v, want a hint at %s", d, err, cfgDir)
		}
	}
	if cfgs, err := LoadDir(cfgDir); err != nil || len(cfgs) != 1 {
		t.Errorf("config dir: %v %v", cfgs, err)
	}
}

// FuzzParse: Parse never panics and never hangs on any input; an accepted config matches its own rules' exact
// descriptors and nothing for an empty descriptor.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/rls_local_config.yaml", "testdata/nested.yaml", "testdata/matching.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(aliasBomb(6, 5))
	f.Add([]byte("domain: d\ndescriptors: &a\n  - key: k\n    descriptors: *a\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "f.yaml" {
				t.Fatalf("error %T %v is not an *Error naming the file", err, err)
			}
			return
		}
		if c.Domain == "" {
			t.Fatal("accepted an empty domain")
		}
		if m, _ := c.Match(nil); m != nil {
			t.Fatal("empty descriptor matched")
		}
		for _, r := range c.Rules() {
			if r.Descriptor.Line <= 0 {
				t.Fatalf("rule %s has no line", r.FullKey)
			}
		}
		if len(c.Descriptors) > 0 {
			d := c.Descriptors[0]
			_, _ = c.Match([]descriptor.DescriptorEntry{{Key: d.Key, Value: d.Value}})
		}
	})
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
	c, err := ParseFile("testdata/nested.yaml")
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
