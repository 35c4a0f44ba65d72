package evidence

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/jsonline"
)

// Load reads the evidence directory dir into memory. dir is either one
// scenario directory (it holds scenario.json, requests.jsonl or NOT_RUN) or
// a run directory whose sub-directories, to any depth, are scenario
// directories (stats/ and rls/ are never searched). Each file is read once,
// line by line: requests.jsonl and receipts.jsonl are decoded in parallel,
// keeping only the columns of Requests and Receipts.
//
// Missing or malformed evidence is not an error: it is a Problem of the
// scenario naming the file and line (a truncated last line says so), and so
// is a sealed JSON Lines file that its writer never closed, closed after a
// write error, or that changed since (seal.go). A request line whose
// sent_ns or latency_ns is negative stops the read like a malformed one;
// contradictory lines are Problems naming the first such line: a request
// sent outside attack.json's start_ns..end_ns, one recorded as not sent
// that attack.json does not report, a receipt earlier than its request's
// sent_ns or of a request not sent (ClockTolerance). A run directory's
// manifest.json that cannot be read or does not decode (a truncated one)
// is a Problem of the Bundle (Bundle.Problems), and its scenario
// directories are then those of a run (scenario.json required). The
// error is non-nil only when dir cannot be read, it or its manifest.json
// holds more than MaxRunScenarios scenario directories (CheckRunScenarios:
// the error names manifest.json's field or dir), or ctx is done.
func Load(ctx context.Context, dir string) (*Bundle, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	// Walk the real directory (<root>/latest is a symlink).
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Dir: dir, Root: root, Scenarios: []*ScenarioEvidence{}, Missing: []string{}, Problems: []Problem{}}
	inRun, err := b.readManifest(ctx)
	if err != nil {
		return nil, err
	}
	dirs, err := scenarioDirs(root)
	if errors.Is(err, errTooManyScenarios) {
		return nil, fmt.Errorf("%s: more than %d scenario directories below it, the most one run has (analyze each run directory on its own)", dir, walkCap)
	}
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := loadScenario(ctx, d, inRun)
		if rel, err := filepath.Rel(root, d); err == nil {
			s.Dir = rel
		}
		found[s.Dir] = true
		b.Scenarios = append(b.Scenarios, s)
	}
	if b.Manifest != nil {
		for _, d := range b.Manifest.ScenarioDirs {
			if !found[filepath.Clean(d)] {
				b.Missing = append(b.Missing, filepath.Clean(d))
			}
		}
	}
	return b, ctx.Err()
}

// readManifest reads manifest.json of b's run directory into b.Manifest, or
// a Problem naming it and the line when it is present but cannot be read or
// does not decode. It reports whether a manifest is present: the directory
// is then a run directory, whatever its manifest says. The error is a
// manifest listing more than MaxRunScenarios scenario directories.
func (b *Bundle) readManifest(ctx context.Context) (bool, error) {
	raw, err := boundedio.ReadRegular(ctx, Dir(b.Root).Manifest(), MaxDocumentBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		var m Manifest
		if err = json.Unmarshal(raw, &m); err == nil {
			if err := CheckRunScenarios(Dir(b.Dir).Manifest()+": scenario_dirs", len(m.ScenarioDirs)); err != nil {
				return true, err
			}
			b.Manifest = &m
			return true, nil
		}
		err = JSONError(raw, err)
	}
	if ctx.Err() == nil {
		b.Problems = append(b.Problems, Problem{File: ManifestFile, Msg: fmt.Sprintf("%s: %v", Dir(b.Dir).Manifest(), err)})
	}
	return true, nil
}

// errTooManyScenarios stops scenarioDirs' walk past walkCap.
var errTooManyScenarios = errors.New("too many scenario directories")

// walkCap is the most scenario directories scenarioDirs finds: MaxRunScenarios
// (a variable for tests).
var walkCap = MaxRunScenarios

// scenarioDirs returns the scenario directories at or below root, sorted;
// past walkCap it stops with errTooManyScenarios.
func scenarioDirs(root string) ([]string, error) {
	if IsScenarioDir(root) {
		return []string{root}, nil
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == root {
			return nil
		}
		if d.Name() == StatsDir || d.Name() == RLSDir || d.Name() == NginxDir || d.Name() == HAProxyDir {
			return fs.SkipDir
		}
		if IsScenarioDir(p) {
			out = append(out, p)
			if len(out) > walkCap {
				return errTooManyScenarios
			}
			return fs.SkipDir
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// LoadScenario reads one scenario directory (see Load); inRun tells whether
// it belongs to a run directory, where scenario.json is required. Its Dir is
// dir as given.
func LoadScenario(ctx context.Context, dir string, inRun bool) *ScenarioEvidence {
	s := loadScenario(ctx, dir, inRun)
	s.Dir = dir
	return s
}

func loadScenario(ctx context.Context, path string, inRun bool) *ScenarioEvidence {
	d := Dir(path)
	s := &ScenarioEvidence{Dir: ".", Path: path, InRun: inRun, Faults: []Fault{}, Decisions: []Decision{}, Stats: []ProxySnapshots{},
		AccessLogs: []AccessLog{}, RLSMetrics: []RLSMetrics{}, Nginx: []NginxEvidence{}, Problems: []Problem{}}
	problem := func(file, format string, a ...any) {
		s.Problems = append(s.Problems, Problem{File: file, Msg: fmt.Sprintf(format, a...)})
	}

	// scenario.json (optional for a bare attack, but then nothing is expected).
	sp := d.Scenario()
	if b, err := boundedio.ReadRegular(ctx, sp, MaxDocumentBytes); err == nil {
		sc, err := DecodeScenario(b)
		switch {
		case err != nil:
			problem(ScenarioFile, "%s: %v", sp, err)
		case sc.Schema != ScenarioSchema || sc.Name == "":
			problem(ScenarioFile, "%s: not a scenario (want schema %q and a name)", sp, ScenarioSchema)
		default:
			s.Scenario, s.HasScenario = sc, true
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		problem(ScenarioFile, "%s: %v", sp, err)
	} else if inRun {
		problem(ScenarioFile, "%s: missing (every scenario of a run has one)", sp)
	}

	if b, err := boundedio.ReadRegular(ctx, d.NotRun(), MaxDocumentBytes); err == nil {
		s.NotRun = true
		s.NotRunReason = strings.TrimSpace(string(b))
		if s.NotRunReason == "" {
			s.NotRunReason = "not run"
		}
		return s
	}

	readMerge(ctx, d, s)
	readHarness(ctx, d, s)
	ap := d.Attack()
	if b, err := boundedio.ReadRegular(ctx, ap, MaxDocumentBytes); err != nil {
		problem(AttackFile, "%s: missing (the attack did not finish writing its summary)", ap)
	} else if a, err := DecodeAttack(b); err != nil {
		problem(AttackFile, "%s: %v", ap, JSONError(b, err))
	} else {
		s.Attack = a
	}

	// Access logs first: receipts keep their x-request-id only when a log may join it.
	s.AccessLogs, s.Problems = readAccessLogs(d, s.Problems)

	cls, _ := NewClassifier(s.Scenario.Classify) // validated by DecodeScenario
	clk := newClockChecks(s.Attack, s.Scenario.Limiters, s.Merge)
	reqProblems, reqErr := readRequests(ctx, d.Requests(), cls, len(s.AccessLogs) > 0, &s.Requests, &s.Receipts, d.Receipts(), clk)
	s.Requests.received(&s.Receipts)
	s.HasRequests = !errors.Is(reqErr.requests, fs.ErrNotExist)
	s.Problems = append(s.Problems, reqProblems...)
	if reqErr.requests != nil && s.HasRequests {
		problem(RequestsFile, "%v", reqErr.requests)
	}
	if reqErr.receipts != nil {
		problem(ReceiptsFile, "%v", reqErr.receipts)
	}
	s.Problems = append(s.Problems, checkSeals(d)...) // a recorder that died is not a lost request (seal.go)

	if err := ReadFile(d.Faults(), func(_ int, f *Fault) error {
		s.Faults = append(s.Faults, *f)
		return nil
	}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		problem(FaultsFile, "%v", err)
	}
	err := ReadFile(d.Decisions(), func(line int, x *Decision) error {
		switch {
		case x.TimeNs < 0:
			return fmt.Errorf("%s:%d: time_ns %d is not a unix ns time", d.Decisions(), line, x.TimeNs)
		case x.RecvNs < 0 || x.RecvNs > 0 && x.TimeNs > 0 && x.RecvNs > x.TimeNs:
			return fmt.Errorf("%s:%d: recv_ns %d is not a unix ns time at or before the decision's time_ns %d", d.Decisions(), line, x.RecvNs, x.TimeNs)
		}
		s.Decisions = append(s.Decisions, *x)
		return nil
	})
	s.HasDecisions = !errors.Is(err, fs.ErrNotExist)
	if err != nil && s.HasDecisions {
		problem(DecisionsFile, "%v", err)
	}

	s.Stats, s.Problems = readStats(d, s.Scenario.Proxies, s.Problems)
	s.Nginx, s.Problems = readNginx(d, s.Problems)
	s.HAProxy, s.Problems = readHAProxy(d, s.Problems)

	_, err1 := os.Stat(d.RLSLog())
	_, err2 := os.Stat(d.RLSParsedLog())
	s.RLSLog, s.RLSParsedLog = err1 == nil, err2 == nil
	limitReqFromNginx(s)
	s.RLSPendingLookups = -1
	if s.RLSParsedLog {
		if err := readRLSLogFacts(d.RLSParsedLog(), s); err != nil {
			problem(RLSParsedLogFile, "%v", err)
		}
	}
	paths, labels := rlsMetricsFiles(d)
	for i, p := range paths {
		s.RLSMetrics = append(s.RLSMetrics, decodeRLSMetrics(p, labels[i]))
	}
	// the receipts and nginx records are joined: the ID index is rebuilt
	// only if a later join (access logs, ...) looks an ID up
	s.Requests.IDs.releaseIndex()
	return s
}

// limitReqFromNginx records the $limit_req_status of every request that an
// nginx proxy's access log (s.Nginx, evidence/nginxrec.AccessRecord) names by
// ID into s.LimitReq, for the nginx_limit_req model's observed decisions.
// (analyze classifies a REJECTED reply as the limiter's rejection.)
func limitReqFromNginx(s *ScenarioEvidence) {
	for _, n := range s.Nginx {
		for k := range n.Records {
			a := &n.Records[k]
			i, ok := s.Requests.IDs.Lookup(a.ID)
			if a.ID == "" || !ok || a.LimitReqStatus == nginxrec.LimitReqNone {
				continue
			}
			if s.LimitReq == nil {
				s.LimitReq = map[int32]string{}
			}
			s.LimitReq[int32(i)] = a.LimitReqStatus
		}
	}
}

// readRLSLogFacts reads the configuration loads and the hung lookups of
// rls/log.json (collect/rls.Log, written by `rlbench collect rls-log --out`
// and by the runner).
func readRLSLogFacts(path string, s *ScenarioEvidence) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var lg struct {
		ConfigLoads    []RLSConfigLoad   `json:"config_loads"`
		PendingLookups []json.RawMessage `json:"pending_lookups"`
	}
	if err := json.Unmarshal(b, &lg); err != nil {
		return fmt.Errorf("%s: %w", path, JSONError(b, err))
	}
	s.RLSConfigLoads = append([]RLSConfigLoad{}, lg.ConfigLoads...)
	s.RLSPendingLookups = len(lg.PendingLookups)
	return nil
}

// readStats loads stats/<proxy>.{before,after}.json of every proxy named in
// proxies or with such a file; a name in proxies that is not a CheckName
// name is a Problem (it is never read as a path), and so are more than
// MaxScenarioProxies proxies (none is read).
func readStats(d Dir, proxies []string, problems []Problem) ([]ProxySnapshots, []Problem) {
	names := map[string]bool{}
	for _, p := range proxies {
		if err := CheckName("scenario.json proxies", p); err != nil { // never a path out of stats/
			problems = append(problems, Problem{File: StatsDir, Msg: err.Error()})
			continue
		}
		names[p] = true
	}
	entries, err := os.ReadDir(d.Stats())
	if err == nil {
		for _, e := range entries {
			if p, rest, ok := strings.Cut(e.Name(), "."); ok && (rest == LabelBefore+".json" || rest == LabelAfter+".json") {
				names[p] = true
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, Problem{File: StatsDir, Msg: err.Error()})
	}
	if err := CheckScenarioProxies(d.Stats()+" and "+ScenarioFile+" proxies", len(names)); err != nil {
		return []ProxySnapshots{}, append(problems, Problem{File: StatsDir, Msg: err.Error()})
	}
	sorted := make([]string, 0, len(names))
	for p := range names {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	out := make([]ProxySnapshots, 0, len(sorted))
	for _, p := range sorted {
		ps := ProxySnapshots{Proxy: p}
		var err error
		if ps.Before, err = readStatsAs(d.StatsSnapshot(p, LabelBefore, ".json"), p, LabelBefore); err != nil {
			ps.BeforeErr = err.Error()
		}
		if ps.After, err = readStatsAs(d.StatsSnapshot(p, LabelAfter, ".json"), p, LabelAfter); err != nil {
			ps.AfterErr = err.Error()
		}
		out = append(out, ps)
	}
	return out, problems
}

// ReadStats reads a parsed stats snapshot (stats/<proxy>.<label>.json); a
// file of another schema than envoyrec.SnapshotSchema is an error.
func ReadStats(path string) (*envoyrec.Snapshot, error) { return readStatsAs(path, "", "") }

// readStatsAs is ReadStats of the snapshot of proxy at label (the names in
// its file name, Dir.StatsSnapshot): a snapshot whose own "label" or
// "proxy" says otherwise (the before snapshot copied over the after one)
// is an error naming the line. An absent label or proxy (older files) and
// an empty proxy or label argument are not checked.
func readStatsAs(path, proxy, label string) (*envoyrec.Snapshot, error) {
	b, err := boundedio.ReadRegular(context.Background(), path, MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	var s envoyrec.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, JSONError(b, err))
	}
	if s.Schema != envoyrec.SnapshotSchema {
		return nil, fmt.Errorf("%s: not a stats snapshot (want schema %q)", path, envoyrec.SnapshotSchema)
	}
	for _, f := range []struct{ key, got, want string }{{"label", s.Label, label}, {"proxy", s.Proxy, proxy}} {
		if f.got != "" && f.want != "" && f.got != f.want {
			return nil, fmt.Errorf("%s: line %d: %s %q, but the file name says %q (a snapshot saved under another name)",
				path, jsonline.PathLine(b, f.key), f.key, f.got, f.want)
		}
	}
	return &s, nil
}

// readAccessLogs parses every accesslog/*.log with envoyrec.ParseAccessLog; a
// malformed line is a Problem naming the file and line, and stops reading
// the logs.
func readAccessLogs(d Dir, problems []Problem) ([]AccessLog, []Problem) {
	paths, err := d.Glob(AccessLogDir + "/*.log")
	if err != nil {
		return []AccessLog{}, append(problems, Problem{File: AccessLogDir, Msg: err.Error()})
	}
	sort.Strings(paths)
	out := []AccessLog{}
	for _, p := range paths {
		f, err := boundedio.OpenRegular(context.Background(), p, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return []AccessLog{}, append(problems, Problem{File: AccessLogDir, Msg: err.Error()})
		}
		entries, err := envoyrec.ParseAccessLog(f, p)
		f.Close()
		if err != nil {
			return []AccessLog{}, append(problems, Problem{File: AccessLogDir, Msg: err.Error()})
		}
		proxy := strings.TrimSuffix(filepath.Base(p), ".log")
		out = append(out, AccessLog{Proxy: proxy, File: AccessLogFile(proxy), Entries: entries})
	}
	return out, problems
}

// maxLine bounds one JSON line (16 MiB).
const maxLine = 16 << 20

var errLongLine = errors.New("line longer than 16 MiB")

// readLine returns the next line of br with its newline (none at the end of
// the input), assembling a line longer than br's buffer in *long; it fails
// with errLongLine past maxLine.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return b, err
	}
	*long = append((*long)[:0], b...)
	for err == bufio.ErrBufferFull {
		b, err = br.ReadSlice('\n')
		*long = append(*long, b...)
		if len(*long) > maxLine {
			return nil, errLongLine
		}
	}
	return *long, err
}

// eachLine calls fn with every line of r (without its newline, 1-based line
// numbers, complete false for a last line without newline). Blank lines are
// passed too.
func eachLine(r io.Reader, name string, fn func(line int, b []byte, complete bool) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	line := 0
	var long []byte
	for {
		b, err := readLine(br, &long)
		if err == errLongLine {
			return &LineError{File: name, Line: line + 1, Err: err}
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", name, err)
		}
		line++
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		if ferr := fn(line, trimSpace(b), complete); ferr != nil {
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

// internBytes is intern for a name given as bytes (no allocation when known).
func internBytes(idx *map[string]uint16, names *[]string, name []byte) uint16 {
	if i, ok := (*idx)[string(name)]; ok {
		return i
	}
	return intern(idx, names, string(name))
}
