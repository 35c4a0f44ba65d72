package rls

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The no-match line (`descriptor does not match any limit, no limits
// applied`, src/service/ratelimit.go) names no domain. With one domain
// configured and no `unknown domain` line for the descriptor, the domain is
// that one (captured 3fb7025 logs, text and JSON: line 153 is (nomatch=zzz)
// in domain rlbench, line 160 (a=b) in the unknown domain unknown_domain).
func TestNoMatchDomainFromConfig(t *testing.T) {
	for _, rel := range []string{"rls_local_3fb7025_text_debug.log", "rls_local_3fb7025_json_debug.log"} {
		f, err := os.Open(fixture(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		l, err := ParseLog(f, rel)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var nomatch, unknown *Decision
		for i := range l.Decisions {
			switch l.Decisions[i].Line {
			case 153:
				nomatch = &l.Decisions[i]
			case 160:
				unknown = &l.Decisions[i]
			}
		}
		if nomatch == nil || !nomatch.NoLimit || nomatch.Domain != "rlbench" || nomatch.DomainSource != DomainSourceConfig ||
			len(nomatch.Descriptor) != 1 || nomatch.Descriptor[0].Value != "zzz" {
			t.Errorf("%s: no-match decision %+v, want domain rlbench from the config", rel, nomatch)
		}
		if unknown == nil || unknown.Domain != "unknown_domain" || unknown.DomainSource != "unknown_domain" {
			t.Errorf("%s: unknown-domain decision %+v", rel, unknown)
		}
		// The evidence decision keeps it.
		for _, d := range l.EvidenceDecisions() {
			if d.NoLimit && d.Domain == "" {
				t.Errorf("%s: evidence decision without a domain: %+v", rel, d)
			}
		}
	}
}

// rlsLines renders messages as RLS JSON lines, one ms apart.
func rlsLines(msgs ...string) string {
	var b strings.Builder
	for i, m := range msgs {
		fmt.Fprintf(&b, `{"@message":%q,"@timestamp":"2026-11-30T09:00:00.%03dZ","level":"debug"}`+"\n", m, i)
	}
	return b.String()
}

var twoDomains = []string{"loading domain: edge", "loading descriptor: key=edge.plan_free ratelimit={requests_per_unit=3, unit=HOUR, unlimited=false, shadow_mode=false, quota_mode=false}",
	"loading domain: inventory", "loading descriptor: key=inventory.tenant_lab ratelimit={requests_per_unit=5, unit=HOUR, unlimited=false, shadow_mode=false, quota_mode=false}",
	"Successfully loaded new configuration", "Successfully loaded the initial ratelimit configs"}

// call is the lines of one ShouldRateLimit call of domain inventory with a
// no-match descriptor (tenant=<v>) and the limited (tenant=lab) at current n.
func call(v string, n int) []string {
	return []string{"got descriptor: (tenant=" + v + ")", "starting get limit lookup", "looking up key: tenant_" + v, "looking up key: tenant",
		"descriptor does not match any limit, no limits applied",
		"got descriptor: (tenant=lab)", "starting get limit lookup", "looking up key: tenant_lab", "found rate limit: tenant_lab",
		"applying limit: 5 requests per HOUR, shadow_mode: false", "starting cache lookup",
		"looking up cache key: inventory_tenant_lab_1796029200", fmt.Sprintf("cache key: inventory_tenant_lab_1796029200 current: %d", n),
		fmt.Sprintf("returning normal response: overall_code:OK  statuses:{code:OK}  statuses:{code:OK  current_limit:{requests_per_unit:5  unit:HOUR}  limit_remaining:%d}", 5-n)}
}

func parseLines(t *testing.T, msgs ...string) *Log {
	t.Helper()
	l, err := ParseLog(strings.NewReader(rlsLines(msgs...)), "rls.log")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func noLimitDomains(l *Log) []string {
	var out []string
	for _, d := range l.Decisions {
		if d.NoLimit {
			out = append(out, d.Domain+"/"+d.DomainSource)
		}
	}
	return out
}

// With two domains configured the no-match line's domain is that of its
// call's cache keys, when the log shows the call's lines on their own (one
// status per descriptor in its response); else it stays unknown ("").
func TestNoMatchDomainFromCall(t *testing.T) {
	// One call after the other: both take inventory from their call.
	l := parseLines(t, append(append(append([]string{}, twoDomains...), call("x", 1)...), call("y", 2)...)...)
	if got := fmt.Sprint(noLimitDomains(l)); got != "[inventory/call inventory/call]" {
		t.Errorf("sequential calls: %s", got)
	}
	// A no-match call on its own has no cache key: unknown.
	single := []string{"got descriptor: (tenant=z)", "starting get limit lookup", "descriptor does not match any limit, no limits applied",
		"starting cache lookup", "returning normal response: overall_code:OK  statuses:{code:OK}"}
	l = parseLines(t, append(append([]string{}, twoDomains...), single...)...)
	if got := fmt.Sprint(noLimitDomains(l)); got != "[/]" {
		t.Errorf("single no-match call: %s", got)
	}
	// Two calls interleaved: the first response has two statuses, the
	// descriptors read before it are three; nothing is inferred.
	c1, c2 := call("x", 1), single
	mixed := append([]string{}, twoDomains...)
	mixed = append(mixed, c2[:3]...)
	mixed = append(mixed, c1...)
	mixed = append(mixed, c2[3:]...)
	l = parseLines(t, mixed...)
	if got := fmt.Sprint(noLimitDomains(l)); got != "[/ /]" {
		t.Errorf("interleaved calls: %s", got)
	}
	// A second call's descriptor during the first one's cache lookup.
	mixed = append([]string{}, twoDomains...)
	mixed = append(mixed, c1[:12]...)
	mixed = append(mixed, c2[:1]...)
	mixed = append(mixed, c1[12:]...)
	l = parseLines(t, mixed...)
	if got := noLimitDomains(l); len(got) < 1 || got[0] != "/" {
		t.Errorf("descriptor during the cache lookup: %v", got)
	}
}

// The configuration in force decides: a reload to one domain makes it the
// no-match domain; a reload that fails keeps the one before.
func TestNoMatchDomainAcrossReloads(t *testing.T) {
	single := []string{"got descriptor: (tenant=z)", "starting get limit lookup", "descriptor does not match any limit, no limits applied",
		"starting cache lookup", "returning normal response: overall_code:OK  statuses:{code:OK}"}
	msgs := append([]string{}, twoDomains...)
	msgs = append(msgs, single...) // two domains: unknown
	msgs = append(msgs, "loading domain: edge", "Successfully loaded new configuration")
	msgs = append(msgs, single...) // edge
	msgs = append(msgs, "loading domain: edge", "loading domain: inventory", "Error loading new configuration: bad yaml")
	msgs = append(msgs, single...) // still edge
	msgs = append(msgs, "patching domain: inventory", "Successfully loaded new configuration")
	msgs = append(msgs, single...) // inventory
	l := parseLines(t, msgs...)
	if got := fmt.Sprint(noLimitDomains(l)); got != "[/ edge/config edge/config inventory/config]" {
		t.Errorf("domains %s", got)
	}
	// Loading lines without a success line (older RLS, a cut log): in force
	// once the RLS answers calls.
	l = parseLines(t, append([]string{"loading domain: messaging"}, single...)...)
	if got := fmt.Sprint(noLimitDomains(l)); got != "[messaging/config]" {
		t.Errorf("no success line: %s", got)
	}
	// An unknown domain wins over the configured one.
	l = parseLines(t, "loading domain: messaging", "Successfully loaded new configuration", "got descriptor: (a=b)", "starting get limit lookup",
		"unknown domain 'other'", "descriptor does not match any limit, no limits applied")
	if got := fmt.Sprint(noLimitDomains(l)); got != "[other/unknown_domain]" {
		t.Errorf("unknown domain: %s", got)
	}
}
