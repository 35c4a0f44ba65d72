//go:build !linux

package attack

import (
	"net"
	"sync"
)

// evloopAddr is nil: the event loop (evloop_linux.go) is Linux only.
func (fr *flowRun) evloopAddr() *net.TCPAddr { return nil }

// startLoops is never called off Linux (evloopAddr is nil).
func (fr *flowRun) startLoops(*net.TCPAddr, *sync.WaitGroup, *sync.WaitGroup, chan struct{}) {}
