package evidence

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/evidence/safefile"
)

// File and directory names of an evidence directory, relative to a scenario
// directory (or, for ManifestFile, StatusFile and LatestLink, to a run
// directory or its root). Use Dir to build paths.
const (
	ScenarioFile = "scenario.json"
	NotRunFile   = "NOT_RUN"
	AttackFile   = "attack.json"
	RequestsFile = "requests.jsonl"
	ReceiptsFile = "receipts.jsonl"
	// ReceiptsDir holds receipts pulled from running backends (`rlbench
	// collect receipts`), one receipts/<source>.jsonl per backend replica;
	// merge.Merge joins them with every receipts.jsonl into one.
	ReceiptsDir = "receipts"
	// MergeFile records a merge of shard directories (merge.Merge).
	MergeFile = "merge.json"
	// HarnessFile records what rlbench measured of its own host while the
	// scenario ran (Harness).
	HarnessFile   = "harness.json"
	FaultsFile    = "faults.jsonl"
	StatusFile    = "status.txt"
	ManifestFile  = "manifest.json"
	LatestLink    = "latest"
	RLSDir        = "rls"
	DecisionsFile = RLSDir + "/decisions.jsonl"
	// RLSLogFile is the real envoyproxy/ratelimit's log; its presence (or that
	// of RLSParsedLogFile) means the scenario ran on the real RLS.
	RLSLogFile = RLSDir + "/rls.log"
	// RLSParsedLogFile is the RLS log parsed by `rlbench collect rls-log --out`.
	RLSParsedLogFile = RLSDir + "/log.json"
	// RedisDir holds the log of a real-RLS scenario's private redis-server.
	RedisDir = RLSDir + "/redis"
	// GatewayDir holds the lab gateway's evidence beside its access log
	// (accesslog/gateway.log): GatewayScriptFile, the Lua script it ran,
	// and GatewayRedisDir, the log of its private redis-server.
	GatewayDir        = "gateway"
	GatewayScriptFile = GatewayDir + "/script.lua"
	GatewayRedisDir   = GatewayDir + "/redis"
	StatsDir          = "stats"
	AccessLogDir      = "accesslog"
	metricsPrefix     = "metrics."
)

// Schema IDs of the files rlbench writes, "rlbench.<thing>/v<N>"; the JSON
// Schema of each is schemas/<thing>.v<N>.schema.json, generated from these
// types (go generate ./...). A reader accepts the IDs listed with each type
// (earlier versions included). Files that carry no "schema" field (the JSON
// Lines records) are identified by their name; their IDs only name their
// schemas.
const (
	// RequestSchema is the schema of one requests.jsonl line (Request).
	RequestSchema = "rlbench.request/v1"
	// ReceiptSchema is the schema of one receipts.jsonl line (Receipt).
	ReceiptSchema = "rlbench.receipt/v1"
	// FaultSchema is the schema of one faults.jsonl line (Fault).
	FaultSchema = "rlbench.fault/v1"
	// DecisionSchema is the schema of one rls/decisions.jsonl line (Decision).
	DecisionSchema = "rlbench.decision/v1"
	// RLSLogSchema is the schema of rls/log.json (collect/rls.Log).
	RLSLogSchema = "rlbench.rls-log/v1"
	// ScenarioSchema is the schema of scenario.json (Scenario).
	ScenarioSchema = "rlbench.scenario/v1"
	// AttackSchema is the schema of attack.json since the attack file
	// became one shape (Attack). Files of AttackSummarySchema, in either
	// earlier shape, still load.
	AttackSchema = "rlbench.attack/v2"
	// AttackSummarySchema is the schema of one attack's AttackSummary, and of
	// attack.json as written before AttackSchema.
	AttackSummarySchema = "rlbench.attack/v1"
	// ManifestSchema is the schema of manifest.json (Manifest).
	ManifestSchema = "rlbench.manifest/v1"
	// HarnessSchema is the schema of harness.json (Harness).
	HarnessSchema = "rlbench.harness/v1"
	// RLSMetricsSchema is the schema of rls/metrics.<label>.json
	// (RLSMetrics, or a bare RLSCounters of an older collect).
	RLSMetricsSchema = "rlbench.rls-metrics/v1"
)

// Snapshot labels used by the runner: the proxies' and the RLS's counters
// are saved before the first and after the last attack of a scenario.
const (
	LabelBefore = "before"
	LabelAfter  = "after"
)

// Dir is a scenario (or run) directory; its methods return the paths of the
// files in it. Dir("") is the current directory.
type Dir string

// Path joins the directory and a name relative to it (one of the file-name
// constants, or a path under one of the directories).
func (d Dir) Path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

// Glob returns the paths under d that match rel, a slash-separated pattern
// relative to d with filepath.Match's syntax in each element
// ("accesslog/*.log", "nginx/*/nginx.conf"), in lexical order. d's own path
// is taken literally: a directory named "run[1]" or "a*b" holds its files
// (filepath.Glob on the joined path would read it as a pattern, find
// nothing or fail, and the evidence in it would silently go unread). As
// filepath.Glob, it ignores I/O errors; its only error is
// filepath.ErrBadPattern from rel.
func (d Dir) Glob(rel string) ([]string, error) {
	matches := []string{filepath.Clean(string(d))}
	for _, elem := range strings.Split(rel, "/") {
		if _, err := filepath.Match(elem, ""); err != nil {
			return nil, err
		}
		var next []string
		for _, dir := range matches {
			if !strings.ContainsAny(elem, `*?[\`) {
				if p := filepath.Join(dir, elem); exists(p) {
					next = append(next, p)
				}
				continue
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if ok, _ := filepath.Match(elem, e.Name()); ok {
					next = append(next, filepath.Join(dir, e.Name()))
				}
			}
		}
		matches = next
	}
	slices.Sort(matches)
	return matches, nil
}

// exists reports whether path names a file of any kind (os.Lstat).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Scenario is <d>/scenario.json.
func (d Dir) Scenario() string { return d.Path(ScenarioFile) }

// NotRun is <d>/NOT_RUN.
func (d Dir) NotRun() string { return d.Path(NotRunFile) }

// Attack is <d>/attack.json.
func (d Dir) Attack() string { return d.Path(AttackFile) }

// Requests is <d>/requests.jsonl.
func (d Dir) Requests() string { return d.Path(RequestsFile) }

// Receipts is <d>/receipts.jsonl.
func (d Dir) Receipts() string { return d.Path(ReceiptsFile) }

// CollectedReceipts is <d>/receipts/<source>.jsonl (source must pass CheckName).
func (d Dir) CollectedReceipts(source string) string {
	return d.Path(ReceiptsDir + "/" + source + ".jsonl")
}

// Merge is <d>/merge.json.
func (d Dir) Merge() string { return d.Path(MergeFile) }

// Harness is <d>/harness.json.
func (d Dir) Harness() string { return d.Path(HarnessFile) }

// Faults is <d>/faults.jsonl.
func (d Dir) Faults() string { return d.Path(FaultsFile) }

// Decisions is <d>/rls/decisions.jsonl.
func (d Dir) Decisions() string { return d.Path(DecisionsFile) }

// Status is <d>/status.txt.
func (d Dir) Status() string { return d.Path(StatusFile) }

// Manifest is <d>/manifest.json.
func (d Dir) Manifest() string { return d.Path(ManifestFile) }

// Latest is <d>/latest, the link to the newest run directory under a root.
func (d Dir) Latest() string { return d.Path(LatestLink) }

// RLS is <d>/rls.
func (d Dir) RLS() string { return d.Path(RLSDir) }

// RLSLog is <d>/rls/rls.log.
func (d Dir) RLSLog() string { return d.Path(RLSLogFile) }

// RLSParsedLog is <d>/rls/log.json.
func (d Dir) RLSParsedLog() string { return d.Path(RLSParsedLogFile) }

// Redis is <d>/rls/redis.
func (d Dir) Redis() string { return d.Path(RedisDir) }

// RLSMetrics is <d>/rls/metrics.<label>.json (parsed) or, with ext ".prom",
// the raw page.
func (d Dir) RLSMetrics(label, ext string) string {
	return d.Path(RLSDir + "/" + metricsPrefix + label + ext)
}

// GatewayScript is <d>/gateway/script.lua.
func (d Dir) GatewayScript() string { return d.Path(GatewayScriptFile) }

// GatewayRedis is <d>/gateway/redis.
func (d Dir) GatewayRedis() string { return d.Path(GatewayRedisDir) }

// Stats is <d>/stats.
func (d Dir) Stats() string { return d.Path(StatsDir) }

// StatsSnapshot is <d>/stats/<proxy>.<label><ext>: ext ".json" for the parsed
// snapshot, or RawStatsExt(format) for the raw body.
func (d Dir) StatsSnapshot(proxy, label, ext string) string {
	return d.Path(StatsDir + "/" + proxy + "." + label + ext)
}

// AccessLogs is <d>/accesslog.
func (d Dir) AccessLogs() string { return d.Path(AccessLogDir) }

// AccessLog is <d>/accesslog/<proxy>.log.
func (d Dir) AccessLog(proxy string) string { return d.Path(AccessLogFile(proxy)) }

// AccessLogFile is accesslog/<proxy>.log, relative to a scenario directory.
func AccessLogFile(proxy string) string { return AccessLogDir + "/" + proxy + ".log" }

// RawStatsExt is the extension of a raw Envoy /stats body saved beside its
// parsed snapshot: ".txt" for the text rendering (GET /stats), ".raw.json"
// for ?format=json, ".prom" for /stats/prometheus. ok is false for any other
// format name.
func RawStatsExt(format string) (ext string, ok bool) {
	switch format {
	case "text", "":
		return ".txt", true
	case "json":
		return ".raw.json", true
	case "prometheus":
		return ".prom", true
	}
	return "", false
}

// Mkdir creates the directory (and parents) of the file path p, following
// links: for a path the user named. Below a directory rlbench writes
// evidence into, use Dir.MkdirFor.
func Mkdir(p string) error { return os.MkdirAll(filepath.Dir(p), 0o755) }

// MkdirFor creates the directory of the file path p (d or a directory below
// d) and those on the way, without following a link below d
// (safefile.MkdirAll): a symbolic link or a non-directory at stats/, rls/,
// nginx/<proxy>/ ... is refused with a *safefile.RefusedError naming it. d
// itself is created if missing and followed as the user named it.
func (d Dir) MkdirFor(p string) error { return safefile.MkdirAll(string(d), filepath.Dir(p)) }

// IsScenarioDir reports whether d holds scenario evidence: scenario.json,
// requests.jsonl or NOT_RUN.
func IsScenarioDir(d string) bool {
	for _, f := range []string{ScenarioFile, RequestsFile, NotRunFile} {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			return true
		}
	}
	return false
}
