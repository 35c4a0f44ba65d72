package model

import "testing"

// tEvent is an Event as the tests write it: its request ID and key as
// strings, its attributes by pointer (mk turns them into an Events).
type tEvent struct {
	ID         string
	Lo, Hi     int64
	Key        string
	Attrs      *Attrs
	Outcome    Outcome
	KeyUnknown bool
}

// descriptors returns e's descriptors, nil without Attrs.
func (e *tEvent) descriptors() []Descriptor {
	if e.Attrs == nil {
		return nil
	}
	return e.Attrs.Descriptors
}

// mk builds Check's input from tevs: event j's Req is j, named by its ID.
func mk(tevs []tEvent) *Events {
	evs := &Events{}
	evs.Grow(len(tevs))
	for j, t := range tevs {
		e := Event{Lo: t.Lo, Hi: t.Hi, Req: int32(j), Outcome: t.Outcome, KeyUnknown: t.KeyUnknown, Key: evs.AddKey(t.Key)}
		if t.Attrs != nil {
			e.Attrs = evs.AddAttrs(*t.Attrs)
		}
		evs.Add(e)
	}
	evs.Name = func(req int32) string { return tevs[req].ID }
	return evs
}

// TestEventsKeysPastUint16: keys and attributes read back exactly while
// they are 0, below 65536 and past it (the column widens in place).
func TestEventsKeysPastUint16(t *testing.T) {
	var evs Events
	want := []int32{0, 0, 7, 65535, 0, 65536, 1 << 30, 3}
	for i, k := range want {
		evs.Add(Event{Lo: int64(i), Hi: int64(i), Req: int32(i), Key: k, Attrs: want[len(want)-1-i]})
	}
	for i, k := range want {
		if e := evs.At(i); e.Key != k || e.Attrs != want[len(want)-1-i] || e.Lo != int64(i) {
			t.Fatalf("event %d: key %d attrs %d lo %d, want %d %d %d", i, e.Key, e.Attrs, e.Lo, k, want[len(want)-1-i], i)
		}
	}
	var zero Events
	zero.Grow(4)
	zero.Add(Event{Lo: 1, Hi: 2})
	if e := zero.At(0); e.Key != 0 || e.Attrs != 0 || zero.keyCol.narrow != nil || zero.keyCol.wide != nil {
		t.Fatalf("all-zero keys: %+v, column %+v", e, zero.keyCol)
	}
}
