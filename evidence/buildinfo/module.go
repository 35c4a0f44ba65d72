package buildinfo

// Module is rlbench's Go module path (go.mod's module line): the path of `go install <Module>/cmd/rlbench@latest`,
// and how a directory is recognised as a checkout of rlbench (its go.mod declares this module).
const Module = "github.com/rlbench/rlbench"
