package analyze

import "testing"

// TestReceiptCountsPastAByte: a request with 300 receipts counts 300 (its
// byte saturates at 255 and the rest go to the map), its neighbours stay
// at their counts, and several() sees a count of two.
func TestReceiptCountsPastAByte(t *testing.T) {
	c := newReceiptCounts(3)
	if c.several() {
		t.Fatal("several() with no receipts")
	}
	for range 300 {
		c.inc(1)
	}
	c.inc(2)
	if got := [3]int32{c.at(0), c.at(1), c.at(2)}; got != [3]int32{0, 300, 1} {
		t.Fatalf("counts %v, want [0 300 1]", got)
	}
	if !c.several() {
		t.Fatal("several() false with a request of 300 receipts")
	}
	d := newReceiptCounts(2)
	d.inc(0)
	d.inc(0)
	if !d.several() || d.at(0) != 2 {
		t.Fatalf("two receipts: at %d, several %v", d.at(0), d.several())
	}
}
