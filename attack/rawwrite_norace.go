//go:build linux && !race

package attack

// raceRead does nothing without the race detector (rawwrite_race.go).
func raceRead([]byte) {}
