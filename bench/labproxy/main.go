// Command labproxy is the helper of bench/proxy.sh: it runs ONE lab proxy
// (internal/lab/proxy) in front of a given upstream, so that the proxy's own
// CPU per request can be read from this process alone, and prints
// {"url":..,"admin":..,"pid":..} on stdout. It stops on SIGTERM or SIGINT.
// It is a benchmark tool, not part of rlbench.
//
//	labproxy -upstream http://127.0.0.1:PORT [-local] [-access-log FILE] [-cpuprofile FILE]
//	labproxy freeport      print a 127.0.0.1 port that was free
//
// -local enables the local rate limit filter with a bucket large enough
// never to reject (so the filter's work is measured, not its 429s);
// -access-log writes the proxy's JSON access log to FILE.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/lab/proxy"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "freeport" {
		// A port that was free a moment ago; the caller verifies that its
		// own process is the one listening on it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fail(err)
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		_ = ln.Close()
		return
	}
	upstream := flag.String("upstream", "", "upstream base URL (required)")
	local := flag.Bool("local", false, "enable the local rate limit filter (a bucket that never empties)")
	accessLog := flag.String("access-log", "", "write the JSON access log to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := safefile.Create(*cpuProfile, 0o666)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "labproxy: -upstream is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg := proxy.Config{Name: "proxy-a", Upstream: *upstream}
	if *local {
		on := 100.0
		cfg.Local = &proxy.LocalRateLimit{MaxTokens: 1 << 30, TokensPerFill: 1 << 30, FillInterval: proxy.Duration(time.Second), FilterEnabled: &on, FilterEnforced: &on}
	}
	if *accessLog != "" {
		f, err := safefile.Create(*accessLog, 0o666)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		cfg.AccessLog = f
	}
	p, err := proxy.Start(ctx, cfg)
	if err != nil {
		fail(err)
	}
	line, _ := json.Marshal(map[string]any{"url": p.URL(), "admin": p.AdminURL(), "pid": os.Getpid()})
	fmt.Println(string(line))
	<-ctx.Done()
	_ = p.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "labproxy:", err)
	os.Exit(1)
}
