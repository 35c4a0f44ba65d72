//go:build linux && race

package attack

import (
	"runtime"
	"unsafe"
)

// raceRead tells the race detector that b was read, as syscall.Write does
// for the bytes it wrote: a raw system call is invisible to it, and a
// goroutine changing a request while it is written would go unreported.
func raceRead(b []byte) { runtime.RaceReadRange(unsafe.Pointer(&b[0]), len(b)) }

// raceOn is whether the race detector is on: the event loop then reads and
// writes through package syscall, whose race annotations order every read
// after the writes before it (as the goroutine engine's net.Conn does).
const raceOn = true
