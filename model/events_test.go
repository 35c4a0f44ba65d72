package model

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
