package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/rlsconfig"
)

// anyValue stands for a request-chosen descriptor value; it matches only
// default (value-less) RLS rules.
const anyValue = "\x00rlbench-lint-any\x00"

// maxCombos bounds the value combinations tried for one descriptor.
const maxCombos = 512

// crossCheck compares the filters' domains and the routes' descriptors with
// opts.RLSConfigs (envoyproxy/ratelimit matching via rlsconfig.Match).
func (l *linter) crossCheck() {
	cfgs := l.opts.RLSConfigs
	if len(cfgs) == 0 {
		return
	}
	byDomain := map[string][]*rlsconfig.Config{}
	var domains []string
	for _, c := range cfgs {
		if c == nil {
			continue
		}
		if _, ok := byDomain[c.Domain]; !ok {
			domains = append(domains, c.Domain)
		}
		byDomain[c.Domain] = append(byDomain[c.Domain], c)
	}
	sort.Strings(domains)
	used := map[string]bool{}      // domains some filter or route uses
	suggested := map[string]bool{} // domains named in a did-you-mean
	filterDomains := map[string]bool{}
	for _, f := range l.filters {
		filterDomains[f.domain] = true
	}
	for _, f := range l.filters {
		used[f.domain] = true
		if _, ok := byDomain[f.domain]; ok || f.domain == "" { // "" is E_VALIDATE
			continue
		}
		msg := fmt.Sprintf("domain %q has no RLS config (known domains: %s); the RLS answers OK to every descriptor of an unknown domain, so nothing is limited", f.domain, strings.Join(quoteAll(domains), ", "))
		if s, d := closest(f.domain, domains); s != "" {
			suggested[s] = true
			msg += fmt.Sprintf(". Did you mean %q (%s)?", s, diffWord(d))
		}
		l.addAt(f.file, f.line, f.path, CodeDomainUnknown, LevelError, msg)
	}
	reached := map[*rlsconfig.Descriptor]bool{}
	excused := map[*rlsconfig.Descriptor]bool{} // named in a did-you-mean
	for _, u := range l.descs {
		used[u.domain] = true
		cs := byDomain[u.domain]
		if len(cs) == 0 {
			if !filterDomains[u.domain] { // a per-route domain override
				msg := fmt.Sprintf("domain %q (set per route) has no RLS config (known domains: %s); nothing is limited", u.domain, strings.Join(quoteAll(domains), ", "))
				if s, d := closest(u.domain, domains); s != "" {
					suggested[s] = true
					msg += fmt.Sprintf(". Did you mean %q (%s)?", s, diffWord(d))
				}
				l.addAt(u.file, u.line, u.path, CodeDomainUnknown, LevelError, msg)
			}
			continue
		}
		matched := false
		for _, c := range cs {
			for _, entries := range combos(c, u.entries) {
				if m, _ := c.Match(entries); m != nil {
					matched = true
					reached[m.Rule] = true
				}
			}
		}
		if matched {
			continue
		}
		msg, near := explainUnmatched(cs[0], u.entries)
		for _, d := range near {
			markSubtree(d, excused)
		}
		l.addAt(u.file, u.line, u.path, CodeDescriptorUnmatched, LevelError,
			fmt.Sprintf("descriptor %s matches no rule with a rate_limit in domain %q (%s), so it is never limited: %s", describe(u.entries), u.domain, cs[0].File, msg))
	}
	for _, d := range domains {
		for _, c := range byDomain[d] {
			if !used[d] {
				if !suggested[d] && len(l.filters) > 0 {
					l.addAt(c.File, 0, "domain", CodeDomainUnused, LevelInfo, fmt.Sprintf("no linted ratelimit filter uses domain %q", d))
				}
				continue
			}
			paths := descriptorPaths(c)
			for _, r := range c.Rules() {
				if reached[r.Descriptor] || excused[r.Descriptor] {
					continue
				}
				l.addAt(c.File, r.Descriptor.Line, paths[r.Descriptor], CodeRuleUnreachable, LevelWarning,
					fmt.Sprintf("rule %s (%s) is never used: no linted route produces a descriptor that matches it", r.FullKey, limitString(r.Descriptor.RateLimit)))
			}
		}
	}
}

func limitString(rl *rlsconfig.RateLimit) string {
	if rl == nil {
		return "no limit"
	}
	if rl.Unlimited {
		return "unlimited"
	}
	return fmt.Sprintf("%d per %s", rl.RequestsPerUnit, rl.Unit)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func diffWord(d int) string {
	if d == 1 {
		return "1 character differs"
	}
	return fmt.Sprintf("%d characters differ", d)
}

// closest returns the candidate within edit distance 2 of s (the smallest).
func closest(s string, cands []string) (string, int) {
	best, bestD := "", 3
	for _, c := range cands {
		if d := levenshtein(s, c); d < bestD && d > 0 {
			best, bestD = c, d
		}
	}
	return best, bestD
}

// combos expands variable entries into anyValue plus every value a rule of
// the same key has anywhere in c (a client may send exactly that value).
func combos(c *rlsconfig.Config, es []entryT) [][]descriptor.DescriptorEntry {
	valuesByKey := map[string][]string{}
	var walk func(ds []*rlsconfig.Descriptor)
	walk = func(ds []*rlsconfig.Descriptor) {
		for _, d := range ds {
			if d.Value != "" {
				valuesByKey[d.Key] = append(valuesByKey[d.Key], strings.TrimSuffix(d.Value, "*"))
			}
			walk(d.Descriptors)
		}
	}
	walk(c.Descriptors)
	out := [][]descriptor.DescriptorEntry{nil}
	for _, e := range es {
		vals := []string{e.value}
		if e.variable {
			vals = append([]string{anyValue}, valuesByKey[e.key]...)
		}
		var next [][]descriptor.DescriptorEntry
		for _, prefix := range out {
			for _, v := range vals {
				if len(next) >= maxCombos {
					break
				}
				row := append(append([]descriptor.DescriptorEntry(nil), prefix...), descriptor.DescriptorEntry{Key: e.key, Value: v})
				next = append(next, row)
			}
		}
		out = next
	}
	return out
}

// explainUnmatched walks c's tree along es to say where matching stops, and
// returns the nodes it suggests instead (for folding W_RULE_UNREACHABLE).
// This is diagnosis only; the verdict comes from rlsconfig.Match.
func explainUnmatched(c *rlsconfig.Config, es []entryT) (string, []*rlsconfig.Descriptor) {
	paths := descriptorPaths(c)
	level := c.Descriptors
	var node *rlsconfig.Descriptor
	for i, e := range es {
		var found *rlsconfig.Descriptor
		for _, d := range level {
			if d.Key != e.key {
				continue
			}
			if d.Value == "" || (!e.variable && (d.Value == e.value || (strings.HasSuffix(d.Value, "*") && strings.HasPrefix(e.value, strings.TrimSuffix(d.Value, "*"))))) {
				found = d
				if d.Value != "" {
					break
				}
			}
		}
		if found == nil {
			where := "at the top level"
			if node != nil {
				where = "under rule " + nodeString(node) + " (" + paths[node] + ")"
			}
			msg := fmt.Sprintf("entry %d %s has no rule %s", i+1, e, where)
			if len(level) == 0 {
				return msg, nil
			}
			best, bestD := (*rlsconfig.Descriptor)(nil), 3
			for _, d := range level {
				dist := levenshtein(e.key, d.Key)
				if !e.variable || d.Value != "" {
					dist += levenshtein(e.value, d.Value)
				}
				if dist < bestD {
					best, bestD = d, dist
				}
			}
			if best != nil {
				return msg + fmt.Sprintf("; did you mean %s (%s, line %d)? %s", nodeString(best), paths[best], best.Line, strings.ToUpper(diffWord(bestD)[:1])+diffWord(bestD)[1:]), []*rlsconfig.Descriptor{best}
			}
			var have []string
			for _, d := range level {
				have = append(have, nodeString(d))
			}
			return msg + "; rules there: " + strings.Join(have, ", "), nil
		}
		node = found
		if i < len(es)-1 && len(found.Descriptors) == 0 {
			return fmt.Sprintf("rule %s (%s) has no nested descriptors, but the descriptor has %d more entries (%s); envoyproxy/ratelimit applies no limit when the descriptor is deeper than the rule", nodeString(found), paths[found], len(es)-1-i, describe(es[i+1:])), []*rlsconfig.Descriptor{found}
		}
		level = found.Descriptors
	}
	if node != nil && node.RateLimit == nil {
		var keys []string
		for _, d := range node.Descriptors {
			keys = append(keys, nodeString(d))
		}
		return fmt.Sprintf("rule %s (%s) has no rate_limit of its own; its nested rules need one more entry: %s", nodeString(node), paths[node], strings.Join(keys, ", ")), []*rlsconfig.Descriptor{node}
	}
	return "no rule applies", nil
}

func nodeString(d *rlsconfig.Descriptor) string {
	if d.Value == "" {
		return d.Key + " (any value)"
	}
	return fmt.Sprintf("%s=%q", d.Key, d.Value)
}

// descriptorPaths names each node of c by its path, e.g. "descriptors[0].descriptors[1]".
func descriptorPaths(c *rlsconfig.Config) map[*rlsconfig.Descriptor]string {
	out := map[*rlsconfig.Descriptor]string{}
	var walk func(prefix string, ds []*rlsconfig.Descriptor)
	walk = func(prefix string, ds []*rlsconfig.Descriptor) {
		for i, d := range ds {
			p := fmt.Sprintf("%sdescriptors[%d]", prefix, i)
			out[d] = p
			walk(p+".", d.Descriptors)
		}
	}
	walk("", c.Descriptors)
	return out
}

func markSubtree(d *rlsconfig.Descriptor, set map[*rlsconfig.Descriptor]bool) {
	set[d] = true
	for _, c := range d.Descriptors {
		markSubtree(c, set)
	}
}
