// Package rlsconfig reads the YAML rate limit configuration of envoyproxy/ratelimit (the "RLS") and matches
// request descriptors against it. The semantics are not re-implemented: loading, validation and descriptor
// matching are the pinned RLS's own package github.com/envoyproxy/ratelimit/src/config (the module version in
// go.mod, main-branch commit 3fb702589d36, the same the integration tests run as service_cmd):
// ConfigFileContentToYaml and NewRateLimitConfigImpl load and validate a file (src/config/config_impl.go
// loadDescriptors, validateYamlKeys), and GetLimit picks the rule for a descriptor. What this package adds is
// what the RLS does not offer:
//
//   - line numbers: every error names the file and the 1-based line (the RLS's errors name only the file);
//   - a stricter reading for lint: a key is accepted only at the level where it has a meaning (the RLS checks
//     keys against one flat list, so "unit" directly under a descriptor is silently ignored there), duplicate
//     mapping keys, wrong value types, a unit the RLS ignores beside unlimited, and more than one YAML document
//     are errors here;
//   - bounded input: a file larger than MaxFileBytes, or whose aliases expand past the node budget of
//     internal/yamlguard ("billion laughs"), is refused before anything expands it;
//   - a tree of Descriptor values with their lines, for lint's descriptor cross-check and its closest-rule
//     suggestion.
//
// The format:
//
//	domain: inventory
//	descriptors:
//	  - key: tenant
//	    value: lab            # optional; absent = default rule for any value
//	    rate_limit:
//	      unit: hour          # second|minute|hour|day|week|month|year, any case
//	      requests_per_unit: 5
//	      # unlimited: true   # instead of unit: never limited
//	      # name: n, replaces: [{name: other}]
//	    shadow_mode: false    # decisions forced to OK, counted as over_limit
//	    detailed_metric: false
//	    descriptors: [...]    # nested entries of the same descriptor
//
// The RLS loads every *.yaml file of $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config (RUNTIME_APPDIRECTORY, default
// "config"), one domain per file; a domain may appear in only one file unless MERGE_DOMAIN_CONFIG is set (not
// modelled here).
package rlsconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	commonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsconf "github.com/envoyproxy/ratelimit/src/config"
	yaml "go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/yamlguard"
)

// MaxFileBytes bounds one RLS configuration read whole (4 MiB, tens of thousands of rules).
const MaxFileBytes = 4 << 20

// Config is one RLS configuration file: one domain and its descriptor tree. Configs come from Parse,
// ParseFile or LoadDir; a Config built otherwise matches nothing.
type Config struct {
	// Domain is the rate limit domain (RateLimitRequest.domain), never empty.
	Domain string
	// Descriptors are the top-level descriptor rules in file order.
	Descriptors []*Descriptor
	// File is the name the config was parsed under (a path for LoadDir).
	File string

	// rls is the file loaded by envoyproxy/ratelimit with every rate_limit's name replaced by a tag naming its
	// node in rules, so that GetLimit's answer identifies the rule (matching never reads the name).
	rls   rlsconf.RateLimitConfig
	rules []*Descriptor // by pre-order index, the tag's number
}

// Descriptor is one node of the descriptor tree: it matches one entry (key, value) of a request descriptor at
// its depth. The fields are the RLS's reading of the file (src/config/config_impl.go YamlDescriptor).
type Descriptor struct {
	// Key is the entry key to match, never empty.
	Key string
	// Value is the entry value to match. Empty means the default rule, which matches any value of Key that has
	// no rule of its own. A value ending in "*" matches by prefix (RLS wildcard keys).
	Value string
	// RateLimit is the limit applied when a request descriptor ends at this node; nil when the node only groups
	// nested descriptors.
	RateLimit *RateLimit
	// ShadowMode: hits are counted and logged, but the status is forced to OK.
	ShadowMode bool
	// DetailedMetric: stats key uses the request's values (RLS detailed_metric).
	DetailedMetric bool
	// ValueToMetric: stats key includes the request value for this level (RLS value_to_metric).
	ValueToMetric bool
	// ShareThreshold: wildcard values share one counter (RLS share_threshold); only valid on a wildcard value.
	// Parsed, not applied by the lab server.
	ShareThreshold bool
	// QuotaMode: an over-limit status is turned into OK (RLS quota_mode, src/service/ratelimit.go).
	QuotaMode bool
	// Descriptors are the nested rules for the next entry of the request.
	Descriptors []*Descriptor
	// Line is the 1-based line of the descriptor in Config.File.
	Line int

	fullKey string // Domain + "." + FinalKeys from the top level down to this node
}

// RateLimit is a descriptor's rate_limit block.
type RateLimit struct {
	// Unit is the canonical upper-case unit name (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, YEAR); empty when
	// Unlimited.
	Unit string
	// RequestsPerUnit is the number of hits allowed per fixed window of one Unit. 0 is accepted (as by the
	// RLS): every hit is over the limit.
	RequestsPerUnit uint32
	// Unlimited: the descriptor matches but is never limited or counted.
	Unlimited bool
	// Name is the optional rule name used by other rules' Replaces.
	Name string
	// Replaces lists rule names this limit replaces when both match a request.
	Replaces []string
}

// Error is a configuration error located in a file. Line is 0 when the error concerns the whole file (e.g. an
// empty file) or a duplicate domain.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Parse parses one RLS configuration file. name is used in errors (the file path, or a source name). Errors are
// *Error values naming name and the line: input over MaxFileBytes or over the alias budget, YAML syntax errors,
// more than one YAML document, unknown or misplaced keys, duplicate keys, wrong value types, a unit beside
// unlimited; and everything envoyproxy/ratelimit refuses (empty file, empty domain or descriptor key, invalid
// unit, duplicate descriptor composite keys at one level, bad replaces, share_threshold without a wildcard
// value), with the RLS's message.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{File: name, Msg: fmt.Sprintf("RLS config of %d bytes is larger than the limit of %d bytes", len(data), MaxFileBytes)}
	}
	doc, err := parseNodes(name, data)
	if err != nil {
		return nil, err
	}
	p := &parser{file: name}
	root := doc
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root != nil && !isNull(root) {
		if err := p.config(root); err != nil {
			return nil, err
		}
	}
	rootLine := 0
	if root != nil {
		rootLine = root.Line
	}

	// The RLS's reading and validation.
	var yr *rlsconf.YamlRoot
	if err := rlsCall(func() { yr = rlsconf.ConfigFileContentToYaml(name, string(data)) }); err != nil {
		return nil, p.rlsError(name, err, -1, rootLine, doc)
	}
	if err := load(name, yr); err != nil {
		return nil, p.rlsError(name, err, failingNode(name, yr), rootLine, doc)
	}

	cfg := &Config{Domain: yr.Domain, File: name}
	var build func(prefix string, ys []rlsconf.YamlDescriptor) []*Descriptor
	build = func(prefix string, ys []rlsconf.YamlDescriptor) []*Descriptor {
		if len(ys) == 0 {
			return nil
		}
		out := make([]*Descriptor, len(ys))
		for i := range ys {
			y := &ys[i]
			d := &Descriptor{Key: y.Key, Value: y.Value, ShadowMode: y.ShadowMode, DetailedMetric: y.DetailedMetric,
				ValueToMetric: y.ValueToMetric, ShareThreshold: y.ShareThreshold, QuotaMode: y.QuotaMode}
			if n := len(cfg.rules); n < len(p.pos) {
				d.Line = p.pos[n].line
			}
			d.fullKey = prefix + d.FinalKey()
			if rl := y.RateLimit; rl != nil {
				d.RateLimit = &RateLimit{RequestsPerUnit: rl.RequestsPerUnit, Unlimited: rl.Unlimited, Name: rl.Name}
				if !rl.Unlimited {
					d.RateLimit.Unit = strings.ToUpper(rl.Unit)
				}
				for _, r := range rl.Replaces {
					d.RateLimit.Replaces = append(d.RateLimit.Replaces, r.Name)
				}
			}
			cfg.rules = append(cfg.rules, d)
			d.Descriptors = build(d.fullKey+".", y.Descriptors)
			out[i] = d
		}
		return out
	}
	cfg.Descriptors = build(cfg.Domain+".", yr.Descriptors)

	tagged := &rlsconf.YamlRoot{Domain: yr.Domain}
	n := 0
	tagged.Descriptors = tagTree(yr.Descriptors, &n)
	if err := rlsCall(func() {
		cfg.rls = rlsconf.NewRateLimitConfigImpl([]rlsconf.RateLimitConfigToLoad{{Name: name, ConfigYaml: tagged}}, nopStats{}, false)
	}); err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("internal error: envoyproxy/ratelimit refuses the tagged copy of a config it accepted: %v", err)}
	}
	return cfg, nil
}

// tagPrefix starts the rate_limit name of every rule in Config.rls; the pre-order index of the node follows.
const tagPrefix = "\x00rlbench-rule-"

// tagTree copies ys in pre-order, naming every rate_limit tagPrefix + its index (n counts the nodes).
func tagTree(ys []rlsconf.YamlDescriptor, n *int) []rlsconf.YamlDescriptor {
	if ys == nil {
		return nil
	}
	out := make([]rlsconf.YamlDescriptor, len(ys))
	for i, y := range ys {
		idx := *n
		*n++
		if y.RateLimit != nil {
			rl := *y.RateLimit
			rl.Name = tagPrefix + strconv.Itoa(idx)
			y.RateLimit = &rl
		}
		y.Descriptors = tagTree(y.Descriptors, n)
		out[i] = y
	}
	return out
}

// load loads one file as the RLS does (src/config/config_impl.go NewRateLimitConfigImpl, without merging
// domains).
func load(name string, yr *rlsconf.YamlRoot) error {
	return rlsCall(func() {
		rlsconf.NewRateLimitConfigImpl([]rlsconf.RateLimitConfigToLoad{{Name: name, ConfigYaml: yr}}, nopStats{}, false)
	})
}

// rlsCall runs f, turning the RLS's way of reporting a bad config (a panic with a RateLimitConfigError, which
// src/service/ratelimit.go reloadConfig recovers) into an error. Any other panic would crash the real RLS: it is
// reported as such.
func rlsCall(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if ce, ok := r.(rlsconf.RateLimitConfigError); ok {
				err = ce
				return
			}
			err = fmt.Errorf("envoyproxy/ratelimit panics loading this config (the RLS would crash): %v", r)
		}
	}()
	f()
	return nil
}

// failingNode returns the pre-order index of the descriptor the RLS's validation stops at, or -1 when it stops
// before any (an empty domain). The RLS checks descriptors in pre-order, each against itself and its earlier
// siblings, and stops at the first bad one (loadDescriptors), so the tree cut after the first k nodes fails iff k
// is past that node: a binary search over k finds it.
func failingNode(name string, yr *rlsconf.YamlRoot) int {
	total := countTree(yr.Descriptors)
	lo, hi := 0, total // invariant: the cut after lo nodes loads... or lo == 0; the cut after hi nodes fails
	if load(name, &rlsconf.YamlRoot{Domain: yr.Domain}) != nil {
		return -1
	}
	for lo < hi {
		mid := (lo + hi) / 2
		n := 0
		cut := &rlsconf.YamlRoot{Domain: yr.Domain, Descriptors: cutTree(yr.Descriptors, mid, &n)}
		if load(name, cut) != nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}

func countTree(ys []rlsconf.YamlDescriptor) int {
	n := len(ys)
	for _, y := range ys {
		n += countTree(y.Descriptors)
	}
	return n
}

// cutTree copies the first k nodes of ys in pre-order (n counts the nodes taken).
func cutTree(ys []rlsconf.YamlDescriptor, k int, n *int) []rlsconf.YamlDescriptor {
	var out []rlsconf.YamlDescriptor
	for _, y := range ys {
		if *n >= k {
			break
		}
		*n++
		y.Descriptors = cutTree(y.Descriptors, k, n)
		out = append(out, y)
	}
	return out
}

// rlsError turns an RLS error into an *Error with the line of node idx (pre-order; -1: the file's root), of its
// unit or rate_limit for a unit error.
func (p *parser) rlsError(name string, err error, idx, rootLine int, doc *yaml.Node) error {
	msg := strings.TrimPrefix(err.Error(), name+": ")
	line := rootLine
	if idx >= 0 && idx < len(p.pos) {
		pos := p.pos[idx]
		line = pos.line
		if strings.Contains(msg, "rate limit unit") {
			if pos.unitLine > 0 {
				line = pos.unitLine
			} else if pos.rateLimitLine > 0 {
				line = pos.rateLimitLine
			}
		}
	}
	switch {
	case strings.HasPrefix(msg, "invalid rate limit unit"):
		msg += " (want one of SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, YEAR)"
	case strings.HasPrefix(msg, "error loading config file: "):
		// yaml.v2's own errors carry "line N: ...".
		if e, ok := yamlError(name, errors.New(strings.TrimPrefix(msg, "error loading config file: "))).(*Error); ok && e.Line > 0 {
			return e
		}
	case strings.Contains(msg, "error checking config"):
		// validateYamlKeys refuses leaf values that are not strings, integers or booleans.
		if n := firstOddScalar(doc); n != nil {
			line = n.Line
			msg += fmt.Sprintf(" (the value %q is read as %s, not a string, integer or boolean)", n.Value, strings.TrimPrefix(n.Tag, "!!"))
		}
	}
	if doc == nil && line == 0 {
		return &Error{File: name, Msg: msg + " (the file is empty)"}
	}
	return &Error{File: name, Line: line, Msg: msg}
}

// firstOddScalar returns the first scalar that yaml.v2 decodes as neither string, int nor bool.
func firstOddScalar(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!float" || n.Tag == "!!timestamp" || n.Tag == "!!binary") {
		return n
	}
	for _, c := range n.Content {
		if r := firstOddScalar(c); r != nil {
			return r
		}
	}
	return nil
}

// ParseFile reads and parses the file at path (a regular file of at most MaxFileBytes); errors name path.
func ParseFile(path string) (*Config, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readConfig reads a regular file of at most MaxFileBytes. It opens without blocking, so a FIFO is refused
// instead of waiting for a writer.
func readConfig(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: "not a regular file"}
	}
	if st.Size() > MaxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("RLS config of %d bytes is larger than the limit of %d bytes", st.Size(), MaxFileBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("RLS config is larger than the limit of %d bytes", MaxFileBytes)}
	}
	return data, nil
}

// LoadDir parses every *.yaml and *.yml file directly in dir (not recursive, sorted by name), as the RLS loads
// $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config. Hidden files (leading '.') are skipped, as with
// RUNTIME_IGNOREDOTFILES=true. A domain defined in two files is an error naming both (the RLS's "duplicate domain
// '%s' in config file" without MERGE_DOMAIN_CONFIG). A directory with no config file is an error (*NoConfigError),
// since the RLS would load nothing from it.
func LoadDir(dir string) ([]*Config, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") {
			continue
		}
		if ext := strings.ToLower(filepath.Ext(n)); ext == ".yaml" || ext == ".yml" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, noConfig(dir, ents)
	}
	sort.Strings(names)
	cfgs := make([]*Config, 0, len(names))
	for _, n := range names {
		c, err := ParseFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, c)
	}
	if _, err := ByDomain(cfgs); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// NoConfigError is LoadDir's error for a directory holding no *.yaml or *.yml file directly. Hint, when not
// empty, is a subdirectory that does hold some: the RLS reads $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config, so the
// parent of the config folder is a common mistake.
type NoConfigError struct {
	Dir  string
	Hint string
}

func (e *NoConfigError) Error() string {
	msg := fmt.Sprintf("%s: no RLS config (*.yaml or *.yml) directly in this directory", e.Dir)
	if e.Hint != "" {
		msg += fmt.Sprintf("; %s holds some: the RLS reads $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config, did you mean --rls-config %s?", e.Hint, e.Hint)
	}
	return msg
}

// noConfig builds the NoConfigError for dir, looking for config files one and two levels down (the "config"
// subfolder first, then the others in name order).
func noConfig(dir string, ents []os.DirEntry) error {
	e := &NoConfigError{Dir: dir}
	var subs []string
	for _, ent := range ents {
		if ent.IsDir() && !strings.HasPrefix(ent.Name(), ".") {
			subs = append(subs, ent.Name())
		}
	}
	sort.SliceStable(subs, func(i, j int) bool { return subs[i] == "config" && subs[j] != "config" })
	var look func(d string, depth int) string
	look = func(d string, depth int) string {
		es, err := os.ReadDir(d)
		if err != nil {
			return ""
		}
		var next []string
		for _, x := range es {
			n := x.Name()
			if strings.HasPrefix(n, ".") {
				continue
			}
			if x.IsDir() {
				next = append(next, filepath.Join(d, n))
				continue
			}
			if ext := strings.ToLower(filepath.Ext(n)); ext == ".yaml" || ext == ".yml" {
				return d
			}
		}
		if depth < 2 {
			sort.SliceStable(next, func(i, j int) bool {
				return filepath.Base(next[i]) == "config" && filepath.Base(next[j]) != "config"
			})
			for _, n := range next {
				if h := look(n, depth+1); h != "" {
					return h
				}
			}
		}
		return ""
	}
	for _, s := range subs {
		if h := look(filepath.Join(dir, s), 1); h != "" {
			e.Hint = h
			break
		}
	}
	return e
}

// ByDomain indexes configs by domain. Two configs with the same domain are an *Error naming the second file and
// the first ("duplicate domain").
func ByDomain(cfgs []*Config) (map[string]*Config, error) {
	m := make(map[string]*Config, len(cfgs))
	for _, c := range cfgs {
		if prev, ok := m[c.Domain]; ok {
			return nil, &Error{File: c.File, Msg: fmt.Sprintf("duplicate domain '%s' in config file (already defined in %s)", c.Domain, prev.File)}
		}
		m[c.Domain] = c
	}
	return m, nil
}

// FinalKey is the node's key in the RLS descriptor map: "key_value", or "key" for a default (value-less) rule
// (src/config/config_impl.go loadDescriptors).
func (d *Descriptor) FinalKey() string {
	if d.Value == "" {
		return d.Key
	}
	return d.Key + "_" + d.Value
}

// Match is the result of matching a request descriptor against a Config.
type Match struct {
	// Rule is the config node whose rate_limit applies (the node of the last entry).
	Rule *Descriptor
	// Limit is Rule.RateLimit.
	Limit *RateLimit
	// KeyPath is the matched nodes' FinalKeys joined by "." (e.g. "tenant_lab", or "remote_address" for a
	// default rule: the request value is dropped).
	KeyPath string
	// FullKey is Domain + "." + KeyPath, the key of the rule as loaded (the RLS's /rlconfig dump).
	FullKey string
	// StatsKey is the RateLimit.FullKey GetLimit returns: the key the RLS counts stats under
	// (ratelimit.service.rate_limit.<StatsKey>.*) and logs in "Limit with key %s, is in shadow_mode"
	// (src/limiter/base_limiter.go). It is FullKey, or with detailed_metric, value_to_metric or share_threshold
	// the key GetLimit builds from the request's values.
	StatsKey string
	// ShadowMode is Rule.ShadowMode.
	ShadowMode bool
}

// Match finds the rate limit the RLS applies to one request descriptor of this config's domain with the RLS's
// own GetLimit (src/config/config_impl.go): for each entry in order it looks up "key_value" in the level's map,
// then the first wildcard key (ending in "*") whose prefix matches "key_value", then "key" (the default rule, or
// any node whose "key_value" equals the entry's key); a rule applies only if it is on the node matched by the LAST
// entry; the walk stops when a matched node has no nested descriptors or nothing matches.
//
// It returns (m, true) when a finite limit applies. For an unlimited rule it returns (m, false) with
// m.Limit.Unlimited set ("descriptor is unlimited, not passing to the cache"); when nothing matches, (nil, false).
// An empty entry list matches nothing. Envoy's per-descriptor limit override is not looked at (see
// MatchDescriptor).
func (c *Config) Match(entries []descriptor.DescriptorEntry) (*Match, bool) {
	if c == nil || c.rls == nil || len(entries) == 0 {
		return nil, false
	}
	d := &commonpb.RateLimitDescriptor{Entries: make([]*commonpb.RateLimitDescriptor_Entry, len(entries))}
	es := make([]commonpb.RateLimitDescriptor_Entry, len(entries))
	for i, e := range entries {
		es[i].Key, es[i].Value = e.Key, e.Value
		d.Entries[i] = &es[i]
	}
	return c.match(d)
}

// MatchDescriptor is Match for a descriptor as Envoy sends it; its limit override, if any, is ignored.
func (c *Config) MatchDescriptor(d *commonpb.RateLimitDescriptor) (*Match, bool) {
	if c == nil || c.rls == nil || len(d.GetEntries()) == 0 {
		return nil, false
	}
	if d.GetLimit() != nil {
		d = &commonpb.RateLimitDescriptor{Entries: d.GetEntries()}
	}
	return c.match(d)
}

func (c *Config) match(d *commonpb.RateLimitDescriptor) (*Match, bool) {
	rl := c.rls.GetLimit(context.Background(), c.Domain, d)
	if rl == nil {
		return nil, false
	}
	idx, err := strconv.Atoi(strings.TrimPrefix(rl.Name, tagPrefix))
	if !strings.HasPrefix(rl.Name, tagPrefix) || err != nil || idx < 0 || idx >= len(c.rules) || c.rules[idx].RateLimit == nil {
		// Cannot happen: every rule of c.rls carries its tag.
		panic(fmt.Sprintf("rlsconfig: GetLimit returned an untagged limit %q", rl.Name))
	}
	rule := c.rules[idx]
	m := &Match{Rule: rule, Limit: rule.RateLimit, FullKey: rule.fullKey, KeyPath: strings.TrimPrefix(rule.fullKey, c.Domain+"."),
		StatsKey: rl.FullKey, ShadowMode: rule.ShadowMode}
	return m, !rule.RateLimit.Unlimited
}

// Rule is one descriptor node that carries a rate_limit, with its full key.
type Rule struct {
	// FullKey is Domain + "." + the FinalKeys from the top level down to the node, joined by "." — the key in the
	// RLS's /rlconfig dump and stats.
	FullKey    string
	Descriptor *Descriptor
}

// Rules lists every node with a rate_limit, depth first in file order (the RLS /rlconfig dump lists the same
// keys, in map order).
func (c *Config) Rules() []Rule {
	var out []Rule
	for _, d := range c.rules {
		if d.RateLimit != nil {
			out = append(out, Rule{FullKey: d.fullKey, Descriptor: d})
		}
	}
	return out
}

// parseNodes decodes the first YAML document of data (nil when there is none) within the node budget of
// internal/yamlguard, and refuses a second document.
func parseNodes(name string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(name, err)
	}
	if err := yamlguard.Check(name, &doc, yamlguard.Limits{MaxBytes: MaxFileBytes}); err != nil {
		var ge *yamlguard.Error
		if errors.As(err, &ge) {
			return nil, &Error{File: name, Line: ge.Line, Msg: ge.Msg}
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: name, Line: extra.Line, Msg: "more than one YAML document; the RLS reads only the first"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	return &doc, nil
}
