package evidence

import (
	"fmt"
	"sync"
	"testing"
)

// TestIDTableReleasedIndex: after releaseIndex (a loaded scenario's table)
// every ID is still found at its index, also by goroutines looking up at
// the same time (the first lookup rebuilds the index), an absent ID is not,
// and an insert after it still tells a repeated ID; in the shaped form (IDs
// out of order) and the arena form (IDs of no common shape).
func TestIDTableReleasedIndex(t *testing.T) {
	const n = 5000
	for _, tc := range []struct {
		form idForm
		id   func(i int) string
	}{
		{idShaped, func(i int) string { return fmt.Sprintf("s1r1-attack-%07d", i^1) }},
		{idArena, func(i int) string { return fmt.Sprintf("s1r1-%d-attack", i) }},
	} {
		var tab IDTable
		for i := 0; i < n; i++ {
			if _, dup := tab.insert([]byte(tc.id(i))); dup {
				t.Fatalf("ID %d reported repeated", i)
			}
		}
		if tab.form != tc.form {
			t.Fatalf("form %d, want %d", tab.form, tc.form)
		}
		tab.releaseIndex()
		if tab.slots != nil {
			t.Fatal("releaseIndex kept the index")
		}
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := 0; g < 4; g++ {
			wg.Go(func() {
				for i := g; i < n; i += 4 {
					if j, ok := tab.Lookup(tc.id(i)); !ok || j != i {
						errs <- fmt.Sprintf("form %d: Lookup(%d) = %d, %v", tc.form, i, j, ok)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if j, ok := tab.Lookup(tc.id(n + 1)); ok {
			t.Errorf("form %d: absent ID found at %d", tc.form, j)
		}
		if j, dup := tab.insert([]byte(tc.id(42))); !dup || j != 42 {
			t.Errorf("form %d: insert of a repeated ID after the release = %d, %v; want 42, true", tc.form, j, dup)
		}
		if j, dup := tab.insert([]byte("s1r1-attack-new")); dup || j != n {
			t.Errorf("form %d: insert of a new ID after the release = %d, %v; want %d, false", tc.form, j, dup, n)
		}
		if j, ok := tab.Lookup("s1r1-attack-new"); !ok || j != n {
			t.Errorf("form %d: Lookup of the ID inserted after the release = %d, %v", tc.form, j, ok)
		}
	}
}

// TestIDTableForms: IDs inserted in ID order stay a range (nothing held
// per ID, no index); IDs out of order, of several shapes, and of more
// shapes than maxIDShapes move the table to the shaped and then the arena
// form. In every form each ID reads back and is found at its index, a
// repeated one is told with the index of its first insert, and IDs that
// differ only in zero padding or lie past the range are different IDs.
func TestIDTableForms(t *testing.T) {
	var tab IDTable
	ref := map[string]int{}
	var order []string
	add := func(id string) {
		t.Helper()
		j, dup := tab.insert([]byte(id))
		if i, seen := ref[id]; seen != dup || seen && j != i || !seen && j != len(order) {
			t.Fatalf("insert(%q) = %d, %v; want %d, %v (form %d)", id, j, dup, i, seen, tab.form)
		}
		if !dup {
			ref[id] = j
			order = append(order, id)
		}
	}
	check := func(form idForm) {
		t.Helper()
		if tab.form != form {
			t.Fatalf("form %d, want %d", tab.form, form)
		}
		if tab.Len() != len(order) {
			t.Fatalf("Len %d, want %d", tab.Len(), len(order))
		}
		for i, id := range order {
			if got := tab.ID(i); got != id {
				t.Fatalf("ID(%d) = %q, want %q", i, got, id)
			}
			if got := string(tab.AppendID([]byte("x"), i)); got != "x"+id {
				t.Fatalf("AppendID(%d) = %q", i, got)
			}
			if j, ok := tab.Lookup(id); !ok || j != i {
				t.Fatalf("Lookup(%q) = %d, %v; want %d", id, j, ok, i)
			}
			if !tab.is(i, []byte(id)) || i > 0 && tab.is(i-1, []byte(id)) {
				t.Fatalf("is(%d, %q) wrong", i, id)
			}
		}
		for _, id := range []string{"r-0000", "r-10001", "r-1", "r-00001x", "", "q-0001", "r-9999999999"} {
			if _, seen := ref[id]; seen {
				continue
			}
			if j, ok := tab.Lookup(id); ok {
				t.Fatalf("absent %q found at %d (form %d)", id, j, form)
			}
		}
	}
	for i := 1; i <= 100; i++ {
		add(fmt.Sprintf("r-%04d", i))
	}
	add("r-0050") // repeated, within the range
	check(idRange)
	if tab.slots != nil || tab.num != nil || tab.arena != nil {
		t.Fatal("the range form holds columns or an index")
	}
	add("r-0102") // out of order
	add("r-0101")
	add("r-0101")
	add("r-101") // another width: another shape
	add("w-0001")
	add("r-0000000012345678901") // more digits than a number holds
	add("r-0000000012345678901")
	add("no digits")
	add("")
	check(idShaped)
	tab.releaseIndex()
	check(idShaped)
	add("r-0102")
	for i := 0; i < maxIDShapes; i++ {
		add(fmt.Sprintf("u%d-x", i))
	}
	add("r-0007")
	check(idArena)
	tab.releaseIndex()
	check(idArena)
	add("u7-x")
	add("last")
	check(idArena)
}

// TestIDTableRangeFirst: a range may start at any number, and a table
// whose first ID is repeated right away is told so.
func TestIDTableRangeFirst(t *testing.T) {
	var tab IDTable
	for _, id := range []string{"a-07", "a-08", "a-09", "a-10"} {
		if _, dup := tab.insert([]byte(id)); dup {
			t.Fatalf("%s reported repeated", id)
		}
	}
	if tab.form != idRange {
		t.Fatalf("form %d, want the range", tab.form)
	}
	if j, ok := tab.Lookup("a-09"); !ok || j != 2 {
		t.Fatalf("Lookup(a-09) = %d, %v", j, ok)
	}
	if _, ok := tab.Lookup("a-06"); ok {
		t.Fatal("a-06, before the range, found")
	}
	if j, dup := tab.insert([]byte("a-07")); !dup || j != 0 {
		t.Fatalf("insert of the first ID again = %d, %v", j, dup)
	}
}
