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
