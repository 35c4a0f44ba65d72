//go:build !linux

package attack

// rawWrite writes nothing here: every byte goes through the connection's
// Write (rawwrite_linux.go has the raw system call).
func rawWrite(*hconn, []byte) (int, error) { return 0, nil }

// rawWriteAwait writes nothing here either (rawwrite_linux.go).
func rawWriteAwait(*hconn, []byte) (int, error) { return 0, nil }

// rawState is empty here (rawwrite_linux.go).
type rawState struct{}
