package cli

import "io"

// exitCode is commandExitCode for tests that run a command tree of their
// own: a usage error's help hint names the root.
func exitCode(err error, stderr io.Writer) int { return commandExitCode(err, stderr, nil) }
