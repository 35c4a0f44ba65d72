// Command heapprof writes heap profiles of `rlbench analyze`'s loading and
// judging of an evidence directory (or a directory of shard directories),
// for `go tool pprof`: which columns and checks hold the memory.
//
//	go run ./bench/heapprof [-load-only] [-cpuprofile FILE] DIR PREFIX
//	go tool pprof -sample_index=inuse_space -top PREFIX.peak
//
// PREFIX.loaded is the heap after loading (after a collection); PREFIX.peak
// is the profile taken when the heap last grew by 5 % over its largest
// size sampled so far (every 50 ms), so near the peak. A heap profile shows
// what the last collection found live, with the call stack that allocated
// it. The garbage collector runs at rlbench analyze's targets
// (internal/judgegc: Tighten before loading, FitToEvidence after). It prints the largest heap sampled
// while loading and in all.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/merge"
	"github.com/rlbench/rlbench/internal/judgegc"
)

func main() {
	loadOnly := flag.Bool("load-only", false, "stop after loading the evidence")
	cpuProfile := flag.String("cpuprofile", "", "also write a CPU profile of the loading and judging to this file")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: heapprof [-load-only] [-cpuprofile FILE] DIR PREFIX")
		os.Exit(2)
	}
	dir, out := flag.Arg(0), flag.Arg(1)
	judgegc.Tighten()                 // as rlbench analyze
	runtime.MemProfileRate = 64 << 10 // finer than the default 512 KiB
	var mu sync.Mutex
	snap := func(tag string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.Create(out + "." + tag)
		if err != nil {
			fmt.Fprintln(os.Stderr, "heapprof:", err)
			os.Exit(1)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			fmt.Fprintln(os.Stderr, "heapprof:", err)
			os.Exit(1)
		}
		f.Close()
	}
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load()*21/20 {
				peak.Store(ms.HeapAlloc)
				snap("peak")
			}
		}
	}()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "heapprof:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	load := evidence.Load
	if merge.IsShardSet(dir) {
		load = merge.LoadShardSet
	}
	b, err := load(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heapprof:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "largest heap sampled while loading: %d MB\n", peak.Load()>>20)
	runtime.GC()
	snap("loaded")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "heap after loading: %d MB\n", ms.HeapAlloc>>20)
	judgegc.FitToEvidence() // as rlbench analyze
	defer judgegc.Serial()()
	if !*loadOnly {
		rep := analyze.Judge(b, analyze.Options{})
		fmt.Fprintf(os.Stderr, "status %s\n", rep.Status)
	}
	close(stop)
	<-done
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "largest heap sampled: %d MB, from the OS: %d MB\n", peak.Load()>>20, ms.Sys>>20)
	runtime.KeepAlive(b)
}
