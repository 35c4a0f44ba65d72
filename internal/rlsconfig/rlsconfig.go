// Package rlsconfig reads the YAML rate limit configuration of
// envoyproxy/ratelimit (the "RLS") and reproduces its descriptor matching as
// a pure function.
//
// The format and the rules follow envoyproxy/ratelimit src/config/config_impl.go
// (loadDescriptors, validateYamlKeys, GetLimit) as of the pinned version
// 3fb702589d36 and later:
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
// The RLS loads every *.yaml file of $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config
// (RUNTIME_APPDIRECTORY, default "config"), one domain per file; a domain may
// appear in only one file unless MERGE_DOMAIN_CONFIG is set (not modelled here).
//
// Unlike the RLS, which checks keys against one flat list of known names at every
// nesting level, Parse accepts a key only at the level where it has a meaning,
// so a misplaced key (e.g. "unit" directly under a descriptor) is an error
// rather than silently ignored. Every error names the file and the 1-based line.
package rlsconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/evidence"
)

// Config is one RLS configuration file: one domain and its descriptor tree.
type Config struct {
	// Domain is the rate limit domain (RateLimitRequest.domain), never empty.
	Domain string
	// Descriptors are the top-level descriptor rules in file order.
	Descriptors []*Descriptor
	// File is the name the config was parsed under (a path for LoadDir).
	File string
}

// Descriptor is one node of the descriptor tree: it matches one entry
// (key, value) of a request descriptor at its depth.
type Descriptor struct {
	// Key is the entry key to match, never empty.
	Key string
	// Value is the entry value to match. Empty means the default rule, which
	// matches any value of Key that has no rule of its own. A value ending in
	// "*" matches by prefix (RLS wildcard keys).
	Value string
	// RateLimit is the limit applied when a request descriptor ends at this
	// node; nil when the node only groups nested descriptors.
	RateLimit *RateLimit
	// ShadowMode: hits are counted and logged, but the status is forced to OK.
	ShadowMode bool
	// DetailedMetric: stats key uses the request's values (RLS detailed_metric).
	DetailedMetric bool
	// ValueToMetric: stats key includes the request value for this level
	// (RLS value_to_metric, 2025-11).
	ValueToMetric bool
	// ShareThreshold: wildcard values share one counter (RLS share_threshold);
	// only valid on a wildcard value. Parsed, not applied by the lab server.
	ShareThreshold bool
	// QuotaMode is the RLS quota_mode flag (2026-01); parsed and kept, not applied.
	QuotaMode bool
	// Descriptors are the nested rules for the next entry of the request.
	Descriptors []*Descriptor
	// Line is the 1-based line of the descriptor in Config.File, 0 if built in code.
	Line int
}

// RateLimit is a descriptor's rate_limit block.
type RateLimit struct {
	// Unit is the canonical upper-case unit name (SECOND, MINUTE, HOUR, DAY,
	// WEEK, MONTH, YEAR); empty when Unlimited.
	Unit string
	// RequestsPerUnit is the number of hits allowed per fixed window of one Unit.
	// 0 is accepted (as by the RLS): every hit is over the limit.
	RequestsPerUnit uint32
	// Unlimited: the descriptor matches but is never limited or counted.
	Unlimited bool
	// Name is the optional rule name used by other rules' Replaces.
	Name string
	// Replaces lists rule names this limit replaces when both match a request.
	Replaces []string
}

// Error is a configuration error located in a file. Line is 0 when the error
// concerns the whole file (e.g. a missing domain) or a duplicate domain.
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

// unitSeconds maps canonical unit names to window lengths in seconds, as in
// envoyproxy/ratelimit src/utils/utilities.go UnitToDivider (MONTH is 30 days,
// YEAR 365 days).
var unitSeconds = map[string]int64{
	"SECOND": 1,
	"MINUTE": 60,
	"HOUR":   3600,
	"DAY":    86400,
	"WEEK":   604800,
	"MONTH":  2592000,
	"YEAR":   31536000,
}

// UnitSeconds returns the fixed-window length in seconds of an RLS unit name
// (case-insensitive): SECOND 1, MINUTE 60, HOUR 3600, DAY 86400, WEEK 604800,
// MONTH 2592000, YEAR 31536000 (envoyproxy/ratelimit UnitToDivider). It returns
// 0 for an unknown unit.
func UnitSeconds(unit string) int64 {
	return unitSeconds[strings.ToUpper(unit)]
}

// Parse parses one RLS configuration file. name is used in errors (the file
// path, or a source name). Errors are *Error values naming name and the line:
// YAML syntax errors, unknown or misplaced keys, duplicate keys, wrong value
// types, empty domain or descriptor key, invalid unit, a unit given with
// unlimited, duplicate descriptor composite keys at one level, bad replaces,
// share_threshold without a wildcard value, more than one YAML document.
func Parse(name string, data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: name, Msg: "config file cannot have empty domain (file is empty)"}
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: name, Line: extra.Line, Msg: "more than one YAML document; the RLS reads only the first"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	p := &parser{file: name}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	cfg := &Config{File: name}
	if isNull(root) {
		return nil, &Error{File: name, Line: root.Line, Msg: "config file cannot have empty domain"}
	}
	err := p.mapping(root, "config file", map[string]func(*yaml.Node) error{
		"domain": func(v *yaml.Node) error { return p.str(v, "domain", &cfg.Domain) },
		"descriptors": func(v *yaml.Node) error {
			var err error
			cfg.Descriptors, err = p.descriptors(v)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if cfg.Domain == "" {
		return nil, &Error{File: name, Line: root.Line, Msg: "config file cannot have empty domain"}
	}
	if err := checkTree(name, cfg.Domain+".", cfg.Descriptors); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParseFile reads and parses the file at path; errors name path.
func ParseFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// LoadDir parses every *.yaml and *.yml file directly in dir (not recursive,
// sorted by name), as the RLS loads $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config.
// Hidden files (leading '.') are skipped, as with RUNTIME_IGNOREDOTFILES=true.
// A domain defined in two files is an error naming both (the RLS's "duplicate
// domain '%s' in config file" without MERGE_DOMAIN_CONFIG). A directory with
// no config file yields an empty slice and no error.
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

// ByDomain indexes configs by domain. Two configs with the same domain are an
// *Error naming the second file and the first ("duplicate domain").
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

// FinalKey is the node's key in the RLS descriptor map: "key_value", or
// "key" for a default (value-less) rule.
func (d *Descriptor) FinalKey() string {
	if d.Value == "" {
		return d.Key
	}
	return d.Key + "_" + d.Value
}

// wildcard reports whether the node's FinalKey ends in "*" (RLS wildcardKeys).
func (d *Descriptor) wildcard() bool {
	return strings.HasSuffix(d.Value, "*") || (d.Value == "" && strings.HasSuffix(d.Key, "*"))
}

// checkTree applies the RLS's semantic checks (loadDescriptors) that need the
// whole level: duplicate composite keys, unit vs unlimited, replaces, share_threshold.
func checkTree(file, parent string, ds []*Descriptor) error {
	seen := map[string]bool{}
	for _, d := range ds {
		fk := d.FinalKey()
		full := parent + fk
		if seen[fk] {
			return &Error{File: file, Line: d.Line, Msg: fmt.Sprintf("duplicate descriptor composite key '%s'", full)}
		}
		seen[fk] = true
		if d.ShareThreshold && !d.wildcard() {
			return &Error{File: file, Line: d.Line, Msg: fmt.Sprintf("share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", fk)}
		}
		if rl := d.RateLimit; rl != nil {
			for _, r := range rl.Replaces {
				if r == "" {
					return &Error{File: file, Line: d.Line, Msg: "should not have an empty replaces entry"}
				}
				if r == rl.Name {
					return &Error{File: file, Line: d.Line, Msg: "replaces should not contain name of same descriptor"}
				}
			}
		}
		if err := checkTree(file, full+".", d.Descriptors); err != nil {
			return err
		}
	}
	return nil
}

type parser struct{ file string }

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

func yamlError(name string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	// go-yaml syntax errors read "yaml: line N: ..."
	if strings.HasPrefix(msg, "line ") {
		var n int
		if _, e := fmt.Sscanf(msg, "line %d:", &n); e == nil {
			line = n
			if i := strings.Index(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
		}
	}
	return &Error{File: name, Line: line, Msg: "error loading config file: " + msg}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("scalar %q", n.Value)
	}
	return "a document"
}

// mapping walks a mapping node, rejecting unknown and duplicate keys, and
// calls the handler of each known key with its value node.
func (p *parser) mapping(n *yaml.Node, what string, fields map[string]func(*yaml.Node) error) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "%s must be a mapping, found %s", what, kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return p.errf(k, "config error, key is not of type string: %s", kindName(k))
		}
		fn, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for f := range fields {
				known = append(known, f)
			}
			sort.Strings(known)
			return p.errf(k, "config error, unknown key '%s' in %s (allowed: %s)", k.Value, what, strings.Join(known, ", "))
		}
		if prev, dup := seen[k.Value]; dup {
			return p.errf(k, "duplicate key '%s' in %s (first at line %d)", k.Value, what, prev)
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// str reads a scalar as a string; null leaves dst empty. Numbers and booleans
// are taken as their text, as yaml.v2 does for the RLS's string fields.
func (p *parser) str(v *yaml.Node, key string, dst *string) error {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.ScalarNode {
		return p.errf(v, "'%s' must be a string, found %s", key, kindName(v))
	}
	*dst = v.Value
	return nil
}

func (p *parser) boolean(v *yaml.Node, key string, dst *bool) error {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.ScalarNode {
		return p.errf(v, "'%s' must be true or false, found %s", key, kindName(v))
	}
	if err := v.Decode(dst); err != nil {
		return p.errf(v, "'%s' must be true or false, found %q", key, v.Value)
	}
	return nil
}

func (p *parser) descriptors(v *yaml.Node) ([]*Descriptor, error) {
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.errf(v, "'descriptors' must be a list, found %s", kindName(v))
	}
	out := make([]*Descriptor, 0, len(v.Content))
	for _, item := range v.Content {
		d, err := p.descriptor(item)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *parser) descriptor(n *yaml.Node) (*Descriptor, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d := &Descriptor{Line: n.Line}
	err := p.mapping(n, "descriptor", map[string]func(*yaml.Node) error{
		"key":   func(v *yaml.Node) error { return p.str(v, "key", &d.Key) },
		"value": func(v *yaml.Node) error { return p.str(v, "value", &d.Value) },
		"rate_limit": func(v *yaml.Node) error {
			if isNull(v) {
				return nil
			}
			rl, err := p.rateLimit(v)
			d.RateLimit = rl
			return err
		},
		"shadow_mode":     func(v *yaml.Node) error { return p.boolean(v, "shadow_mode", &d.ShadowMode) },
		"detailed_metric": func(v *yaml.Node) error { return p.boolean(v, "detailed_metric", &d.DetailedMetric) },
		"value_to_metric": func(v *yaml.Node) error { return p.boolean(v, "value_to_metric", &d.ValueToMetric) },
		"share_threshold": func(v *yaml.Node) error { return p.boolean(v, "share_threshold", &d.ShareThreshold) },
		"quota_mode":      func(v *yaml.Node) error { return p.boolean(v, "quota_mode", &d.QuotaMode) },
		"descriptors": func(v *yaml.Node) error {
			var err error
			d.Descriptors, err = p.descriptors(v)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if d.Key == "" {
		return nil, p.errf(n, "descriptor has empty key")
	}
	return d, nil
}

func (p *parser) rateLimit(n *yaml.Node) (*RateLimit, error) {
	rl := &RateLimit{}
	var unit string
	var unitNode *yaml.Node
	err := p.mapping(n, "rate_limit", map[string]func(*yaml.Node) error{
		"unit": func(v *yaml.Node) error { unitNode = v; return p.str(v, "unit", &unit) },
		"requests_per_unit": func(v *yaml.Node) error {
			if isNull(v) {
				return nil
			}
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				return p.errf(v, "'requests_per_unit' must be an integer in [0, 4294967295], found %s", kindName(v))
			}
			if err := v.Decode(&rl.RequestsPerUnit); err != nil {
				return p.errf(v, "'requests_per_unit' must be an integer in [0, 4294967295], found %q", v.Value)
			}
			return nil
		},
		"unlimited": func(v *yaml.Node) error { return p.boolean(v, "unlimited", &rl.Unlimited) },
		"name":      func(v *yaml.Node) error { return p.str(v, "name", &rl.Name) },
		"replaces": func(v *yaml.Node) error {
			if isNull(v) {
				return nil
			}
			if v.Kind != yaml.SequenceNode {
				return p.errf(v, "'replaces' must be a list of {name: ...}, found %s", kindName(v))
			}
			for _, item := range v.Content {
				var name string
				if err := p.mapping(item, "replaces entry", map[string]func(*yaml.Node) error{
					"name": func(v *yaml.Node) error { return p.str(v, "name", &name) },
				}); err != nil {
					return err
				}
				rl.Replaces = append(rl.Replaces, name)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	canon := strings.ToUpper(unit)
	_, valid := unitSeconds[canon]
	switch {
	case rl.Unlimited && unit != "":
		// The RLS rejects a valid unit with unlimited and ignores an invalid
		// one; both are rejected here.
		return nil, p.errf(unitNode, "should not specify rate limit unit when unlimited (unit '%s')", unit)
	case !rl.Unlimited && !valid:
		line := n
		if unitNode != nil {
			line = unitNode
		}
		return nil, p.errf(line, "invalid rate limit unit '%s' (want one of SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, YEAR)", unit)
	}
	if !rl.Unlimited {
		rl.Unit = canon
	}
	return rl, nil
}

// Match is the result of matching a request descriptor against a Config.
type Match struct {
	// Rule is the config node whose rate_limit applies (the node of the last entry).
	Rule *Descriptor
	// Limit is Rule.RateLimit.
	Limit *RateLimit
	// Path holds the config node matched by each request entry, in order.
	Path []*Descriptor
	// KeyPath is the matched nodes' FinalKeys joined by "." (e.g. "tenant_lab",
	// or "remote_address" for a default rule: the request value is dropped).
	KeyPath string
	// FullKey is Domain + "." + KeyPath, the RLS's RateLimit.FullKey, which is
	// the stats scope ratelimit.service.rate_limit.<FullKey>.* and the key in
	// "Limit with key %s, is in shadow_mode".
	FullKey string
	// StatsKey is the key the RLS counts stats under: FullKey, or with
	// detailed_metric on Rule Domain + "." + the request's key_value entries,
	// or with value_to_metric on a level that level's request value included.
	StatsKey string
	// ShadowMode is Rule.ShadowMode.
	ShadowMode bool
}

// Match finds the rate limit the RLS applies to one request descriptor of
// this config's domain, following envoyproxy/ratelimit config_impl.go GetLimit:
// for each entry in order it looks up the child "key_value", then the first
// wildcard child whose value prefix matches, then the default child "key";
// a rule applies only if it is on the node matched by the LAST entry (a
// request with more entries than the matched depth gets no limit: "request
// depth does not match config depth"); the walk stops when a matched node has
// no nested descriptors or nothing matches.
//
// It returns (m, true) when a finite limit applies. For an unlimited rule it
// returns (m, false) with m.Limit.Unlimited set ("descriptor is unlimited, not
// passing to the cache"); when nothing matches, (nil, false). An empty entry
// list matches nothing.
func (c *Config) Match(entries []evidence.DescriptorEntry) (*Match, bool) {
	if c == nil || len(entries) == 0 {
		return nil, false
	}
	level := c.Descriptors
	path := make([]*Descriptor, 0, len(entries))
	var rule *Descriptor
	for i, e := range entries {
		next, _ := lookup(level, e)
		if next == nil {
			break
		}
		path = append(path, next)
		if next.RateLimit != nil && i == len(entries)-1 {
			rule = next
		}
		if len(next.Descriptors) == 0 {
			break
		}
		level = next.Descriptors
	}
	if rule == nil {
		return nil, false
	}
	// rule is on the last entry, so path has one node per entry.
	m := &Match{Rule: rule, Limit: rule.RateLimit, Path: path, ShadowMode: rule.ShadowMode}
	keys := make([]string, len(path))
	for i, d := range path {
		keys[i] = d.FinalKey()
	}
	m.KeyPath = strings.Join(keys, ".")
	m.FullKey = c.Domain + "." + m.KeyPath
	m.StatsKey = statsKey(c.Domain, entries, path, rule)
	return m, !rule.RateLimit.Unlimited
}

// lookup returns the child of level matching e, as GetLimit does with its
// map of FinalKeys: first the node whose FinalKey equals "key_value", then the
// first wildcard node (FinalKey ending in "*") whose FinalKey without the "*"
// prefixes "key_value", then the default node whose FinalKey is "key". how is
// "value", "wildcard" or "default".
func lookup(level []*Descriptor, e evidence.DescriptorEntry) (*Descriptor, string) {
	for _, d := range level {
		if finalKeyEq(d, e) {
			return d, "value"
		}
	}
	for _, d := range level {
		if d.wildcard() && prefixConcat(strings.TrimSuffix(d.FinalKey(), "*"), e.Key, e.Value) {
			return d, "wildcard"
		}
	}
	for _, d := range level {
		if d.Value == "" && d.Key == e.Key {
			return d, "default"
		}
	}
	return nil, ""
}

// finalKeyEq reports whether d.FinalKey() == e.Key+"_"+e.Value, allocating
// only in the rare case where the split point differs (e.g. config key "a_b"
// without value against request a=b, which the RLS's map also matches).
func finalKeyEq(d *Descriptor, e evidence.DescriptorEntry) bool {
	if d.Value == "" {
		return len(d.Key) == len(e.Key)+1+len(e.Value) && prefixConcat(d.Key, e.Key, e.Value)
	}
	if len(d.Key)+len(d.Value) != len(e.Key)+len(e.Value) {
		return false
	}
	if d.Key == e.Key {
		return d.Value == e.Value
	}
	return prefixConcat(d.FinalKey(), e.Key, e.Value)
}

// prefixConcat reports whether a+"_"+b has prefix p, without allocating.
func prefixConcat(p, a, b string) bool {
	if len(p) > len(a)+1+len(b) {
		return false
	}
	for i := 0; i < len(p); i++ {
		var c byte
		switch {
		case i < len(a):
			c = a[i]
		case i == len(a):
			c = '_'
		default:
			c = b[i-len(a)-1]
		}
		if p[i] != c {
			return false
		}
	}
	return true
}

func entryKey(e evidence.DescriptorEntry) string {
	if e.Value == "" {
		return e.Key
	}
	return e.Key + "_" + e.Value
}

// statsKey reproduces the RLS's stats key choice (GetLimit, detailed_metric
// and value_to_metric handling).
func statsKey(domain string, entries []evidence.DescriptorEntry, path []*Descriptor, rule *Descriptor) string {
	var b strings.Builder
	b.WriteString(domain)
	if rule.DetailedMetric {
		for i, e := range entries {
			b.WriteByte('.')
			d := path[i]
			if _, how := lookupHow(d, e); how == "wildcard" && d.ShareThreshold {
				b.WriteString(d.FinalKey())
			} else {
				b.WriteString(e.Key + "_" + e.Value)
			}
		}
		return b.String()
	}
	for i, e := range entries {
		b.WriteByte('.')
		d := path[i]
		_, how := lookupHow(d, e)
		switch {
		case how == "wildcard" && !d.ShareThreshold && d.ValueToMetric:
			b.WriteString(entryKey(e))
		case how == "wildcard":
			b.WriteString(d.FinalKey())
		case how == "value":
			b.WriteString(entryKey(e))
		case d.ValueToMetric:
			b.WriteString(entryKey(e))
		default:
			b.WriteString(e.Key)
		}
	}
	return b.String()
}

// lookupHow tells how node d matched entry e (see lookup).
func lookupHow(d *Descriptor, e evidence.DescriptorEntry) (*Descriptor, string) {
	return lookup([]*Descriptor{d}, e)
}

// Rule is one descriptor node that carries a rate_limit, with its full key.
type Rule struct {
	// FullKey is Domain + "." + the FinalKeys from the top level down to the
	// node, joined by "." — the key in the RLS's /rlconfig dump and stats.
	FullKey    string
	Descriptor *Descriptor
}

// Rules lists every node with a rate_limit, depth first in file order (the
// RLS /rlconfig dump lists the same keys, in map order).
func (c *Config) Rules() []Rule {
	var out []Rule
	var walk func(prefix string, ds []*Descriptor)
	walk = func(prefix string, ds []*Descriptor) {
		for _, d := range ds {
			k := prefix + d.FinalKey()
			if d.RateLimit != nil {
				out = append(out, Rule{FullKey: k, Descriptor: d})
			}
			walk(k+".", d.Descriptors)
		}
	}
	walk(c.Domain+".", c.Descriptors)
	return out
}
