package nginxrec

import "fmt"

// lineErr formats "<name>:<line>: <message>".
func lineErr(name string, line int, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
