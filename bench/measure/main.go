// Command measure is the helper of bench/compare.sh: it runs a client
// process and reports its wall time, CPU and peak memory; summarises an
// rlbench requests.jsonl (rate, local errors, pacing error, send spread);
// runs vegeta as a library (throughput, bursts, fixed rates) for the
// vegeta-library column; and prints the comparison table with medians and
// ratios. It is a benchmark tool, not part of rlbench.
//
//	measure run OUT.json -- CMD ARGS...    run CMD, write {wall_ns,cpu_ns,maxrss_kb,exit}
//	measure jsonl DIR [RATE]               summarise DIR/requests.jsonl (+ attack.json)
//	measure vegeta -n N -c C [-rate R] [-duration D] URL
//	measure freeport                       print a free 127.0.0.1 port
//	measure get FILE KEY                   print a top-level value of a JSON object
//	measure floor [-rate R] [-duration D]  the pacing error of a zero-cost sleeper (the machine's floor)
//	measure burstfloor [-n N] URL          the send spread of a zero-cost burst sender (the machine's floor)
//	measure landed REPORT.json             the width a plan's burst landed over (analyze --json's landed_within check): MS WITHIN(1|0)
//	measure table RESULTS.jsonl            print the comparison table
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence/safefile"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: measure run|jsonl|vegeta|freeport|get|floor|burstfloor|landed|table ... (see the doc comment)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "jsonl":
		err = summarise(os.Args[2:])
	case "vegeta":
		err = vegetaLib(os.Args[2:])
	case "freeport":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Println(ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
	case "get":
		err = get(os.Args[2:])
	case "floor":
		err = sleepFloor(os.Args[2:])
	case "burstfloor":
		err = burstFloor(os.Args[2:])
	case "landed":
		err = landed(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

// runCmd runs a command and reports its resource use (getrusage of the
// child via ProcessState).
func runCmd(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		return errors.New("usage: measure run OUT.json -- CMD ARGS...")
	}
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return err
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	out := map[string]any{"wall_ns": wall.Nanoseconds(), "exit": code}
	if ru != nil {
		out["cpu_ns"] = ru.Utime.Nano() + ru.Stime.Nano()
		out["maxrss_kb"] = ru.Maxrss
	}
	b, _ := json.Marshal(out)
	return safefile.WriteFile(args[0], b, 0o644)
}

type line struct {
	SentNs     int64  `json:"sent_ns"`
	LatencyNs  int64  `json:"latency_ns"`
	Code       int    `json:"code"`
	Error      string `json:"error"`
	IntendedNs int64  `json:"intended_ns"`
	NotSent    bool   `json:"not_sent"`
}

// summarise reads DIR/requests.jsonl. Local errors are not_sent lines plus,
// for releases before not_sent existed, code-0 lines whose error shows the
// request never left (dial, socket, too many open files). The pacing error
// uses intended_ns when present, else the schedule fitted to the sends
// (hit k at origin+(k+1)/rate, origin the earliest that makes no send early),
// which can only underestimate it.
func summarise(args []string) error {
	if len(args) < 1 {
		return errors.New("usage: measure jsonl DIR [RATE]")
	}
	rate := 0.0
	if len(args) > 1 {
		rate, _ = strconv.ParseFloat(args[1], 64)
	}
	f, err := os.Open(filepath.Join(args[0], "requests.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	var ls []line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return err
		}
		ls = append(ls, l)
	}
	out := map[string]any{"n": len(ls)}
	local, code0, ok := 0, 0, 0
	var sent []int64
	var errs []float64
	for _, l := range ls {
		e := strings.ToLower(l.Error)
		switch {
		case l.NotSent || strings.Contains(e, "too many open files") || strings.Contains(e, "dial tcp") || strings.Contains(e, "socket:"):
			local++
			continue
		case l.Code == 0:
			code0++
		case l.Code >= 200 && l.Code < 400:
			ok++
		}
		sent = append(sent, l.SentNs)
		if l.IntendedNs != 0 {
			errs = append(errs, float64(l.SentNs-l.IntendedNs))
		}
	}
	out["local_errors"], out["code0"], out["ok"] = local, code0, ok
	slices.Sort(sent)
	if len(sent) > 1 {
		out["spread_ns"] = sent[len(sent)-1] - sent[0]
		out["achieved_per_sec"] = float64(len(sent)-1) / (float64(sent[len(sent)-1]-sent[0]) / 1e9)
	}
	if rate > 0 && len(sent) > 0 && len(errs) == 0 {
		iv := 1e9 / rate
		origin := math.Inf(1)
		for k, s := range sent {
			origin = math.Min(origin, float64(s)-float64(k+1)*iv)
		}
		for k, s := range sent {
			errs = append(errs, float64(s)-float64(k+1)*iv-origin)
		}
		out["pacing_fitted"] = true
	}
	if len(errs) > 0 {
		sort.Float64s(errs)
		out["pacing_p50_ns"] = errs[len(errs)/2]
		out["pacing_p99_ns"] = errs[(len(errs)*99+99)/100-1]
		out["pacing_max_ns"] = errs[len(errs)-1]
	}
	if b, err := os.ReadFile(filepath.Join(args[0], "attack.json")); err == nil {
		type summary struct {
			StartNs  int64 `json:"start_ns"`
			EndNs    int64 `json:"end_ns"`
			Sent     int   `json:"sent"`
			Complete bool  `json:"complete"`
			Config   struct {
				Workers int `json:"workers"`
			} `json:"config"`
			SendSpreadNs int64 `json:"send_spread_ns"`
		}
		var a summary
		var v2 struct {
			Phases []summary `json:"phases"`
		}
		if json.Unmarshal(b, &a) == nil {
			if json.Unmarshal(b, &v2) == nil && len(v2.Phases) == 1 { // attack.json v2
				a = v2.Phases[0]
			}
			out["attack_per_sec"] = float64(a.Sent) / (float64(a.EndNs-a.StartNs) / 1e9)
			out["complete"] = a.Complete
			out["workers"] = a.Config.Workers
			out["send_spread_ns"] = a.SendSpreadNs
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// vegetaLib runs vegeta v12 as a library: n requests with c workers
// (closed loop at rate 0), or at -rate for -duration with vegeta's
// defaults (MaxWorkers unbounded), draining results without encoding. For
// a burst (-burst), every request has its own worker and the send spread is
// the spread of Result.Timestamp.
func vegetaLib(args []string) error {
	fs := flag.NewFlagSet("vegeta", flag.ContinueOnError)
	n := fs.Int("n", 0, "requests (closed loop or burst)")
	c := fs.Int("c", 50, "workers")
	rate := fs.Int("rate", 0, "requests per second (with -duration)")
	dur := fs.Duration("duration", 0, "duration of a paced attack")
	burst := fs.Bool("burst", false, "n requests all at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: measure vegeta [-n N -c C | -burst -n N | -rate R -duration D] URL")
	}
	url := fs.Arg(0)
	var atk *vegeta.Attacker
	var pacer vegeta.Pacer = vegeta.Rate{}
	var next atomic.Int64
	tr := vegeta.Targeter(func(t *vegeta.Target) error {
		if *n > 0 && next.Add(1) > int64(*n) {
			return vegeta.ErrNoTargets
		}
		*t = vegeta.Target{Method: "GET", URL: url}
		return nil
	})
	switch {
	case *burst:
		atk = vegeta.NewAttacker(vegeta.Workers(uint64(*n)), vegeta.MaxWorkers(uint64(*n)), vegeta.Connections(*n))
	case *rate > 0:
		atk = vegeta.NewAttacker()
		pacer = vegeta.Rate{Freq: *rate, Per: time.Second}
		*n = 0
	default:
		atk = vegeta.NewAttacker(vegeta.Workers(uint64(*c)), vegeta.MaxWorkers(uint64(*c)))
	}
	start := time.Now()
	var ts []int64
	var sched []float64
	okN, errN, local := 0, 0, 0
	for r := range atk.Attack(tr, pacer, *dur, "") {
		if r.Error == vegeta.ErrNoTargets.Error() && r.URL == "" {
			continue
		}
		ts = append(ts, r.Timestamp.UnixNano())
		if r.Code >= 200 && r.Code < 400 {
			okN++
		} else {
			errN++
			if strings.Contains(r.Error, "too many open files") || strings.Contains(r.Error, "dial tcp") {
				local++
			}
		}
	}
	wall := time.Since(start)
	slices.Sort(ts)
	out := map[string]any{"n": len(ts), "ok": okN, "errors": errN, "local_errors": local, "wall_ns": wall.Nanoseconds(),
		"per_sec": float64(len(ts)) / wall.Seconds()}
	if len(ts) > 1 {
		out["spread_ns"] = ts[len(ts)-1] - ts[0]
		out["achieved_per_sec"] = float64(len(ts)-1) / (float64(ts[len(ts)-1]-ts[0]) / 1e9)
	}
	if *rate > 0 && len(ts) > 0 {
		iv := 1e9 / float64(*rate)
		origin := math.Inf(1)
		for k, s := range ts {
			origin = math.Min(origin, float64(s)-float64(k+1)*iv)
		}
		for k, s := range ts {
			sched = append(sched, float64(s)-float64(k+1)*iv-origin)
		}
		sort.Float64s(sched)
		out["pacing_p99_ns"] = sched[(len(sched)*99+99)/100-1]
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// row is one measurement in RESULTS.jsonl.
type row struct {
	Group string  `json:"group"` // e.g. "max:backend"
	Tool  string  `json:"tool"`  // e.g. "rlbench-after"
	Key   string  `json:"key"`   // figure, e.g. "per_sec"
	Value float64 `json:"value"`
}

// table prints, per group and figure, the median of each tool and the
// ratios of rlbench-after to the others.
func table(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: measure table RESULTS.jsonl")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	type gk struct{ group, key string }
	vals := map[gk]map[string][]float64{}
	var order []gk
	var tools []string
	dec := json.NewDecoder(f)
	for {
		var r row
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		k := gk{r.Group, r.Key}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
			order = append(order, k)
		}
		vals[k][r.Tool] = append(vals[k][r.Tool], r.Value)
		if !slices.Contains(tools, r.Tool) {
			tools = append(tools, r.Tool)
		}
	}
	fmt.Println("| group | figure | tool | runs | median | min | max | after/tool |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, k := range order {
		after := median(vals[k]["rlbench-after"])
		for _, t := range tools {
			v := vals[k][t]
			if len(v) == 0 {
				continue
			}
			m := median(v)
			ratio := ""
			if t != "rlbench-after" && m != 0 && !math.IsNaN(after) {
				ratio = fmt.Sprintf("%.2f", after/m)
			}
			fmt.Printf("| %s | %s | %s | %d | %s | %s | %s | %s |\n", k.group, k.key, t, len(v), num(m), num(slices.Min(v)), num(slices.Max(v)), ratio)
		}
	}
	med := func(g, k, t string) float64 { return median(vals[gk{g, k}][t]) }
	sum := func(g, k, t string) (float64, int) {
		s := 0.0
		for _, v := range vals[gk{g, k}][t] {
			s += v
		}
		return s, len(vals[gk{g, k}][t])
	}
	fmt.Println()
	fmt.Println("Targets of issue 14 (rlbench-after, medians of this run):")
	check := func(ok bool, v float64, format string, a ...any) {
		if math.IsNaN(v) {
			return // not measured in this run
		}
		mark := "MET    "
		if !ok {
			mark = "NOT MET"
		}
		fmt.Printf("  %s %s\n", mark, fmt.Sprintf(format, a...))
	}
	for _, g := range []string{"max:backend", "max:nginx"} {
		a, h, v := med(g, "per_sec", "rlbench-after"), med(g, "per_sec", "hey"), med(g, "per_sec", "vegeta-lib")
		check(a >= h, a/h, "%s: %.2fx hey's throughput (>= 1.0)", g, a/h)
		check(a >= 1.3*v, a/v, "%s: %.2fx vegeta library's throughput (>= 1.3)", g, a/v)
		ca, ch := med(g, "cpu_us", "rlbench-after"), med(g, "cpu_us", "hey")
		check(ca <= ch, ca/ch, "%s: %.2f us client CPU per request vs hey's %.2f (<=)", g, ca, ch)
	}
	for _, b := range []struct {
		n     string
		limit float64
	}{{"20", 0.5}, {"200", 3}, {"2000", 25}} {
		g := "burst" + b.n
		a, v, fl := med(g, "spread_ms", "rlbench-after"), med(g, "spread_ms", "vegeta-lib"), med(g, "spread_ms", "burst-floor")
		check(a <= b.limit, a, "%s IDs, fresh CLI: send spread p50 %.3f ms (<= %g ms; vegeta library %.3f ms, %.1fx; zero-cost sender %.3f ms, %.2fx)",
			b.n, a, b.limit, v, v/a, fl, a/fl)
		if b.n == "2000" {
			check(v >= 4*a, v/a, "%s IDs: vegeta library's send spread %.1fx rlbench's (>= 4)", b.n, v/a)
		}
	}
	for _, g := range []string{"rate20k", "rate20k:nginx"} {
		if ok, n := sum(g, "ok_runs", "rlbench-after"); n > 0 {
			p99 := vals[gk{g, "pacing_p99_us"}]["rlbench-after"]
			check(int(ok) == n, ok, "%s, 20,000/s for 5 s, default flags: %.0f of %d runs >= 19,800/s with no local error (all)", g, ok, n)
			check(slices.Max(p99) <= 1000, median(p99), "%s: pacing-error p99 median %.0f us, worst run %.0f us (<= 1000 us; zero-cost sleeper median %.0f us, worst %.0f us)",
				g, median(p99), slices.Max(p99), med(g, "pacing_p99_us", "sleep-floor"), worst(vals[gk{g, "pacing_p99_us"}]["sleep-floor"]))
			steal := vals[gk{g, "steal_ms"}]["rlbench-after"]
			for k, v := range p99 {
				if v > 1000 && k < len(steal) {
					fmt.Printf("          run %d: p99 %.0f us, the hypervisor took %.0f ms of CPU during it (median run %.0f ms)\n", k+1, v, steal[k], median(steal))
				}
			}
		}
	}
	a := med("mem1M", "b_per_id", "rlbench-after")
	check(a <= 100, a, "memory at 1 M IDs: %.1f B per ID (<= 100; before: %.1f)", a, med("mem1M", "b_per_id", "rlbench-before"))

	fmt.Println()
	fmt.Println("Targets of issue 28 (rlbench-after, medians of this run; a target not measured in this run is not printed;")
	fmt.Println("[load, steal]: the 1-minute load average at the runs' start and the CPU time the hypervisor took during each, medians):")
	// machine is the load and steal beside a figure of group g (tool t).
	machine := func(g, t string) string {
		l, st := med(g, "load1", t), med(g, "steal_ms", t)
		if math.IsNaN(l) {
			return ""
		}
		if math.IsNaN(st) {
			return fmt.Sprintf(" [load %.1f]", l)
		}
		return fmt.Sprintf(" [load %.1f, steal %.0f ms]", l, st)
	}
	// 1. a 2000-ID burst against the zero-cost sender's floor.
	// (the runs alternate, so repetition k's two figures saw the same load)
	// rlbench-goroutines: the same build with --engine goroutines, when
	// measured (rlbench-after runs the event loops, the default).
	for _, t := range []string{"rlbench-after", "rlbench-goroutines"} {
		af, ff := vals[gk{"burst2000", "spread_ms"}][t], vals[gk{"burst2000", "spread_ms"}]["burst-floor"]
		if len(af) == 0 || len(ff) == 0 {
			continue
		}
		var r []float64
		for k := range min(len(af), len(ff)) {
			if ff[k] > 0 {
				r = append(r, af[k]/ff[k])
			}
		}
		check(len(r) > 0 && median(r) <= 1.2, median(r), "burst of 2000 IDs, %s: send spread / the zero-cost sender's of the same repetition, median %.2fx of %d runs (<= 1.2x; medians %.2f ms and %.2f ms)%s",
			t, median(r), len(r), median(af), median(ff), machine("burst2000", t))
	}
	// 2. the design notes' microburst: 2000 requests from several sender
	// processes landing at a real limiter within 10 ms.
	if ms := vals[gk{"microburst2000", "landed_ms"}]["rlbench-after"]; len(ms) > 0 {
		in, n := sum("microburst2000", "within", "rlbench-after")
		check(median(ms) <= 10, median(ms), "microburst, examples/bursts/microburst-nginx.yaml (2000 IDs, 2 sender processes, pipelined, at nginx limit_req): landed within 10 ms at nginx in %.0f of %d runs; width median %.0f ms, widest %.0f ms (median <= 10 ms)%s",
			in, n, median(ms), worst(ms), machine("microburst2000", "rlbench-after"))
	}
	// 3. throughput and CPU per request against wrk's on the same target.
	// rlbench-goroutines is the same build with --engine goroutines
	// (rlbench-after runs the event loops, the default).
	// The target is the default engine's; the goroutine engine's figures
	// are printed beside it as information ("info", with whether it would
	// meet the same bound), never as the verdict.
	for _, g := range []string{"max:backend", "max:nginx"} {
		for _, t := range []string{"rlbench-after", "rlbench-goroutines"} {
			judge := check
			if t == "rlbench-goroutines" {
				judge = func(ok bool, v float64, format string, a ...any) {
					if math.IsNaN(v) {
						return
					}
					meets := "would meet it"
					if !ok {
						meets = "would not meet it"
					}
					fmt.Printf("  info    %s (--engine goroutines, not the default: %s)\n", fmt.Sprintf(format, a...), meets)
				}
			}
			a, w := med(g, "per_sec", t), med(g, "per_sec", "wrk")
			judge(a >= 0.9*w, a/w, "%s, %s: %.0f req/s = %.2fx wrk's %.0f (>= 0.9x)%s", g, t, a, a/w, w, machine(g, t))
			ca, cw := med(g, "cpu_us", t), med(g, "cpu_us", "wrk")
			judge(ca <= 1.2*cw, ca/cw, "%s, %s: %.2f us client CPU per request = %.2fx wrk's %.2f (<= 1.2x)%s", g, t, ca, ca/cw, cw, machine(g, "wrk"))
		}
	}
	// 6. pacing: each run against the zero-cost sleeper's run right after it
	// (compare.sh records floor_p99_us and floor_met per run).
	for _, g := range []string{"rate20k", "rate20k:nginx"} {
		met, n := sum(g, "floor_met", "rlbench-after")
		if n == 0 {
			continue
		}
		p99 := vals[gk{g, "pacing_p99_us"}]["rlbench-after"]
		fl := vals[gk{g, "floor_p99_us"}]["rlbench-after"]
		check(int(met) == n, met, "%s: %.0f of %d runs with pacing p99 <= the zero-cost sleeper's p99 (run right after it) + 0.5 ms (all; p99 median %.0f us, floor median %.0f us; steal median %.0f ms)",
			g, met, n, median(p99), median(fl), med(g, "steal_ms", "rlbench-after"))
		for k := range min(len(p99), len(fl)) {
			if p99[k] > fl[k]+500 {
				fmt.Printf("          run %d: p99 %.0f us, floor right after %.0f us (+%.0f us)\n", k+1, p99[k], fl[k], p99[k]-fl[k])
			}
		}
	}
	// 4. analyze and simulate at scale (bench/analyze-scale.sh).
	va, an := med("scale", "wall_s", "vegeta-report"), med("scale", "wall_s", "analyze-n")
	// Judged on both wall and CPU time: on a loaded machine the wall time
	// is mostly the wait for a core, and either alone can flatter.
	ac, vc := med("scale", "cpu_s", "analyze-n"), med("scale", "cpu_s", "vegeta-report")
	check(an <= 1.2*va && ac <= 1.2*vc, an/va, "analyze 1 M + 1 M with a model: %.2f s = %.2fx vegeta report's %.2f s, CPU %.2f s = %.2fx its %.2f s (both <= 1.2x)%s",
		an, an/va, va, ac, ac/vc, vc, machine("scale", "analyze-n"))
	r := worst(vals[gk{"scale", "rss_mb"}]["analyze-n"])
	check(r <= 300, r, "analyze 1 M + 1 M with a model: peak RSS %.0f MB (<= 300 MB)", r)
	// the same requests with a tight model (a fifth over-admitted: FAIL by
	// design), where the check's every pass does its whole work
	at, atc := med("scale", "wall_s", "analyze-tight"), med("scale", "cpu_s", "analyze-tight")
	check(at <= 1.2*va && atc <= 1.2*vc, at/va, "analyze 1 M + 1 M with a tight model: %.2f s = %.2fx vegeta report's %.2f s, CPU %.2f s = %.2fx its %.2f s (both <= 1.2x)%s",
		at, at/va, va, atc, atc/vc, vc, machine("scale", "analyze-tight"))
	r = worst(vals[gk{"scale", "rss_mb"}]["analyze-tight"])
	check(r <= 300, r, "analyze 1 M + 1 M with a tight model: peak RSS %.0f MB (<= 300 MB)", r)
	ab := med("scale", "wall_s", "analyze-big")
	bc := med("scale", "cpu_s", "analyze-big")
	check(ab <= 10*an && bc <= 10*ac, ab/an, "analyze 10 M + 10 M: %.1f s = %.1fx the 1 M time, CPU %.1f s = %.1fx (both <= 10x)%s", ab, ab/an,
		bc, bc/ac, machine("scale", "analyze-big"))
	r = worst(vals[gk{"scale", "rss_mb"}]["analyze-big"])
	check(r <= 1024, r, "analyze 10 M + 10 M: peak RSS %.0f MB (<= 1024 MB)", r)
	r = worst(vals[gk{"scale", "rss_mb"}]["simulate"])
	check(r <= 1024, r, "simulate 10 M IDs: peak RSS %.0f MB (<= 1024 MB)", r)
	// 5. the lab proxy's CPU per request against nginx's (bench/proxy.sh).
	for _, t := range []string{"lab-after", "lab-after+rl"} {
		c, n := med("proxy", "cpu_us", t), med("proxy", "cpu_us", "nginx")
		check(c <= 1.5*n, c/n, "proxy hop, %s: %.1f us CPU per request = %.2fx nginx's %.1f (<= 1.5x)%s", t, c, c/n, n, machine("proxy", "machine"))
	}
	return nil
}

// worst is the largest of v, NaN when v is empty.
func worst(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return slices.Max(v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func num(v float64) string {
	switch {
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// get prints the value of a top-level key of the JSON object in FILE ("-"
// for stdin), or nothing when it is absent.
func get(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: measure get FILE KEY")
	}
	var b []byte
	var err error
	if args[0] == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(args[0])
	}
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	v, ok := m[args[1]]
	if !ok {
		// attack.json v2 (evidence.Attack): the figure is in the first phase.
		var ph []map[string]json.RawMessage
		if json.Unmarshal(m["phases"], &ph) == nil && len(ph) > 0 {
			v, ok = ph[0][args[1]]
		}
	}
	if ok {
		fmt.Println(strings.Trim(string(v), `"`))
	}
	return nil
}

// landedOver is the width in the got text of analyze's landed_within check
// (analyze/landed.go: "N requests landed over WIDTH ..."), a Go duration.
var landedOver = regexp.MustCompile(`landed over (\S+) `)

// landed prints the width the first scenario's burst landed over, in ms,
// and 1 when its landed_within check passed (0 otherwise), from an
// `rlbench analyze --json` report.
func landed(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: measure landed REPORT.json")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var rep struct {
		Scenarios []struct {
			Checks []struct{ Name, Status, Got string }
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	for _, sc := range rep.Scenarios {
		for _, c := range sc.Checks {
			if !strings.HasPrefix(c.Name, "burst landed within") {
				continue
			}
			m := landedOver.FindStringSubmatch(c.Got)
			if m == nil {
				return fmt.Errorf("%s: %s: no width in %q", args[0], c.Name, c.Got)
			}
			d, err := time.ParseDuration(m[1])
			if err != nil {
				return fmt.Errorf("%s: %s: %w", args[0], c.Name, err)
			}
			within := 0
			if c.Status == "pass" {
				within = 1
			}
			fmt.Printf("%.3f %d\n", float64(d)/1e6, within)
			return nil
		}
	}
	return fmt.Errorf("%s: no landed_within check", args[0])
}
