package model

// TEvent and MkEvents give the integration tests (package model_test)
// tEvent and mk.
type TEvent = tEvent

// MkEvents is mk.
func MkEvents(tevs []TEvent) *Events { return mk(tevs) }
