package evidence

import (
	"fmt"
	"sync"
	"testing"
)

// TestIDTableReleasedIndex: after releaseIndex (a loaded scenario's table)
// every ID is still found at its index, also by goroutines looking up at
// the same time (the first lookup rebuilds the index), an absent ID is not,
// and an insert after it still tells a repeated ID.
func TestIDTableReleasedIndex(t *testing.T) {
	var tab IDTable
	const n = 5000
	for i := 0; i < n; i++ {
		if _, dup := tab.insert([]byte(fmt.Sprintf("s1r1-attack-%07d", i)), i); dup {
			t.Fatalf("ID %d reported repeated", i)
		}
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
				if j, ok := tab.Lookup(fmt.Sprintf("s1r1-attack-%07d", i)); !ok || j != i {
					errs <- fmt.Sprintf("Lookup(%d) = %d, %v", i, j, ok)
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
	if j, ok := tab.Lookup("s1r1-attack-9999999"); ok {
		t.Errorf("absent ID found at %d", j)
	}
	if j, dup := tab.insert([]byte("s1r1-attack-0000042"), n); !dup || j != 42 {
		t.Errorf("insert of a repeated ID after the release = %d, %v; want 42, true", j, dup)
	}
	if j, dup := tab.insert([]byte("s1r1-attack-new"), n); dup || j != n {
		t.Errorf("insert of a new ID after the release = %d, %v; want %d, false", j, dup, n)
	}
	if j, ok := tab.Lookup("s1r1-attack-new"); !ok || j != n {
		t.Errorf("Lookup of the ID inserted after the release = %d, %v", j, ok)
	}
}
