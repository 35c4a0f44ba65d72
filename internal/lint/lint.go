// Package lint checks Envoy v3 bootstrap files for rate limiting mistakes and
// cross-checks their rate limit descriptors against envoyproxy/ratelimit (RLS)
// configurations.
//
// Each file is decoded the way Envoy decodes a static bootstrap: YAML is
// converted to JSON (sigs.k8s.io/yaml) and unmarshalled with protojson into
// envoy.config.bootstrap.v3.Bootstrap, resolving every typed_config Any through
// the go-control-plane v1.40 types linked into this package; then the
// protoc-gen-validate rules (ValidateAll) are applied to the bootstrap and to
// every unpacked Any. Envoy rejects unknown fields in a static bootstrap, so
// unknown fields are errors. Every problem found is a Finding with a stable
// Code, a Level, the file, a field path and (when known) the 1-based line.
//
// The rate limit checks follow Envoy's documented semantics:
// local_ratelimit filter_enabled/filter_enforced default to 0%
// (local_rate_limit.proto), the ratelimit filter's timeout defaults to 20 ms and
// failure_mode_deny to false (rate_limit.proto), its gRPC cluster must speak
// HTTP/2, and envoyproxy/ratelimit applies a limit only when the whole request
// descriptor matches a rule (config_impl.go GetLimit, reproduced by package
// rlsconfig).
//
// The package never prints; rendering a Report is the caller's business.
package lint

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/internal/yamlguard"
)

// Level is the severity of a Finding: "error" (the configuration does not do
// what it says, or Envoy rejects it), "warning" (it works, but a rate limit
// test will likely show a surprise) or "info".
type Level string

// Finding levels.
const (
	LevelError   Level = "error"
	LevelWarning Level = "warning"
	LevelInfo    Level = "info"
)

// Stable finding codes. The prefix repeats the usual level (E error,
// W warning, I info).
const (
	// CodeDecode: the file is not a decodable Envoy v3 bootstrap (YAML syntax,
	// unknown field, wrong JSON type, bad enum, oneof set twice). Envoy refuses
	// to start on these.
	CodeDecode = "E_DECODE"
	// CodeValidate: a protoc-gen-validate rule of the Envoy API is violated
	// (ValidateAll); Envoy rejects the config with the same message.
	CodeValidate = "E_VALIDATE"
	// CodeEmpty: the file holds no bootstrap at all: it is empty, only
	// comments, null or {}. Nothing can be checked, which is an error rather
	// than a clean result.
	CodeEmpty = "E_EMPTY"
	// CodeNoListeners: the bootstrap decodes but has no listener, neither
	// static (static_resources.listeners) nor from LDS
	// (dynamic_resources.lds_config or lds_resources_locator): it serves no
	// traffic, so nothing is rate limited; most likely not the Envoy
	// configuration that was meant.
	CodeNoListeners = "E_NO_LISTENERS"
	// CodeUncheckedType: a typed_config @type is not registered in rlbench
	// lint; its contents were not checked (warning).
	CodeUncheckedType = "W_UNCHECKED_TYPE"
	// CodeLocalNotEnabled: a local_ratelimit config with a token bucket but no
	// filter_enabled (or 0%): Envoy defaults filter_enabled to 0%, so the
	// filter is a no-op and emits no http_local_rate_limit.enabled stat.
	CodeLocalNotEnabled = "E_LOCAL_NOT_ENABLED"
	// CodeLocalPartial: filter_enabled below 100%: only that fraction of
	// requests is evaluated.
	CodeLocalPartial = "W_LOCAL_PARTIAL"
	// CodeLocalShadow: filter_enforced absent (default 0%) or below 100%:
	// rate_limited is counted but no 429 is sent (shadow mode).
	CodeLocalShadow = "W_LOCAL_SHADOW"
	// CodeLocalNoBucket: an HTTP local_ratelimit filter with no token_bucket,
	// descriptors or rate_limits and no per-route config in the file.
	CodeLocalNoBucket = "W_LOCAL_NO_BUCKET"
	// CodeLocalBucket: a local rate limit token bucket (the filter's, a
	// descriptor's, or the network filter's) that Envoy refuses beyond
	// what E_VALIDATE reports: max_tokens 0 (token_bucket.proto: uint32
	// gt 0) or fill_interval below 50ms ("local rate limit token bucket
	// fill timer must be >= 50ms"). model.CheckEnvoyBucket owns the rules.
	CodeLocalBucket = "E_LOCAL_BUCKET"
	// CodeLocalBucketOverfill: tokens_per_fill above max_tokens: Envoy
	// accepts it, but the bucket never holds more than max_tokens, so a
	// whole fill can never be held (warning).
	CodeLocalBucketOverfill = "W_LOCAL_BUCKET_OVERFILL"
	// CodeRLSTransport: rate_limit_service.transport_api_version is not V3;
	// current Envoy rejects V2 and AUTO.
	CodeRLSTransport = "E_RLS_TRANSPORT_VERSION"
	// CodeRLSClusterMissing: the envoy_grpc cluster_name of the RLS is not a
	// static cluster (error; warning when CDS could supply it).
	CodeRLSClusterMissing = "E_RLS_CLUSTER_MISSING"
	// CodeRLSClusterNotHTTP2: the RLS cluster does not explicitly speak HTTP/2,
	// so gRPC calls to the RLS fail (ratelimit.error).
	CodeRLSClusterNotHTTP2 = "E_RLS_CLUSTER_NOT_HTTP2"
	// CodeRLSTimeoutDefault: the ratelimit filter has no timeout; Envoy uses
	// 20 ms, so bursts turn into RLS errors.
	CodeRLSTimeoutDefault = "W_RLS_TIMEOUT_DEFAULT"
	// CodeFailOpen: failure_mode_deny is false (the default): when the RLS is
	// unreachable every request is admitted.
	CodeFailOpen = "W_FAIL_OPEN"
	// CodeFailureModeAllow: failure_mode_allow (an ext_authz field) inside the
	// ratelimit filter config, where the field is failure_mode_deny with the
	// opposite sense; Envoy rejects the unknown field.
	CodeFailureModeAllow = "E_FAILURE_MODE_ALLOW"
	// CodeGlobalPartial: the ratelimit filter's filter_enabled or
	// filter_enforced is below 100%.
	CodeGlobalPartial = "W_GLOBAL_PARTIAL"
	// CodeNoDescriptors: a ratelimit filter for which no route, virtual host
	// or filter rate_limits exist at its stage; Envoy never calls the RLS.
	CodeNoDescriptors = "W_NO_DESCRIPTORS"
	// CodeRDSNotChecked: routes come from RDS; descriptors are not checked.
	CodeRDSNotChecked = "I_RDS_NOT_CHECKED"
	// CodeClientHeader: a request_headers (or query_parameters) descriptor
	// entry: its value is chosen by the client, who gets fresh quota by
	// changing it.
	CodeClientHeader = "W_CLIENT_CONTROLLED_DESCRIPTOR"
	// CodeRemoteAddressXFF: a remote_address descriptor entry in a connection
	// manager without use_remote_address: Envoy takes the address from
	// x-forwarded-for, which the client controls.
	CodeRemoteAddressXFF = "W_REMOTE_ADDRESS_XFF"
	// CodeDomainUnknown: the ratelimit filter's domain has no RLS config; the
	// RLS answers OK to everything (no limit).
	CodeDomainUnknown = "E_DOMAIN_UNKNOWN"
	// CodeDescriptorUnmatched: a descriptor a route produces matches no RLS
	// rule with a rate limit: it is never limited.
	CodeDescriptorUnmatched = "E_DESCRIPTOR_UNMATCHED"
	// CodeRuleUnreachable: an RLS rule that no linted route can produce.
	CodeRuleUnreachable = "W_RULE_UNREACHABLE"
	// CodeDomainUnused: an RLS config whose domain no linted ratelimit filter uses.
	CodeDomainUnused = "I_DOMAIN_UNUSED"
)

// Finding is one problem. Path locates it inside File using proto field
// names, e.g. "static_resources.listeners[0].filter_chains[0].filters[0]
// .typed_config.http_filters[1]"; map entries are written ["key"]. For RLS
// rule findings File is the RLS config and Path e.g. "descriptors[0]
// .descriptors[1]". Line is the 1-based line of the path (or of its nearest
// ancestor present in the file), 0 when unknown.
type Finding struct {
	Code    string `json:"code"`
	Level   Level  `json:"level"`
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String renders f as "file:line: level code path: message".
func (f Finding) String() string {
	loc := f.File
	if f.Line > 0 {
		loc += ":" + strconv.Itoa(f.Line)
	}
	p := f.Path
	if p == "" {
		p = "(root)"
	}
	return fmt.Sprintf("%s: %s %s %s: %s", loc, f.Level, f.Code, p, f.Message)
}

// Report is the result of Lint: the linted file names in input order and the
// findings sorted by file, path (numeric indexes compared as numbers) and code.
type Report struct {
	Files    []string  `json:"files"`
	Findings []Finding `json:"findings"`
}

// Count returns the number of findings of level l.
func (r *Report) Count(l Level) int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == l {
			n++
		}
	}
	return n
}

// Errors returns the number of error findings.
func (r *Report) Errors() int { return r.Count(LevelError) }

// Warnings returns the number of warning findings.
func (r *Report) Warnings() int { return r.Count(LevelWarning) }

// Source is one Envoy bootstrap to lint: Name is used as Finding.File.
type Source struct {
	Name string
	R    io.Reader
}

// Options configures Lint.
type Options struct {
	// RLSConfigs are the envoyproxy/ratelimit configurations (one domain each,
	// see rlsconfig.LoadDir) the linted files' ratelimit filters talk to.
	// When empty, the domain and descriptor cross-checks are skipped.
	// Rule reachability is judged over all files of one Lint call.
	RLSConfigs []*rlsconfig.Config
}

// Lint decodes and checks every source and returns the findings. The error
// is non-nil only when a source cannot be read (it names the source; a
// source over yamlguard.DefaultMaxBytes is an *boundedio.SizeError) or ctx is
// done; problems in the files themselves are findings. An empty source is
// an E_EMPTY finding, a YAML alias bomb an E_DECODE finding
// (yamlguard.Parse refuses it before anything expands it).
func Lint(ctx context.Context, files []Source, opts Options) (*Report, error) {
	l := &linter{opts: opts}
	rep := &Report{Files: []string{}, Findings: []Finding{}}
	for _, src := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := boundedio.ReadAll(ctx, src.R, src.Name, yamlguard.DefaultMaxBytes)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("lint: reading %s: %w", src.Name, err)
		}
		rep.Files = append(rep.Files, src.Name)
		l.file(src.Name, data)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.crossCheck()
	rep.Findings = append(rep.Findings, l.findings...)
	sortFindings(rep.Findings)
	return rep, nil
}

// LintFiles opens each path and lints it as a Source named by the path.
// Only regular files are read (boundedio.OpenRegular: a FIFO or a device is
// refused with an error naming it), each at most yamlguard.DefaultMaxBytes.
func LintFiles(ctx context.Context, paths []string, opts Options) (*Report, error) {
	srcs := make([]Source, 0, len(paths))
	defer func() {
		for _, s := range srcs {
			s.R.(*boundedio.File).Close()
		}
	}()
	for _, p := range paths {
		f, err := boundedio.OpenRegular(ctx, p, yamlguard.DefaultMaxBytes)
		if err != nil {
			return nil, fmt.Errorf("lint: %w", err)
		}
		srcs = append(srcs, Source{Name: p, R: f})
	}
	return Lint(ctx, srcs, opts)
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if c := comparePaths(a.Path, b.Path); c != 0 {
			return c < 0
		}
		return a.Code < b.Code
	})
}

// comparePaths compares paths with digit runs compared numerically, so that
// "x[2]" sorts before "x[10]".
func comparePaths(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na, _ := strconv.Atoi(a[si:i])
			nb, _ := strconv.Atoi(b[sj:j])
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
			continue
		}
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		i++
		j++
	}
	return (len(a) - i) - (len(b) - j)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// segment kinds of a path.
const (
	segField = iota
	segIndex
	segKey
)

// seg is one step of a field path.
type seg struct {
	kind int
	name string // field name or map key
	idx  int
}

type path []seg

func (p path) field(name string) path { return p.with(seg{kind: segField, name: name}) }
func (p path) index(i int) path       { return p.with(seg{kind: segIndex, idx: i}) }
func (p path) key(k string) path      { return p.with(seg{kind: segKey, name: k}) }

func (p path) with(s seg) path {
	q := make(path, len(p), len(p)+1)
	copy(q, p)
	return append(q, s)
}

func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s.kind {
		case segField:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		case segIndex:
			fmt.Fprintf(&b, "[%d]", s.idx)
		case segKey:
			fmt.Fprintf(&b, "[%q]", s.name)
		}
	}
	return b.String()
}

// hasSuffixFields reports whether the last field names of p (ignoring
// indexes and keys) are names, in order.
func (p path) endsWith(names ...string) bool {
	var fields []string
	for _, s := range p {
		if s.kind == segField {
			fields = append(fields, s.name)
		}
	}
	if len(fields) < len(names) {
		return false
	}
	for i, n := range names {
		if fields[len(fields)-len(names)+i] != n {
			return false
		}
	}
	return true
}

// trimTypedConfig drops a trailing "typed_config" field, so that findings on
// a filter's config point at the filter (e.g. http_filters[1]).
func (p path) trimTypedConfig() path {
	if n := len(p); n > 0 && p[n-1].kind == segField && p[n-1].name == "typed_config" {
		return p[:n-1]
	}
	return p
}
