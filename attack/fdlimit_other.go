//go:build !unix

package attack

// fdLimits knows no descriptor limit on this OS: the default concurrency is
// then bounded by the IDs only.
func fdLimits() fdInfo { return fdInfo{} }
