package testfix

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for concurrent Write and reads: a sink for
// receipt, decision and access-log writers that tests read while servers run.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Bytes returns a copy of everything written so far.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// String returns everything written so far.
func (s *SyncBuffer) String() string { return string(s.Bytes()) }
