package procs

import (
	"runtime"
	"testing"
)

// TestHolds: Serial runs on one P, Spare on one P more than before the
// holds; overlapping holds compose (Serial wins), each restore counts
// once, and the last restore brings back GOMAXPROCS from before the first
// hold. A GOMAXPROCS of the environment is left alone.
func TestHolds(t *testing.T) {
	prev := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	t.Setenv("GOMAXPROCS", "")
	want := func(what string, n int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != n {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", what, got, n)
		}
	}
	sp, procs := Spare()
	if procs != 3 {
		t.Fatalf("Spare counts loops by %d, want 3", procs)
	}
	want("one Spare hold", 4)
	sp2, procs2 := Spare()
	want("two Spare holds", 4)
	if procs2 != 3 {
		t.Fatalf("the second Spare counts loops by %d, want 3", procs2)
	}
	se := Serial()
	want("Serial over Spare", 1)
	sp()
	sp() // one restore counts once
	want("Serial and one Spare", 1)
	se()
	want("one Spare left", 4)
	sp2()
	want("no hold", 3)

	a, b := Serial(), Serial()
	want("two Serial holds", 1)
	a()
	want("one Serial hold left", 1)
	b()
	want("no hold", 3)

	t.Setenv("GOMAXPROCS", "3")
	c := Serial()
	d, n := Spare()
	want("GOMAXPROCS in the environment", 3)
	if n != 3 {
		t.Errorf("Spare counts loops by %d with GOMAXPROCS=3 in the environment", n)
	}
	c()
	d()
	want("GOMAXPROCS in the environment, restored", 3)
}
