package analyze

import "testing"

// TestSectionsInDependencyOrder: every section observe runs comes after the
// sections it needs, and each name is given once, so a section never reads
// a part of Input that is not computed yet.
func TestSectionsInDependencyOrder(t *testing.T) {
	done := map[string]bool{}
	for i, s := range sections {
		if s.name == "" || s.compute == nil {
			t.Fatalf("sections[%d] = %q: a section needs a name and a compute step", i, s.name)
		}
		if done[s.name] {
			t.Errorf("section %q listed twice", s.name)
		}
		for _, n := range s.needs {
			if !done[n] {
				t.Errorf("section %q needs %q, which is not computed before it", s.name, n)
			}
		}
		done[s.name] = true
	}
	for _, want := range []string{"nginx", "receipts", "totals", "stats", "faults", "access logs", "limiters", "flows", "headers", "rls", "real rls", "arrivals", "latency"} {
		if !done[want] {
			t.Errorf("no section %q", want)
		}
	}
}
