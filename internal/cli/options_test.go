package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/examples"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The TestNewXCmd tests below follow cli/cli's TestNewCmdX pattern: argv
// in, the parsed Options (through the runF seam, nothing runs, no I/O) or
// the usage error out.

// tio are the streams every command under test gets; the expected Options
// carry the same pointer.
var tio = &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}

type cmdCase[O any] struct {
	name string
	argv []string
	want *O     // the Options runF must receive; nil when the case is an error
	err  string // a substring of the usage error (exit 2)
}

func argv(s string) []string { return strings.Fields(s) }

// testCmd runs every case through newCmd as the root would run it
// (finishTree), with a runF that captures the options.
func testCmd[O any](t *testing.T, newCmd func(*IOStreams, func(*O) error) *cobra.Command, cases []cmdCase[O]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *O
			cmd := newCmd(tio, func(o *O) error { got = o; return nil })
			err := execute(cmd, c.argv)
			if c.want == nil {
				var ue *UsageError
				if err == nil || !errors.As(err, &ue) || exitCode(err, io.Discard) != ExitUsage {
					t.Fatalf("err %v (%T), want a usage error containing %q", err, err, c.err)
				}
				if !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %q, want it to contain %q", err, c.err)
				}
				if got != nil {
					t.Fatalf("runF called with %+v after a usage error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v", err)
			}
			if got == nil {
				t.Fatal("runF not called")
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("options\n got %+v\nwant %+v", *got, *c.want)
			}
		})
	}
}

func execute(cmd *cobra.Command, args []string) error {
	finishTree(cmd)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	return cmd.ExecuteContext(context.Background())
}

func TestNewAttackCmd(t *testing.T) {
	a := attack.Target{Name: "a", URL: "http://127.0.0.1:1"}
	b := attack.Target{Name: "b", URL: "https://127.0.0.1:2/prefix"}
	defaults := func(f func(*AttackOptions)) *AttackOptions {
		o := &AttackOptions{IO: tio, Targets: []attack.Target{a}, IDs: 3, IDPrefix: "req", Split: attack.Split{Mode: attack.SplitEven},
			Seed: 1, Method: "GET", Path: "/", Timeout: 10 * time.Second, Out: "ev", TargetsFormat: "http", WarmAhead: attack.DefaultWarmAhead, Engine: "auto"}
		if f != nil {
			f(o)
		}
		return o
	}
	testCmd(t, NewAttackCmd, []cmdCase[AttackOptions]{
		{name: "defaults", argv: argv("--target a=http://127.0.0.1:1 --ids 3 --out ev"), want: defaults(nil)},
		{name: "every flag", argv: append(argv("--target a=http://127.0.0.1:1 --target b=https://127.0.0.1:2/prefix --ids 3 --id-prefix x "+
			"--split counts=1,2 --seed 7 --method POST --path /inventory --body {} --concurrency 4 --rate 100/1s --timeout 2s "+
			"--capture-header x-ratelimit-* --capture-header retry-after --out ev"), "--header", "X-Tenant: lab", "--header", "x-tenant:  two ", "--header", "Accept: */*"),
			want: defaults(func(o *AttackOptions) {
				o.Targets = []attack.Target{a, b}
				o.IDPrefix, o.Split, o.Seed, o.Method, o.Path, o.Body, o.Concurrency = "x", attack.Split{Mode: attack.SplitCounts, Values: []int{1, 2}}, 7, "POST", "/inventory", "{}", 4
				o.Rate, o.Timeout = vegeta.Rate{Freq: 100, Per: time.Second}, 2*time.Second
				o.Capture = []string{"x-ratelimit-*", "retry-after"}
				o.Header = http.Header{"X-Tenant": {"lab", "two"}, "Accept": {"*/*"}}
			})},
		{name: "ids file", argv: argv("--target a=http://127.0.0.1:1 --ids-file ids.txt --out ev --split weights=60,40 --rate 60/m"),
			want: defaults(func(o *AttackOptions) {
				o.IDs, o.IDsFile, o.Split, o.Rate = 0, "ids.txt", attack.Split{Mode: attack.SplitWeights, Values: []int{60, 40}}, vegeta.Rate{Freq: 60, Per: time.Minute}
			})},
		{name: "rate per second, sticky", argv: argv("--target a=http://127.0.0.1:1 --ids 3 --out ev --rate 5 --split sticky"),
			want: defaults(func(o *AttackOptions) {
				o.Rate, o.Split = vegeta.Rate{Freq: 5, Per: time.Second}, attack.Split{Mode: attack.SplitSticky}
			})},
		{name: "no pacing", argv: argv("--target a=http://127.0.0.1:1 --ids 3 --out ev --rate 0"), want: defaults(nil)},
		{name: "flows", argv: append(argv("--target a=http://127.0.0.1:1 --out ev"), "--flow", "name=A,rate=300/s,ids=1500,header=x-user:A,path=/ping",
			"--flow", "name=B,rate=20/1s,duration=5s,header=x-user: B,header=x-plan:free,split=weights=2:1,seed=3,method=post,body=x,concurrency=2,no-keepalive",
			"--flow", "name=C,ids-file=c.txt,id-prefix=c"),
			want: defaults(func(o *AttackOptions) {
				o.IDs = 0
				o.Flows = []FlowSpec{
					{Name: "A", Rate: vegeta.Rate{Freq: 300, Per: time.Second}, IDs: 1500, Header: http.Header{"X-User": {"A"}}, Path: "/ping"},
					{Name: "B", Rate: vegeta.Rate{Freq: 20, Per: time.Second}, Duration: 5 * time.Second, IDs: 100,
						Header: http.Header{"X-User": {"B"}, "X-Plan": {"free"}}, Split: attack.Split{Mode: attack.SplitWeights, Values: []int{2, 1}},
						Seed: 3, Method: "post", Body: "x", Concurrency: 2, NoKeepAlive: true},
					{Name: "C", IDsFile: "c.txt", IDPrefix: "c"},
				}
			})},
		{name: "tls, h2, shard, start", argv: argv("--target a=https://127.0.0.1:1 --ids 3 --out ev --insecure --cacert ca.pem --cert c.pem --key c.key --http2 --shard 1/4 --start-at 2026-12-01T12:00:00Z --warm-ahead 2s -q"),
			want: defaults(func(o *AttackOptions) {
				o.Targets = []attack.Target{{Name: "a", URL: "https://127.0.0.1:1"}}
				o.Insecure, o.CACert, o.Cert, o.Key, o.HTTP2, o.Quiet = true, "ca.pem", "c.pem", "c.key", true, true
				o.Shard, o.StartAt, o.WarmAhead = attack.Shard{Index: 1, Count: 4}, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), 2*time.Second
			})},
		{name: "start at unix ns, duration", argv: argv("--target a=http://127.0.0.1:1 --out ev --start-at 1796124000000000000 --rate 10/1s --duration 3s --h2c"),
			want: defaults(func(o *AttackOptions) {
				o.StartAt, o.Rate, o.Duration, o.IDs, o.H2C = time.Unix(0, 1796124000000000000), vegeta.Rate{Freq: 10, Per: time.Second}, 3*time.Second, 30, true
			})},
		{name: "targets file", argv: argv("--targets-file t.json --targets-format json --out ev"),
			want: defaults(func(o *AttackOptions) { o.Targets, o.IDs, o.TargetsFile, o.TargetsFormat = nil, 0, "t.json", "json" })},
		{name: "flow and ids", argv: append(argv("--target a=http://x --ids 3 --out ev"), "--flow", "name=A,ids=2"), err: "with --flow, set --ids in each flow"},
		{name: "flow no name", argv: append(argv("--target a=http://x --out ev"), "--flow", "ids=2"), err: `flow "ids=2": name=NAME is required`},
		{name: "flow bad key", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,ids=2,speed=3"), err: `"speed=3": unknown key "speed"`},
		{name: "flow bad rate", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,ids=2,rate=fast"), err: `"rate=fast": rate "fast"`},
		{name: "flow bad header", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,ids=2,header=x y:1"), err: `"header=x y:1": header "x y:1": invalid header name`},
		{name: "flow no ids", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,rate=5"), err: "give one of ids=N, ids-file=FILE or duration=D"},
		{name: "flow duration no rate", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,duration=5s"), err: "duration needs a rate"},
		{name: "flow twice", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,ids=1", "--flow", "name=A,ids=2"), err: `flow name "A" given twice`},
		{name: "http2 and h2c", argv: argv("--target a=http://x --ids 3 --out ev --http2 --h2c"), err: "--http2 (TLS) or --h2c"},
		{name: "cert without key", argv: argv("--target a=http://x --ids 3 --out ev --cert c.pem"), err: "--cert and --key go together"},
		{name: "bad shard", argv: argv("--target a=http://x --ids 3 --out ev --shard 4/4"), err: `--shard: shard "4/4"`},
		{name: "shard env unset", argv: argv("--target a=http://x --ids 3 --out ev --shard-from-env RLBENCH_TEST_UNSET_INDEX --shards 3"), err: "RLBENCH_TEST_UNSET_INDEX: the variable is not set"},
		{name: "shards without env", argv: argv("--target a=http://x --ids 3 --out ev --shards 3"), err: "--shard-from-env VAR needs --shards N"},
		{name: "bad start", argv: argv("--target a=http://x --ids 3 --out ev --start-at noon"), err: `--start-at: "noon": want RFC 3339`},
		{name: "duration without rate", argv: argv("--target a=http://x --out ev --duration 3s"), err: "--duration needs --rate"},
		{name: "targets file and path", argv: argv("--targets-file t --out ev --path /x"), err: "--path does not go with --targets-file"},
		{name: "bad targets format", argv: argv("--targets-file t --out ev --targets-format yaml"), err: "--targets-format must be http or json"},

		{name: "no target", argv: argv("--ids 3 --out ev"), err: "at least one --target"},
		{name: "no out", argv: argv("--target a=http://127.0.0.1:1 --ids 3"), err: "--out DIR is required"},
		{name: "negative ids", argv: argv("--target a=http://127.0.0.1:1 --ids -3 --out ev"), err: "--ids must be at least 1, not -3"},
		{name: "huge ids", argv: argv("--target a=http://127.0.0.1:1 --ids 9223372036854775807 --out ev"), err: "--ids 9223372036854775807: more than 10000000 ids"},
		{name: "ids over max", argv: argv("--target a=http://127.0.0.1:1 --ids 10000001 --out ev"), err: "more than 10000000 ids"},
		{name: "huge rate x duration", argv: argv("--target a=http://127.0.0.1:1 --rate 1000000000/1s --duration 10000h --out ev"), err: "--rate 1000000000/1s for --duration 10000h0m0s: more than 10000000 ids"},
		{name: "huge flow", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,ids=9223372036854775807"), err: "more than 10000000 ids"},
		{name: "huge flow duration", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,rate=1000000000/s,duration=10000h"), err: "more than 10000000 ids"},
		{name: "flows sum over max", argv: append(argv("--target a=http://x --out ev"), "--flow", "name=A,ids=6000000", "--flow", "name=B,ids=6000000"), err: "--flow: 2 flows: more than 10000000 ids"},
		{name: "ids and file", argv: argv("--target a=http://127.0.0.1:1 --ids 3 --ids-file f --out ev"), err: "exactly one of --ids"},
		{name: "no ids", argv: argv("--target a=http://127.0.0.1:1 --out ev"), err: "exactly one of --ids"},
		{name: "ids not a number", argv: argv("--target a=http://127.0.0.1:1 --ids x --out ev"), err: `invalid argument "x" for "--ids"`},
		{name: "target without =", argv: argv("--target foo --ids 3 --out ev"), err: `--target "foo": want NAME=URL`},
		{name: "target without name", argv: argv("--target =http://x --ids 3 --out ev"), err: "want NAME=URL"},
		{name: "target not http", argv: argv("--target a=ftp://x --ids 3 --out ev"), err: "--target a=ftp://x: the URL must start with http://"},
		{name: "target twice", argv: argv("--target a=http://x --target a=http://y --ids 3 --out ev"), err: "--target a given twice"},
		{name: "header without colon", argv: []string{"--target", "a=http://x", "--ids", "3", "--out", "ev", "--header", "X-Tenant lab"}, err: `want "Name: value"`},
		{name: "header bad name", argv: []string{"--target", "a=http://x", "--ids", "3", "--out", "ev", "--header", "X Tenant: lab"}, err: `--header: header "X Tenant: lab": invalid header name`},
		{name: "header CRLF", argv: []string{"--target", "a=http://x", "--ids", "3", "--out", "ev", "--header", "X-A: a\r\nX-B: b"}, err: "control character"},
		{name: "header LF", argv: []string{"--target", "a=http://x", "--ids", "3", "--out", "ev", "--header", "X-A: a\nb"}, err: "control character"},
		{name: "bad rate", argv: argv("--target a=http://x --ids 3 --out ev --rate fast"), err: `--rate: rate "fast": want N/duration`},
		{name: "bad rate duration", argv: argv("--target a=http://x --ids 3 --out ev --rate 5/0s"), err: `bad duration`},
		{name: "bad split", argv: argv("--target a=http://x --ids 3 --out ev --split thirds"), err: `--split: split "thirds"`},
		{name: "negative concurrency", argv: argv("--target a=http://x --ids 3 --out ev --concurrency -1"), err: "--concurrency must be >= 0"},
		{name: "unknown flag", argv: argv("--target a=http://x --ids 3 --out ev --nosuch"), err: "unknown flag: --nosuch"},
		{name: "argument", argv: argv("--target a=http://x --ids 3 --out ev extra"), err: `unknown command "extra"`},
	})
}

func TestNewAnalyzeCmd(t *testing.T) {
	zero := 0
	testCmd(t, NewAnalyzeCmd, []cmdCase[AnalyzeOptions]{
		{name: "defaults", argv: argv("ev"), want: &AnalyzeOptions{IO: tio, Dir: "ev", Format: "table"}},
		{name: "every flag", argv: argv("--format json --expect-admitted 5..10 --intended-limit 0 --status-file - ev"),
			want: &AnalyzeOptions{IO: tio, Dir: "ev", Format: "json", StatusFile: "-", ExpectAdmitted: &evidence.Range{Min: 5, Max: 10}, IntendedLimit: &zero}},
		{name: "exact expectation", argv: argv("--expect-admitted 10 ev"), want: &AnalyzeOptions{IO: tio, Dir: "ev", Format: "table", ExpectAdmitted: &evidence.Range{Min: 10, Max: 10}}},

		{name: "no dir", argv: nil, err: "accepts 1 arg"},
		{name: "two dirs", argv: argv("a b"), err: "accepts 1 arg"},
		{name: "every format", argv: argv("--format junit ev"), want: &AnalyzeOptions{IO: tio, Dir: "ev", Format: "junit"}},
		{name: "bad format", argv: argv("--format xml ev"), err: `--format must be table, json, markdown, junit, csv or html, not "xml"`},
		{name: "reversed range", argv: argv("--expect-admitted 9..3 ev"), err: `--expect-admitted: range "9..3": min > max`},
		{name: "negative range", argv: argv("--expect-admitted -1..3 ev"), err: "want 0 <= min <= max"},
		{name: "not a range", argv: argv("--expect-admitted ten ev"), err: "want N or MIN..MAX"},
		{name: "negative limit", argv: argv("--intended-limit -1 ev"), err: "--intended-limit must be a count >= 0"},
	})
}

func TestNewRunCmd(t *testing.T) {
	testCmd(t, NewRunCmd, []cmdCase[RunOptions]{
		{name: "defaults", argv: argv("plan.yaml"), want: &RunOptions{IO: tio, PlanFile: "plan.yaml", Format: "table"}},
		{name: "every flag", argv: argv("--root /tmp/ev --format json -q plan.yaml"),
			want: &RunOptions{IO: tio, PlanFile: "plan.yaml", Root: "/tmp/ev", Format: "json", Quiet: true}},
		{name: "no plan", argv: nil, err: "accepts 1 arg"},
		{name: "csv", argv: argv("--format csv plan.yaml"), want: &RunOptions{IO: tio, PlanFile: "plan.yaml", Format: "csv"}},
		{name: "bad format", argv: argv("--format xml plan.yaml"), err: `--format must be table, json, markdown, junit, csv or html, not "xml"`},
	})
}

func TestNewSimulateCmd(t *testing.T) {
	testCmd(t, NewSimulateCmd, []cmdCase[SimulateOptions]{
		{name: "defaults", argv: argv("plan.yaml"), want: &SimulateOptions{IO: tio, PlanFile: "plan.yaml", Format: "table", Seed: 1}},
		{name: "every flag", argv: argv("--seed 7 --format json plan.yaml"), want: &SimulateOptions{IO: tio, PlanFile: "plan.yaml", Format: "json", Seed: 7}},
		{name: "no plan", argv: nil, err: "accepts 1 arg"},
		{name: "bad seed", argv: argv("--seed x plan.yaml"), err: `invalid argument "x" for "--seed"`},
		{name: "bad format", argv: argv("--format xml plan.yaml"), err: `--format must be table, json, markdown, junit, csv or html, not "xml"`},
	})
}

func TestNewReportCmd(t *testing.T) {
	five := 5
	testCmd(t, NewReportCmd, []cmdCase[ReportOptions]{
		{name: "defaults", argv: argv("ev"), want: &ReportOptions{IO: tio, Dir: "ev", Format: "table"}},
		{name: "every flag", argv: argv("--html r.html --prometheus r.prom --format markdown --expect-admitted 5 --intended-limit 5 ev"),
			want: &ReportOptions{IO: tio, Dir: "ev", Format: "markdown", HTMLFile: "r.html", PrometheusFile: "r.prom",
				ExpectAdmitted: &evidence.Range{Min: 5, Max: 5}, IntendedLimit: &five}},
		{name: "files only", argv: argv("--html r.html ev"), want: &ReportOptions{IO: tio, Dir: "ev", HTMLFile: "r.html"}},
		{name: "no dir", argv: nil, err: "accepts 1 arg"},
		{name: "bad format", argv: argv("--format pdf ev"), err: `--format must be table, json, markdown, junit, csv or html, not "pdf"`},
	})
}

func TestNewExportVegetaCmd(t *testing.T) {
	testCmd(t, NewExportVegetaCmd, []cmdCase[ExportVegetaOptions]{
		{name: "defaults", argv: argv("ev"), want: &ExportVegetaOptions{IO: tio, Dir: "ev"}},
		{name: "no dir", argv: nil, err: "accepts 1 arg"},
		{name: "two dirs", argv: argv("a b"), err: "accepts 1 arg"},
	})
}

func TestNewDemoCmd(t *testing.T) {
	testCmd(t, NewDemoCmd, []cmdCase[RunOptions]{
		{name: "defaults", argv: nil, want: &RunOptions{IO: tio, PlanFile: examples.DemoPlanFile, PlanData: examples.DemoPlan, Format: "table"}},
		{name: "every flag", argv: argv("--root ev --format json --quiet"),
			want: &RunOptions{IO: tio, PlanFile: examples.DemoPlanFile, PlanData: examples.DemoPlan, Root: "ev", Format: "json", Quiet: true}},
		{name: "argument", argv: argv("plan.yaml"), err: `unknown command "plan.yaml"`},
		{name: "bad format", argv: argv("--format yaml"), err: "--format must be table, json, markdown, junit, csv or html"},
	})
}

func TestNewBackendCmd(t *testing.T) {
	testCmd(t, NewBackendCmd, []cmdCase[BackendOptions]{
		{name: "defaults", argv: nil, want: &BackendOptions{IO: tio, Listen: "127.0.0.1:0", Receipts: evidence.ReceiptsFile, Endpoints: 1}},
		{name: "every flag", argv: argv("--listen 127.0.0.1:8080 --receipts ev/r.jsonl --header x-a --header x-b --endpoints 3 --latency exp:5ms " +
			"--error-status 502 --error-probability 0.5 --max-concurrent 4 --over-capacity 503 --reset-probability 0.01 --seed 3 --replica pod-a"),
			want: &BackendOptions{IO: tio, Listen: "127.0.0.1:8080", Receipts: "ev/r.jsonl", Headers: []string{"x-a", "x-b"}, Endpoints: 3, Seed: 3, Replica: "pod-a",
				Faults: backend.Faults{Latency: &backend.Latency{Dist: "exp", A: 5 * time.Millisecond}, ErrorStatus: 502, ErrorProbability: ptrTo(0.5),
					MaxConcurrent: 4, OverCapacity: "503", ResetProbability: 0.01}}},
		{name: "bad faults", argv: argv("--over-capacity refuse"), err: "over_capacity needs max_concurrent"},
		{name: "no endpoints", argv: argv("--endpoints 0"), err: "endpoints"},
		{name: "port out of range", argv: argv("--listen 0.0.0.0:99999"), err: `--listen "0.0.0.0:99999": port "99999" is not a port number 0..65535`},
		{name: "no port", argv: argv("--listen 127.0.0.1"), err: `--listen "127.0.0.1": want HOST:PORT`},
		{name: "endpoints past 65535", argv: argv("--listen 127.0.0.1:65535 --endpoints 2"), err: "2 endpoints from port 65535 go past 65535"},
		{name: "argument", argv: argv("x"), err: `unknown command "x"`},
	})
}

func TestNewLabCmd(t *testing.T) {
	tenant := []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "tenant", DescriptorValue: "lab"}}}
	defaults := func(f func(*LabOptions)) *LabOptions {
		o := &LabOptions{IO: tio, Proxies: 2, LocalFillInterval: time.Hour, RLSTimeout: 20 * time.Millisecond,
			WindowStart:        evidence.WindowAligned, // Receipts, Decisions "": a run directory of its own (runLab)
			LocalAlwaysDefault: true, LocalTokenBucket: "continuous", Endpoints: 1}
		if f != nil {
			f(o)
		}
		return o
	}
	testCmd(t, NewLabCmd, []cmdCase[LabOptions]{
		{name: "defaults", argv: nil, want: defaults(nil)},
		{name: "local buckets (README)", argv: argv("--proxies 2 --local-max-tokens 5 --local-tokens-per-fill 5 --local-fill-interval 1h --receipts ev/receipts.jsonl"),
			want: defaults(func(o *LabOptions) { o.LocalMaxTokens, o.LocalTokensPerFill, o.Receipts = 5, 5, "ev/receipts.jsonl" })},
		{name: "lab rls", argv: argv("--global-domain inventory --global-descriptor tenant=lab --rls-config c.yaml --rls-timeout 1s --window-start first-hit --decisions d.jsonl"),
			want: defaults(func(o *LabOptions) {
				o.GlobalDomain, o.GlobalDescriptors, o.RLSConfig, o.RLSTimeout, o.WindowStart, o.Decisions = "inventory", tenant, "c.yaml", time.Second, "first-hit", "d.jsonl"
			})},
		{name: "external rls (README)", argv: argv("--proxies 2 --global-domain inventory --global-descriptor tenant=lab --rls grpc://ratelimit.internal:8081 --rls-timeout 1s --failure-mode-deny --receipts evidence/manual/receipts.jsonl"),
			want: defaults(func(o *LabOptions) {
				o.GlobalDomain, o.GlobalDescriptors, o.RLS, o.RLSTimeout, o.FailureModeDeny, o.Receipts = "inventory", tenant, "grpc://ratelimit.internal:8081", time.Second, true, "evidence/manual/receipts.jsonl"
			})},
		{name: "two descriptors", argv: argv("--global-domain d --global-descriptor a=1 --global-descriptor =2 --rls grpc://x:1"),
			want: defaults(func(o *LabOptions) {
				o.GlobalDomain, o.RLS = "d", "grpc://x:1"
				o.GlobalDescriptors = []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "a", DescriptorValue: "1"}}, {GenericKey: &descriptor.GenericKeyAction{DescriptorValue: "2"}}}
			})},
		{name: "26 proxies", argv: argv("--proxies 26"), want: defaults(func(o *LabOptions) { o.Proxies = 26 })},
		{name: "listen base (README)", argv: argv("--listen-base 10000 --proxies 2 --receipts ev-weights/receipts.jsonl"),
			want: defaults(func(o *LabOptions) { o.ListenBase, o.Receipts = 10000, "ev-weights/receipts.jsonl" })},
		{name: "listen base too high", argv: argv("--listen-base 65300"), err: "listen base 65300, want 1..65235"},
		{name: "negative listen base", argv: argv("--listen-base -1"), err: "listen base -1"},
		{name: "data path", argv: argv("--endpoints 3 --backend-latency uniform:1ms..5ms --backend-error-status 503 --backend-error-probability 0.25 " +
			"--backend-max-concurrent 8 --backend-over-capacity refuse --backend-reset-probability 0.1 --backend-seed 9 --retry-on 5xx,reset --num-retries 2 " +
			"--per-try-timeout 1s --retry-base-interval 10ms --retry-max-interval 50ms --route-timeout 5s --include-attempt-count --include-attempt-count-in-response " +
			"--proxy-seed 4 --max-connections 10 --max-pending-requests 2 --max-requests 20 --max-retries 1 --outlier-consecutive-5xx 3 " +
			"--outlier-consecutive-gateway-failure 4 --outlier-interval 1s --outlier-base-ejection-time 2s --outlier-max-ejection-time 8s " +
			"--outlier-max-ejection-percent 50 --healthy-panic-threshold 0"),
			want: defaults(func(o *LabOptions) {
				quarter := 0.25
				o.Endpoints, o.BackendSeed = 3, 9
				o.BackendFaults = backend.Faults{Latency: &backend.Latency{Dist: "uniform", A: time.Millisecond, B: 5 * time.Millisecond}, ErrorStatus: 503,
					ErrorProbability: &quarter, MaxConcurrent: 8, OverCapacity: "refuse", ResetProbability: 0.1}
				o.RetryOn, o.NumRetries, o.PerTryTimeout, o.RetryBaseInterval, o.RetryMaxInterval = "5xx,reset", u32(2), time.Second, 10*time.Millisecond, 50*time.Millisecond
				o.RouteTimeout, o.AttemptCount, o.AttemptCountInResp, o.ProxySeed = 5*time.Second, true, true, 4
				o.MaxConnections, o.MaxPendingRequests, o.MaxRequests, o.MaxRetries = u32(10), u32(2), u32(20), u32(1)
				o.Outlier5xx, o.OutlierGateway, o.OutlierInterval, o.OutlierBaseEjection, o.OutlierMaxEjection, o.OutlierMaxPercent = u32(3), u32(4), time.Second, 2*time.Second, 8*time.Second, u32(50)
				zero := 0.0
				o.PanicThreshold = &zero
			})},
		{name: "per-key buckets and global actions", argv: argv("--local-max-tokens 100 --local-fill-interval 1s --local-rate-limit request_headers:x-user=user " +
			"--local-descriptor user=A:10:10:1s --local-descriptor user=:5 --local-always-consume-default-token-bucket=false " +
			"--local-x-ratelimit-headers --global-domain d --rls grpc://x:1 --global-rate-limit remote_address " +
			"--global-rate-limit generic_key:path=report,!header_value_match:anon=yes@authorization"),
			want: defaults(func(o *LabOptions) {
				o.LocalMaxTokens, o.LocalFillInterval, o.LocalAlwaysDefault, o.LocalXRateLimit = 100, time.Second, false, true
				o.LocalRateLimits = []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}}}}}
				o.LocalDescriptors = []proxy.LocalDescriptor{
					{Entries: []descriptor.DescriptorEntry{{Key: "user", Value: "A"}}, TokenBucket: proxy.TokenBucket{MaxTokens: 10, TokensPerFill: 10, FillInterval: proxy.Duration(time.Second)}},
					{Entries: []descriptor.DescriptorEntry{{Key: "user", Value: ""}}, TokenBucket: proxy.TokenBucket{MaxTokens: 5, TokensPerFill: 1, FillInterval: proxy.Duration(time.Second)}}}
				o.GlobalDomain, o.RLS = "d", "grpc://x:1"
				f := false
				o.GlobalRateLimits = []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{{RemoteAddress: &descriptor.RemoteAddressAction{}}}},
					{Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "path", DescriptorValue: "report"}},
						{HeaderValueMatch: &descriptor.HeaderValueMatchAction{DescriptorKey: "anon", DescriptorValue: "yes", ExpectMatch: &f, Headers: []descriptor.HeaderMatcher{{Name: "authorization"}}}}}}}
			})},

		{name: "27 proxies", argv: argv("--proxies 27"), err: "27 proxies, want 1..26"},
		{name: "no proxies", argv: argv("--proxies 0"), err: "--proxies must be 1..26, not 0"},
		{name: "rls without domain", argv: argv("--rls grpc://127.0.0.1:1"), err: "need --global-domain"},
		{name: "descriptor without domain", argv: argv("--global-descriptor a=b"), err: "need --global-domain"},
		{name: "deny without domain", argv: argv("--failure-mode-deny"), err: "need --global-domain"},
		{name: "domain without rls", argv: argv("--global-domain d --global-descriptor a=b"), err: "exactly one of --rls or --rls-config"},
		{name: "both rls", argv: argv("--global-domain d --global-descriptor a=b --rls grpc://x:1 --rls-config c.yaml"), err: "exactly one of --rls or --rls-config"},
		{name: "no descriptor", argv: argv("--global-domain d --rls grpc://x:1"), err: "at least one --global-descriptor"},
		{name: "descriptor without =", argv: argv("--global-domain d --rls grpc://x:1 --global-descriptor tenant"), err: `--global-descriptor "tenant": want key=value`},
		{name: "descriptor without value", argv: argv("--global-domain d --rls grpc://x:1 --global-descriptor tenant="), err: "descriptor_value is empty"},
		{name: "rls not grpc", argv: argv("--global-domain d --global-descriptor a=b --rls 127.0.0.1:1"), err: "want grpc://host:port"},
		{name: "per connection, timer", argv: argv("--local-max-tokens 3 --local-per-connection --local-token-bucket-mode timer"),
			want: defaults(func(o *LabOptions) { o.LocalMaxTokens, o.LocalPerConnection, o.LocalTokenBucket = 3, true, "timer" })},
		{name: "tokens per fill alone", argv: argv("--local-tokens-per-fill 5"), err: "need --local-max-tokens"},
		{name: "descriptor alone", argv: argv("--local-max-tokens 5 --local-descriptor user=A:1"), err: "go together"},
		{name: "bad descriptor", argv: argv("--local-max-tokens 5 --local-descriptor user=A"), err: `--local-descriptor: local descriptor "user=A"`},
		{name: "bad action", argv: argv("--global-domain d --rls grpc://x:1 --global-rate-limit header_value_match:v"), err: "--global-rate-limit: rate limit actions"},
		{name: "retries without retry-on", argv: argv("--num-retries 3"), err: "need --retry-on"},
		{name: "bad retry-on", argv: argv("--retry-on sometimes"), err: `unknown retry_on "sometimes"`},
		{name: "bad latency", argv: argv("--backend-latency soon"), err: `--backend-latency: latency "soon"`},
		{name: "bad error status", argv: argv("--backend-error-status 42"), err: "error_status 42"},
		{name: "no endpoints", argv: argv("--endpoints 0"), err: "--endpoints must be"},
		{name: "bad count", argv: argv("--max-retries -1"), err: "--max-retries must be a count"},
		{name: "bad bucket mode", argv: argv("--local-max-tokens 1 --local-token-bucket-mode leaky"), err: "--local-token-bucket-mode must be"},
		{name: "fill below 50ms", argv: argv("--local-max-tokens 5 --local-fill-interval 10ms"), err: "below Envoy's minimum 50ms"},
		{name: "bad window start", argv: argv("--window-start sliding"), err: `--window-start must be aligned or first-hit, not "sliding"`},
	})
}

// TestLabFlagsDescribeTheLab: the flags become the lab's own options; the
// lab (not the CLI) supplies the defaults.
func TestLabFlagsDescribeTheLab(t *testing.T) {
	lo := parseLab(t, "--proxies", "3", "--local-max-tokens", "5", "--local-fill-interval", "1s",
		"--global-domain", "inventory", "--global-descriptor", "tenant=lab", "--rls-config", "c.yaml", "--window-start", "first-hit", "--failure-mode-deny").labOptions()
	want := lab.Options{
		Proxies: lab.ProxiesOptions{Count: 3, Config: proxy.Config{
			Local:  &proxy.LocalRateLimit{MaxTokens: 5, FillInterval: proxy.Duration(time.Second)},
			Global: &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: "inventory", Timeout: proxy.Duration(20 * time.Millisecond), FailureModeDeny: true}, Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "tenant", DescriptorValue: "lab"}}}}}},
		RLS: lab.RLSOptions{Lab: &labrls.Options{WindowStart: "first-hit"}},
	}
	if !reflect.DeepEqual(lo, want) {
		t.Fatalf("lab options\n got %+v %+v %+v\nwant %+v %+v %+v", lo.Proxies, lo.Proxies.Config.Global, lo.RLS.Lab, want.Proxies, want.Proxies.Config.Global, want.RLS.Lab)
	}
	if ext := parseLab(t, "--global-domain", "d", "--global-descriptor", "a=b", "--rls", "grpc://x:1").labOptions(); ext.RLS.Address != "grpc://x:1" || ext.RLS.Lab != nil {
		t.Fatalf("external rls %+v", ext.RLS)
	}
}

// parseLab parses `rlbench lab` flags into LabOptions (failing the test on
// a usage error).
func parseLab(t *testing.T, args ...string) *LabOptions {
	t.Helper()
	var got *LabOptions
	if err := execute(NewLabCmd(tio, func(o *LabOptions) error { got = o; return nil }), args); err != nil || got == nil {
		t.Fatalf("rlbench lab %v: %v", args, err)
	}
	return got
}

func TestNewCollectEnvoyCmd(t *testing.T) {
	base := "--admin http://127.0.0.1:9901 --proxy proxy-a --label before --out ev"
	testCmd(t, NewCollectEnvoyCmd, []cmdCase[CollectEnvoyOptions]{
		{name: "defaults", argv: argv(base), want: &CollectEnvoyOptions{IO: tio, Admin: "http://127.0.0.1:9901", Proxy: "proxy-a", Label: "before", Out: "ev",
			Format: envoyrec.FormatText, Timeout: 5 * time.Second}},
		{name: "prometheus", argv: argv(base + " --format prometheus --timeout 1s"), want: &CollectEnvoyOptions{IO: tio, Admin: "http://127.0.0.1:9901", Proxy: "proxy-a",
			Label: "before", Out: "ev", Format: envoyrec.FormatPrometheus, Timeout: time.Second}},
		{name: "json", argv: argv(base + " --format json"), want: &CollectEnvoyOptions{IO: tio, Admin: "http://127.0.0.1:9901", Proxy: "proxy-a",
			Label: "before", Out: "ev", Format: envoyrec.FormatJSON, Timeout: 5 * time.Second}},
		{name: "missing admin", argv: argv("--proxy a --label before --out ev"), err: "--admin, --proxy, --label and --out are required"},
		{name: "path in proxy", argv: argv("--admin http://x --proxy ../x --label before --out ev"), err: "simple names"},
		{name: "dot in label", argv: argv("--admin http://x --proxy a --label be.fore --out ev"), err: "simple names"},
		{name: "bad format", argv: argv(base + " --format xml"), err: `--format must be text, json or prometheus, not "xml"`},
	})
	for _, f := range statsFormats {
		if _, ok := evidence.RawStatsExt(string(f)); !ok {
			t.Errorf("--format %s has no raw file extension", f)
		}
	}
}

func TestNewCollectRLSLogCmd(t *testing.T) {
	testCmd(t, NewCollectRLSLogCmd, []cmdCase[CollectRLSLogOptions]{
		{name: "file", argv: argv("ratelimit.log"), want: &CollectRLSLogOptions{IO: tio, File: "ratelimit.log"}},
		{name: "stdin to evidence", argv: argv("- --out ev"), want: &CollectRLSLogOptions{IO: tio, File: "-", Out: "ev"}},
		{name: "no file", argv: nil, err: "accepts 1 arg"},
	})
}

func TestNewCollectPrometheusCmd(t *testing.T) {
	testCmd(t, NewCollectPrometheusCmd, []cmdCase[CollectPrometheusOptions]{
		{name: "defaults", argv: argv("--url http://127.0.0.1:9090/metrics --label after --out ev"),
			want: &CollectPrometheusOptions{IO: tio, URL: "http://127.0.0.1:9090/metrics", Label: "after", Out: "ev", Timeout: 5 * time.Second}},
		{name: "timeout", argv: argv("--url http://x/metrics --label pre-1 --out ev --timeout 1s"),
			want: &CollectPrometheusOptions{IO: tio, URL: "http://x/metrics", Label: "pre-1", Out: "ev", Timeout: time.Second}},
		{name: "missing url", argv: argv("--label after --out ev"), err: "--url, --label and --out are required"},
		{name: "path in label", argv: argv("--url http://x --label ../../x --out ev"), err: "--label must be a simple name"},
	})
}

func TestNewCollectStatsdCmd(t *testing.T) {
	testCmd(t, NewCollectStatsdCmd, []cmdCase[CollectStatsdOptions]{
		{name: "defaults", argv: argv("--out s.jsonl"), want: &CollectStatsdOptions{IO: tio, Listen: "127.0.0.1:8125", Out: "s.jsonl"}},
		{name: "every flag", argv: argv("--listen 127.0.0.1:0 --out ev/rls/statsd.jsonl --duration 30s"),
			want: &CollectStatsdOptions{IO: tio, Listen: "127.0.0.1:0", Out: "ev/rls/statsd.jsonl", Duration: 30 * time.Second}},
		{name: "no out", argv: nil, err: "--out FILE is required"},
		{name: "negative duration", argv: argv("--out s --duration -1s"), err: "--duration must be >= 0"},
	})
}

func TestNewCollectAccessLogCmd(t *testing.T) {
	testCmd(t, NewCollectAccessLogCmd, []cmdCase[CollectAccessLogOptions]{
		{name: "defaults", argv: argv("access.log"), want: &CollectAccessLogOptions{IO: tio, File: "access.log", Format: "table"}},
		{name: "json from stdin", argv: argv("--format json -"), want: &CollectAccessLogOptions{IO: tio, File: "-", Format: "json"}},
		{name: "no file", argv: nil, err: "accepts 1 arg"},
		{name: "bad format", argv: argv("--format csv access.log"), err: `--format must be table or json, not "csv"`},
	})
}

func TestNewLintCmd(t *testing.T) {
	testCmd(t, NewLintCmd, []cmdCase[LintOptions]{
		{name: "defaults", argv: argv("envoy.yaml"), want: &LintOptions{IO: tio, Files: []string{"envoy.yaml"}, Format: "table"}},
		{name: "every flag", argv: argv("a.yaml b.yaml --rls-config cfg --format json"),
			want: &LintOptions{IO: tio, Files: []string{"a.yaml", "b.yaml"}, RLSConfig: "cfg", Format: "json"}},
		{name: "no file", argv: nil, err: "requires at least 1 arg"},
		{name: "bad format", argv: argv("--format sarif a.yaml"), err: `--format must be table or json, not "sarif"`},
	})
}

func TestNewCollectReceiptsCmd(t *testing.T) {
	testCmd(t, NewCollectReceiptsCmd, []cmdCase[CollectReceiptsOptions]{
		{name: "two replicas", argv: argv("--url http://10.0.0.7:8080 --url https://u:pw@b.example:8443/_rlbench/receipts --out ev"),
			want: &CollectReceiptsOptions{IO: tio, URLs: []string{"http://10.0.0.7:8080/_rlbench/receipts", "https://u:pw@b.example:8443/_rlbench/receipts"},
				Out: "ev", Timeout: 10 * time.Minute, MaxBytes: 4 << 30}},
		{name: "every flag", argv: argv("--url http://a:1 --out ev --timeout 5s --max-bytes 1000"),
			want: &CollectReceiptsOptions{IO: tio, URLs: []string{"http://a:1/_rlbench/receipts"}, Out: "ev", Timeout: 5 * time.Second, MaxBytes: 1000}},
		{name: "no url", argv: argv("--out ev"), err: "--url (at least one) and --out are required"},
		{name: "no out", argv: argv("--url http://a:1"), err: "--url (at least one) and --out are required"},
		{name: "twice", argv: argv("--url http://a:1 --url http://a:1/ --out ev"), err: "the same backend"},
		{name: "negative max", argv: argv("--url http://a:1 --out ev --max-bytes -1"), err: "--max-bytes must not be negative"},
		{name: "port out of range", argv: argv("--url http://127.0.0.1:99999 --out ev"), err: `--url: "http://127.0.0.1:99999": port "99999" is not a port number 1..65535`},
	})
}

func TestNewMergeCmd(t *testing.T) {
	testCmd(t, NewMergeCmd, []cmdCase[MergeOptions]{
		{name: "shards", argv: argv("s0 s1 rec --out run"), want: &MergeOptions{IO: tio, Inputs: []string{"s0", "s1", "rec"}, Out: "run"}},
		{name: "scenario", argv: argv("ev --out run --scenario sc.json"), want: &MergeOptions{IO: tio, Inputs: []string{"ev"}, Out: "run", Scenario: "sc.json"}},
		{name: "no out", argv: argv("s0"), err: "--out is required"},
		{name: "no input", argv: argv("--out run"), err: "requires at least 1 arg"},
	})
}

// TestEveryLeafHasAnOptionsTest: each leaf command of the tree has a
// TestNewXCmd above (the list is kept by hand; a new command fails here
// until its table test exists).
func TestNewWaitCmd(t *testing.T) {
	testCmd(t, NewWaitCmd, []cmdCase[WaitOptions]{
		{name: "README", argv: argv("http://127.0.0.1:10100/ready http://127.0.0.1:10101/ready"),
			want: &WaitOptions{IO: tio, URLs: []string{"http://127.0.0.1:10100/ready", "http://127.0.0.1:10101/ready"}, Timeout: 10 * time.Second, Interval: 50 * time.Millisecond}},
		{name: "every flag", argv: argv("--timeout 30s --interval 1s https://envoy:9901/ready"),
			want: &WaitOptions{IO: tio, URLs: []string{"https://envoy:9901/ready"}, Timeout: 30 * time.Second, Interval: time.Second}},
		{name: "no URL", argv: nil, err: "requires at least 1 arg"},
		{name: "not a URL", argv: argv("127.0.0.1:9901"), err: `"127.0.0.1:9901" is not an http(s) URL`},
		{name: "zero timeout", argv: argv("--timeout 0s http://x/ready"), err: "--timeout and --interval must be > 0"},
		{name: "port out of range", argv: argv("http://127.0.0.1:99999/ready"), err: `port "99999" is not a port number 1..65535`},
	})
}

func TestEveryLeafHasAnOptionsTest(t *testing.T) {
	tested := map[string]bool{"wait": true, "analyze": true, "report": true, "diff": true, "export vegeta": true, "run": true, "simulate": true, "demo": true, "attack": true, "backend": true, "lab": true, "lint": true,
		"collect envoy": true, "collect rls-log": true, "collect prometheus": true, "collect statsd": true, "collect envoy-access-log": true,
		"collect nginx-access-log": true, "collect nginx-status": true, // the nginx ones: collect_nginx_test.go
		"collect receipts": true, "merge": true, "runs prune": true, // runs prune: runs_test.go
		"conformance": true} // conformance_test.go
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Name() == "help" || s.Name() == "completion" {
				continue
			}
			if s.HasSubCommands() {
				walk(s)
				continue
			}
			n++
			name := strings.TrimPrefix(s.CommandPath(), "rlbench ")
			if !tested[name] {
				t.Errorf("leaf command %q has no TestNew...Cmd table test", name)
			}
		}
	}
	walk(NewRoot(tio))
	if n != len(tested) {
		t.Errorf("%d leaf commands, %d tested", n, len(tested))
	}
}

func u32(v uint32) *uint32 { return &v }

func ptrTo[T any](v T) *T { return &v }

// The data-path flags become the lab's proxy and backend options.
func TestLabDataPathFlagsDescribeTheLab(t *testing.T) {
	lo := parseLab(t, "--proxies", "1", "--endpoints", "3", "--backend-error-status", "503", "--retry-on", "5xx", "--num-retries", "2",
		"--retry-base-interval", "5ms", "--max-pending-requests", "4", "--outlier-max-ejection-percent", "34", "--healthy-panic-threshold", "0",
		"--local-max-tokens", "10", "--local-fill-interval", "1s", "--local-rate-limit", "request_headers:x-user=user", "--local-descriptor", "user=A:2",
		"--local-always-consume-default-token-bucket=false", "--include-attempt-count", "--proxy-seed", "7").labOptions()
	c := lo.Proxies.Config
	if lo.Backend.Endpoints != 3 || lo.Backend.Faults.ErrorStatus != 503 {
		t.Fatalf("backend %+v", lo.Backend)
	}
	if c.Retry == nil || c.Retry.RetryOn != "5xx" || *c.Retry.NumRetries != 2 || time.Duration(c.Retry.RetryBackOff.BaseInterval) != 5*time.Millisecond {
		t.Fatalf("retry %+v", c.Retry)
	}
	if c.CircuitBreakers == nil || *c.CircuitBreakers.MaxPendingRequests != 4 || c.CircuitBreakers.MaxConnections != nil {
		t.Fatalf("breakers %+v", c.CircuitBreakers)
	}
	if c.OutlierDetection == nil || *c.OutlierDetection.MaxEjectionPercent != 34 || *c.HealthyPanicThreshold != 0 || !c.IncludeAttemptCount || c.Seed != 7 {
		t.Fatalf("cluster %+v %+v", c.OutlierDetection, c)
	}
	if l := c.Local; l == nil || len(l.Descriptors) != 1 || len(l.RateLimits) != 1 || l.AlwaysConsumeDefaultTokenBucket == nil || *l.AlwaysConsumeDefaultTokenBucket {
		t.Fatalf("local %+v", c.Local)
	}
	if err := lo.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := parseLab(t).labOptions(); d.Proxies.Config.Retry != nil || d.Proxies.Config.CircuitBreakers != nil || d.Proxies.Config.OutlierDetection != nil || d.Backend.Endpoints != 0 {
		t.Fatalf("defaults add data-path config: %+v", d.Proxies.Config)
	}
}

// TestLabFile: -f reads a plan scenario's lab: section; the example file
// describes the same lab as the flags its comment gives, only --listen-base,
// --receipts and --decisions go beside it, and a bad file is a usage error
// naming its line.
func TestLabFile(t *testing.T) {
	file := filepath.Join(testfix.RepoRoot(t), "examples", "lab", "per-user.yaml")
	fromFile := parseLab(t, "-f", file, "--listen-base", "10000", "--receipts", "r.jsonl")
	fromFlags := parseLab(t, "--proxies", "1", "--local-max-tokens", "1000", "--local-fill-interval", "1s",
		"--local-rate-limit", "request_headers:x-user=user", "--local-descriptor", "user=A:10:10:1s", "--local-descriptor", "user=:100:100:1s", "--listen-base", "10000")
	got, want := fromFile.labOptions(), fromFlags.labOptions()
	if fromFile.Lab == nil || fromFile.Receipts != "r.jsonl" || got.ListenBase != 10000 {
		t.Fatalf("options %+v", fromFile)
	}
	// The flags' defaults the file leaves to the lab: always_consume (nil: true).
	want.Proxies.Config.Local.AlwaysConsumeDefaultTokenBucket = nil
	if !reflect.DeepEqual(got.Proxies, want.Proxies) || !reflect.DeepEqual(got.RLS, want.RLS) || !reflect.DeepEqual(got.Backend, want.Backend) {
		t.Fatalf("file and flags differ:\n file %+v %+v\nflags %+v %+v", got.Proxies, got.Proxies.Config.Local, want.Proxies, want.Proxies.Config.Local)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", "proxies: 1\nlocal: {max_tokens: 1, fill_interval: soon}\n")
	rls := write("rls.yaml", "global: {domain: d, descriptors: [{generic_key: {descriptor_value: v}}]}\nrls: {config: \"domain: d\\ndescriptors:\\n  - {key: generic_key, value: v, rate_limit: {unit: second, requests_per_unit: 1}}\\n\"}\n")
	real := write("real.yaml", "global: {domain: d, descriptors: [{generic_key: {descriptor_value: v}}]}\nrls: {kind: real, config: \"domain: d\"}\n")
	gw := write("gateway.yaml", "gateway: {xrate: {rate: 1, burst: 1}}\n")
	hap := write("haproxy.yaml", "haproxy: {limit: 5, period: 1s}\n")
	badHap := write("badhaproxy.yaml", "haproxy:\n  limit: 5\n  period: 1s\n  deny_status: 42\n")
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"-f", bad}, bad + `: line 2: local.fill_interval: time: invalid duration "soon"`},
		{[]string{"-f", file, "--proxies", "3"}, "--proxies: the lab is in -f"},
		{[]string{"-f", file, "--retry-on", "5xx", "--rls", "grpc://x:1"}, "--retry-on, --rls: the lab is in -f"},
		{[]string{"-f", real}, "rls.kind real: rlbench lab starts the lab RLS"},
		{[]string{"-f", gw}, "gateway: rlbench lab starts the lab proxies; run a plan for lab.gateway"},
		{[]string{"-f", hap}, "haproxy: rlbench lab starts the lab proxies; run a plan for lab.haproxy"},
		{[]string{"-f", badHap}, badHap + ": line 4: lab.haproxy.deny_status 42: want 200..599"},
		{[]string{"-f", filepath.Join(dir, "absent.yaml")}, "absent.yaml"},
	} {
		err := execute(NewLabCmd(tio, func(*LabOptions) error { return nil }), c.args)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: %v, want %q", c.args, err, c.err)
		}
		var ue *UsageError
		if usage := errors.As(err, &ue); usage == strings.Contains(c.err, "absent") {
			t.Errorf("%v: usage error %v", c.args, usage)
		}
	}
	lo := parseLab(t, "-f", rls).labOptions()
	if lo.RLS.Lab == nil || lo.Proxies.Config.Global == nil || lo.Proxies.Count != lab.DefaultProxies {
		t.Fatalf("lab rls from the file: %+v", lo)
	}
}

// TestLabHelpShowsTheCommonFlags: the long tail of lab flags is hidden
// (still parsed), the help says -f gives them.
func TestLabHelpShowsTheCommonFlags(t *testing.T) {
	cmd := NewLabCmd(tio, nil)
	visible := 0
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			visible++
		}
	})
	if visible != len(labCommonFlags) || visible > 13 {
		t.Fatalf("%d visible flags", visible)
	}
	if f := cmd.Flags().Lookup("outlier-interval"); f == nil || !f.Hidden {
		t.Fatal("--outlier-interval not kept as a hidden flag")
	}
	if !strings.Contains(cmd.Long, "still work but are hidden: see -f") {
		t.Fatal("help does not point the hidden flags to -f")
	}
}
