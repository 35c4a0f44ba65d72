// Command rlbench proves whether rate limits hold: it fires a fixed set of
// request IDs at proxies, records receipts at the backend, snapshots proxy
// and rate limit service stats, and reconciles them into a verdict.
package main

import (
	"os"

	"github.com/rlbench/rlbench/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], cli.System())) }
