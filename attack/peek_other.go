//go:build !unix

package attack

import "syscall"

// peekClosed cannot look at the socket on this OS: an idle connection is
// assumed alive (a dead one then gives an indeterminate "no response").
func peekClosed(syscall.RawConn) bool { return false }
