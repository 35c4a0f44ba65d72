//go:build integration

package rls_test

// The differential test: every RLS configuration the repository ships or tests with is loaded into the real,
// pinned envoyproxy/ratelimit (service_cmd on a private Redis, started by internal/realparts) and into rlbench
// (rlsconfig.Parse, Config.Match and the lab RLS); the same generated descriptors go to both, and the rule each
// applies must be the same. Rules are told apart by rewriting every requests_per_unit to a distinct number, which
// the RLS returns as current_limit (envoyproxy/ratelimit src/service/ratelimit.go shouldRateLimitWorker;
// src/limiter/base_limiter.go GetResponseDescriptorStatus); descriptor matching does not depend on the number
// (src/config/config_impl.go GetLimit).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlbench/rlbench/evidence/descriptor"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/internal/testfix"
)

// diffSource is one RLS configuration found in the repository.
type diffSource struct {
	name string // repository-relative path, with "#scenario" for a plan's inline config
	data []byte
}

// mustFind lists configurations the test must find, so that a moved file cannot turn the test into a no-op.
var mustFind = []string{
	"examples/envoy/ratelimit/config/inventory.yaml",
	"internal/rlsconfig/testdata/matching.yaml",
	"internal/rlsconfig/testdata/nested.yaml",
	"internal/rlsconfig/testdata/rls_local_config.yaml",
	"internal/lab/rls/testdata/inventory.yaml",
	"internal/lint/testdata/rls-lab-space/inventory.yaml",
	"internal/realparts/testdata/rls-config/inventory.yaml",
	"examples/e06/plan.yaml#shared RLS",
	"examples/real-rls/plan.yaml#shared real RLS",
}

// findRLSConfigs walks the repository (not .git, .bin) for YAML files whose top level has a "domain" key (RLS
// configs) and for plans' inline RLS configs (scenarios[].lab.rls.config). Identical contents are kept once.
func findRLSConfigs(t *testing.T, root string) []diffSource {
	t.Helper()
	var out []diffSource
	seen := map[string]string{}
	found := map[string]bool{}
	add := func(name string, data []byte) {
		found[name] = true
		if prev, ok := seen[string(data)]; ok {
			t.Logf("%s: same content as %s", name, prev)
			return
		}
		seen[string(data)] = name
		out = append(out, diffSource{name: name, data: data})
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == ".bin" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		var top map[string]any
		if yaml.Unmarshal(data, &top) != nil {
			return nil // not YAML, or several documents: no RLS config (lint test inputs)
		}
		if _, ok := top["domain"]; ok {
			add(rel, data)
			return nil
		}
		var plan struct {
			Scenarios []struct {
				Name string
				Lab  struct {
					RLS struct {
						Config string
					} `yaml:"rls"`
				}
			}
		}
		if _, ok := top["scenarios"]; ok && yaml.Unmarshal(data, &plan) == nil {
			for _, sc := range plan.Scenarios {
				if c := sc.Lab.RLS.Config; c != "" {
					add(rel+"#"+sc.Name, []byte(c))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range mustFind {
		if !found[want] {
			t.Errorf("config %s not found (found: %v)", want, found)
		}
	}
	return out
}

// Variants of each config, each in a domain of its own.
const (
	// variantTag: every limited rule gets requests_per_unit tagBase+n (n unique over all configs).
	variantTag = "t"
	// variantIdentity: as variantTag, and every unlimited rule becomes a limited one with a tag, so that the
	// unlimited rule a descriptor matched can be told apart too (GetLimit matches regardless of unlimited).
	variantIdentity = "i"
	// variantZero: every limited rule gets requests_per_unit 0: each hit is over the limit, unless shadow_mode
	// or quota_mode turn the status to OK.
	variantZero = "z"
)

const tagBase = 1_000_000

type variant struct {
	src    diffSource
	kind   string
	domain string
	cfg    *rlsconfig.Config // rlbench's reading of the rewritten file
	file   string
}

// rewrite returns src with its domain renamed and its rate limits rewritten for kind; next numbers the tags.
func rewrite(t *testing.T, src diffSource, kind, domain string, next *int) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(src.data, &doc); err != nil {
		t.Fatalf("%s: %v", src.name, err)
	}
	root := doc.Content[0]
	seen := map[*yaml.Node]bool{}
	setScalar := func(m *yaml.Node, key, value, tag string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				m.Content[i+1].Kind, m.Content[i+1].Value, m.Content[i+1].Tag, m.Content[i+1].Style = yaml.ScalarNode, value, tag, 0
				return
			}
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key, Tag: "!!str"},
			&yaml.Node{Kind: yaml.ScalarNode, Value: value, Tag: tag})
	}
	del := func(m *yaml.Node, key string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
				return
			}
		}
	}
	get := func(m *yaml.Node, key string) *yaml.Node {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				v := m.Content[i+1]
				if v.Kind == yaml.AliasNode {
					v = v.Alias
				}
				return v
			}
		}
		return nil
	}
	var walk func(list *yaml.Node)
	walk = func(list *yaml.Node) {
		if list == nil || list.Kind != yaml.SequenceNode {
			return
		}
		for _, d := range list.Content {
			if d.Kind == yaml.AliasNode {
				d = d.Alias
			}
			if rl := get(d, "rate_limit"); rl != nil && rl.Kind == yaml.MappingNode {
				if seen[rl] {
					t.Fatalf("%s: a rate_limit block is shared through an alias; the tags would not be unique", src.name)
				}
				seen[rl] = true
				unlimited := false
				if u := get(rl, "unlimited"); u != nil {
					var b bool
					unlimited = u.Decode(&b) == nil && b
				}
				switch {
				case unlimited && kind == variantIdentity:
					del(rl, "unlimited")
					setScalar(rl, "unit", "hour", "!!str")
					fallthrough
				case !unlimited && kind != variantZero:
					*next++
					setScalar(rl, "requests_per_unit", fmt.Sprint(tagBase+*next), "!!int")
				case !unlimited:
					setScalar(rl, "requests_per_unit", "0", "!!int")
				}
			}
			walk(get(d, "descriptors"))
		}
	}
	setScalar(root, "domain", domain, "!!str")
	walk(get(root, "descriptors"))
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&doc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// genDescriptors builds descriptors for cfg: for every node of the tree (root to node), the exact entries and
// near misses: a value or key one character off, a wrong key, an empty value, an extra or a missing entry,
// swapped entries, wildcard values (the bare prefix, the literal "*", a longer value), "_" split differently
// (the RLS looks up "key_value" in one map), and a value in another case.
func genDescriptors(cfg *rlsconfig.Config) [][]descriptor.DescriptorEntry {
	var out [][]descriptor.DescriptorEntry
	seen := map[string]bool{}
	add := func(es []descriptor.DescriptorEntry) {
		k := fmt.Sprintf("%q", es)
		if !seen[k] {
			seen[k] = true
			out = append(out, append([]descriptor.DescriptorEntry(nil), es...))
		}
	}
	with := func(es []descriptor.DescriptorEntry, i int, e descriptor.DescriptorEntry) []descriptor.DescriptorEntry {
		c := append([]descriptor.DescriptorEntry(nil), es...)
		c[i] = e
		return c
	}
	oneOff := func(s string) []string {
		rs := []rune(s)
		if len(rs) == 0 {
			return []string{"x"}
		}
		last := rs[len(rs)-1]
		repl := 'x'
		if last == 'x' {
			repl = 'y'
		}
		head := string(rs[:len(rs)-1])
		return []string{head + string(repl), s + "x", head, "x" + s}
	}
	values := func(d *rlsconfig.Descriptor) []string {
		switch v := d.Value; {
		case v == "":
			return []string{"v1", "", "lab", "root"}
		case strings.HasSuffix(v, "*"):
			p := strings.TrimSuffix(v, "*")
			return []string{p + "tail", p, v, p + "/v1", strings.ToUpper(p) + "z"}
		default:
			return []string{v}
		}
	}
	var walk func(prefix []descriptor.DescriptorEntry, ds []*rlsconfig.Descriptor)
	walk = func(prefix []descriptor.DescriptorEntry, ds []*rlsconfig.Descriptor) {
		for _, d := range ds {
			for _, v := range values(d) {
				es := append(append([]descriptor.DescriptorEntry(nil), prefix...), descriptor.DescriptorEntry{Key: d.Key, Value: v})
				last := len(es) - 1
				add(es)
				for _, ov := range oneOff(v) {
					add(with(es, last, descriptor.DescriptorEntry{Key: d.Key, Value: ov}))
				}
				for _, ok := range oneOff(d.Key) {
					add(with(es, last, descriptor.DescriptorEntry{Key: ok, Value: v}))
				}
				add(with(es, last, descriptor.DescriptorEntry{Key: "nokey", Value: v}))
				add(with(es, last, descriptor.DescriptorEntry{Key: d.Key, Value: ""}))
				add(with(es, last, descriptor.DescriptorEntry{Key: d.Key, Value: strings.ToUpper(v)}))
				add(with(es, last, descriptor.DescriptorEntry{Key: d.Key, Value: strings.ToLower(v)}))
				full := d.Key + "_" + v
				if v == "" {
					full = d.Key
				}
				for i := 0; i < len(full); i++ {
					if full[i] == '_' {
						add(with(es, last, descriptor.DescriptorEntry{Key: full[:i], Value: full[i+1:]}))
					}
				}
				add(append(append([]descriptor.DescriptorEntry(nil), es...), descriptor.DescriptorEntry{Key: "extra", Value: "1"}))
				if len(es) > 1 {
					add(es[:last])
					sw := append([]descriptor.DescriptorEntry(nil), es...)
					sw[last], sw[last-1] = sw[last-1], sw[last]
					add(sw)
					add(es[1:])
				}
				if v == values(d)[0] {
					walk(es, d.Descriptors)
				}
			}
		}
	}
	walk(nil, cfg.Descriptors)
	add([]descriptor.DescriptorEntry{{Key: "nokey", Value: "nothing"}})
	add(nil)
	return out
}

// randomConfigs generates n configs (seeded, so a failure reproduces) from small alphabets of keys and values
// chosen to collide: keys and values with "_" (the RLS joins key and value with "_" into one map key), wildcard
// values and keys, "*" alone, default rules beside exact ones, nesting to depth 3, with and without rate limits.
func randomConfigs(n int, seed uint64) []diffSource {
	r := rand.New(rand.NewPCG(seed, 0))
	keys := []string{"a", "b", "a_b", "b_a", "c*", "a_"}
	values := []string{"", "", "x", "x_y", "y", "x*", "*", "_y", "xy"}
	units := []string{"second", "minute", "hour", "day"}
	var out []diffSource
	for i := 0; i < n; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "domain: random%d\ndescriptors:\n", i)
		var level func(indent string, depth int)
		level = func(indent string, depth int) {
			used := map[string]bool{}
			for j, m := 0, 1+r.IntN(5); j < m; j++ {
				k, v := keys[r.IntN(len(keys))], values[r.IntN(len(values))]
				fk := k
				if v != "" {
					fk += "_" + v
				}
				if used[fk] {
					continue
				}
				used[fk] = true
				fmt.Fprintf(&b, "%s- key: %q\n", indent, k)
				if v != "" {
					fmt.Fprintf(&b, "%s  value: %q\n", indent, v)
				}
				if strings.HasSuffix(fk, "*") && r.IntN(3) == 0 {
					fmt.Fprintf(&b, "%s  share_threshold: true\n", indent)
				}
				switch r.IntN(5) {
				case 0: // no rate_limit
				case 1:
					fmt.Fprintf(&b, "%s  rate_limit: {unlimited: true}\n", indent)
				default:
					fmt.Fprintf(&b, "%s  rate_limit: {unit: %s, requests_per_unit: %d}\n", indent, units[r.IntN(len(units))], r.IntN(10))
				}
				if r.IntN(4) == 0 {
					fmt.Fprintf(&b, "%s  shadow_mode: true\n", indent)
				}
				if depth < 3 && r.IntN(2) == 0 {
					fmt.Fprintf(&b, "%s  descriptors:\n", indent)
					level(indent+"    ", depth+1)
				}
			}
		}
		level("  ", 1)
		out = append(out, diffSource{name: fmt.Sprintf("random config %d (seed %d)", i, seed), data: []byte(b.String())})
	}
	return out
}

func protoDescriptor(es []descriptor.DescriptorEntry) *commonpb.RateLimitDescriptor {
	d := &commonpb.RateLimitDescriptor{}
	for _, e := range es {
		d.Entries = append(d.Entries, &commonpb.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value})
	}
	return d
}

// outcome is what a descriptor status says about the rule applied.
type outcome struct {
	code      pb.RateLimitResponse_Code
	rpu       uint32 // current_limit.requests_per_unit; 0 with hasLimit false
	unit      string
	hasLimit  bool
	unlimited bool // no current_limit and limit_remaining 4294967295
	reset     bool // duration_until_reset present (dropped for a quota_mode rule over its limit)
}

func (o outcome) String() string {
	switch {
	case o.unlimited:
		return fmt.Sprintf("%v unlimited", o.code)
	case !o.hasLimit:
		return fmt.Sprintf("%v no rule", o.code)
	}
	return fmt.Sprintf("%v rule %d/%s reset %t", o.code, o.rpu, o.unit, o.reset)
}

func outcomeOf(st *pb.RateLimitResponse_DescriptorStatus) outcome {
	o := outcome{code: st.GetCode(), reset: st.GetDurationUntilReset() != nil}
	if cl := st.GetCurrentLimit(); cl != nil {
		o.hasLimit, o.rpu, o.unit = true, cl.GetRequestsPerUnit(), cl.GetUnit().String()
	} else if st.GetLimitRemaining() == math.MaxUint32 {
		o.unlimited = true
	}
	return o
}

// expected is the outcome rlbench's matcher (rlsconfig.Config.Match) predicts for a one-descriptor request.
func expected(v *variant, es []descriptor.DescriptorEntry) outcome {
	m, _ := v.cfg.Match(es)
	switch {
	case m == nil:
		return outcome{code: pb.RateLimitResponse_OK}
	case m.Limit.Unlimited:
		return outcome{code: pb.RateLimitResponse_OK, unlimited: true}
	}
	o := outcome{code: pb.RateLimitResponse_OK, hasLimit: true, rpu: m.Limit.RequestsPerUnit, unit: m.Limit.Unit}
	if v.kind == variantZero && !m.ShadowMode && !m.Rule.QuotaMode {
		o.code = pb.RateLimitResponse_OVER_LIMIT
	}
	return o
}

func TestDifferentialRealRLS(t *testing.T) {
	redisBin, err1 := realparts.FindRedis()
	rlsBin, err2 := realparts.FindRLS()
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	root := testfix.RepoRoot(t)
	sources := append(findRLSConfigs(t, root), randomConfigs(12, 7)...)
	cfgDir := t.TempDir()
	var variants []*variant
	next, rejected := 0, 0
	for i, src := range sources {
		if _, err := rlsconfig.Parse(src.name, src.data); err != nil {
			// A config rlbench refuses is not loaded into the RLS either (one bad file stops it loading all).
			t.Logf("skipped (rlbench refuses it): %v", err)
			rejected++
			continue
		}
		for _, kind := range []string{variantTag, variantIdentity, variantZero} {
			v := &variant{src: src, kind: kind, domain: fmt.Sprintf("diff%02d%s", i, kind)}
			v.file = filepath.Join(cfgDir, v.domain+".yaml")
			data := rewrite(t, src, kind, v.domain, &next)
			cfg, err := rlsconfig.Parse(v.file, data)
			if err != nil {
				t.Fatalf("%s rewritten (%s): %v\n%s", src.name, kind, err, data)
			}
			if err := os.WriteFile(v.file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			v.cfg = cfg
			variants = append(variants, v)
		}
	}

	redis, err := realparts.StartRedis(ctx, realparts.Options{Bin: redisBin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = redis.Close(context.Background()) })
	real, err := realparts.StartRLS(ctx, realparts.RLSOptions{Bin: rlsBin, ConfigDir: cfgDir, RedisAddr: redis.Addr(),
		LogLevel: "warn", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = real.Close(context.Background()) })
	conn, err := grpc.NewClient(real.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	realCli := pb.NewRateLimitServiceClient(conn)

	cfgs := make([]*rlsconfig.Config, len(variants))
	for i, v := range variants {
		cfgs[i] = v.cfg
	}
	lab, err := labrls.Start(ctx, labrls.Options{Configs: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lab.Stop)

	// The requests: per variant, every generated descriptor alone; per config with named or replacing rules,
	// every pair of descriptors matching such rules in one request (replaces acts across the descriptors of one request).
	type call struct {
		v     *variant
		descs [][]descriptor.DescriptorEntry
	}
	var calls []call
	perConfig := map[string]int{}
	for _, v := range variants {
		ds := genDescriptors(v.cfg)
		for _, es := range ds {
			calls = append(calls, call{v: v, descs: [][]descriptor.DescriptorEntry{es}})
		}
		perConfig[v.src.name] = len(ds)
		if v.kind != variantTag {
			continue
		}
		var exact [][]descriptor.DescriptorEntry // descriptors matching a named or a replacing rule
		for _, es := range ds {
			if m, _ := v.cfg.Match(es); m != nil && (m.Limit.Name != "" || len(m.Limit.Replaces) > 0) {
				exact = append(exact, es)
			}
		}
		for _, a := range exact {
			for _, b := range exact {
				if fmt.Sprint(a) != fmt.Sprint(b) {
					calls = append(calls, call{v: v, descs: [][]descriptor.DescriptorEntry{a, b}})
				}
			}
		}
	}
	if len(calls) > 40000 {
		t.Fatalf("%d calls: keep the test bounded", len(calls))
	}

	type result struct {
		c         call
		real, lab []outcome
		err       error
	}
	results := make([]result, len(calls))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c := calls[i]
				req := &pb.RateLimitRequest{Domain: c.v.domain, HitsAddend: 1}
				for _, es := range c.descs {
					req.Descriptors = append(req.Descriptors, protoDescriptor(es))
				}
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				rr, err := realCli.ShouldRateLimit(cctx, req)
				ccancel()
				if err != nil {
					results[i] = result{c: c, err: fmt.Errorf("real RLS: %w", err)}
					continue
				}
				lr, err := lab.ShouldRateLimit(ctx, req)
				if err != nil {
					results[i] = result{c: c, err: fmt.Errorf("lab RLS: %w", err)}
					continue
				}
				res := result{c: c}
				for _, st := range rr.GetStatuses() {
					res.real = append(res.real, outcomeOf(st))
				}
				for _, st := range lr.GetStatuses() {
					res.lab = append(res.lab, outcomeOf(st))
				}
				results[i] = res
			}
		}()
	}
	for i := range calls {
		work <- i
	}
	close(work)
	wg.Wait()

	disagree := 0
	report := func(format string, args ...any) {
		disagree++
		if disagree <= 40 {
			t.Errorf(format, args...)
		}
	}
	matched := map[string]int{}
	for _, r := range results {
		where := fmt.Sprintf("%s (%s, domain %s) %v", r.c.v.src.name, r.c.v.kind, r.c.v.domain, r.c.descs)
		if r.err != nil {
			report("%s: %v", where, r.err)
			continue
		}
		if len(r.real) != len(r.c.descs) || len(r.lab) != len(r.c.descs) {
			report("%s: %d real and %d lab statuses for %d descriptors", where, len(r.real), len(r.lab), len(r.c.descs))
			continue
		}
		for i := range r.real {
			if r.real[i] != r.lab[i] { // the rule, the code and whether the status has a reset time
				report("%s: descriptor %d: real RLS %v, lab RLS %v", where, i, r.real[i], r.lab[i])
			}
		}
		if len(r.c.descs) == 1 {
			want := expected(r.c.v, r.c.descs[0])
			if got := r.real[0]; got.code != want.code || got.hasLimit != want.hasLimit || got.unlimited != want.unlimited ||
				got.rpu != want.rpu || got.unit != want.unit {
				report("%s: real RLS %v, rlsconfig.Match %v", where, r.real[0], want)
			}
			switch {
			case want.hasLimit:
				matched[r.c.v.kind+" limited"]++
			case want.unlimited:
				matched[r.c.v.kind+" unlimited"]++
			default:
				matched[r.c.v.kind+" none"]++
			}
		}
	}
	if disagree > 40 {
		t.Errorf("... %d disagreements in all", disagree)
	}
	t.Logf("%d configs found (%d refused by rlbench), %d variants, %d calls (%d descriptors per config: %v), matched per variant %v, %s",
		len(sources), rejected, len(variants), len(calls), len(perConfig), perConfig, matched, time.Since(began).Round(time.Millisecond))
	if matched["t limited"] < 100 || matched["t unlimited"] < 5 || matched["t none"] < 100 ||
		matched["i limited"] != matched["t limited"]+matched["t unlimited"] || matched["i unlimited"] != 0 {
		t.Errorf("the descriptors do not cover limited, unlimited and unmatched cases: %v", matched)
	}
}
