//go:build !unix

package attack

import "time"

// processCPU is unavailable on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
