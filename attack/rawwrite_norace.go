//go:build linux && !race

package attack

// raceRead does nothing without the race detector (rawwrite_race.go).
func raceRead([]byte) {}

// raceOn is whether the race detector is on (rawwrite_race.go).
const raceOn = false
