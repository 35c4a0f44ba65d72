package cli

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Flag values that parse into domain types at the boundary (the pflag.Value
// types of tsenart/vegeta flags.go, e.g. rateFlag and headers). A bad value
// is a *UsageError naming the flag, so the command never runs with it: exit
// 2 before anything is sent or written (flagError passes it through).

// flagError is the root's flag error function: every flag or argument
// misuse is a usage error (exit 2). A value rejected by one of the types
// below already says what is wrong with which flag; pflag's own wrapping
// ("invalid argument ... for ... flag") is kept for pflag's types.
func flagError(_ *cobra.Command, err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue
	}
	return &UsageError{Err: err}
}

// Output formats: the one list every --format check uses. The report
// commands (analyze, run, demo) take all of them (reportFormats); the
// commands that print data rather than a verdict (lint, collect) take table
// and json (dataFormats).
const (
	formatTable    = "table"    // report.WriteTable: for people
	formatJSON     = "json"     // report.WriteJSON: schemas/report.v2.schema.json
	formatMarkdown = "markdown" // report.WriteMarkdown: a pull-request comment
	formatJUnit    = "junit"    // report.WriteJUnit: CI test reports
	formatCSV      = "csv"      // report.WriteCSV: one row per request
	formatHTML     = "html"     // report.WriteHTML: one self-contained page with plots
)

var (
	reportFormats = []string{formatTable, formatJSON, formatMarkdown, formatJUnit, formatCSV, formatHTML}
	dataFormats   = []string{formatTable, formatJSON}
)

// formatFlag adds --format (table or json, default table) to cmd.
func formatFlag(cmd *cobra.Command, p *string) {
	enumFlag(cmd, p, "format", formatTable, dataFormats, "output format")
}

// reportFormatFlag adds --format with every report format (default table) to cmd.
func reportFormatFlag(cmd *cobra.Command, p *string) {
	enumFlag(cmd, p, "format", formatTable, reportFormats, "output format")
}

// enumFlag adds a string-typed flag that accepts only one of allowed
// (listed in the help and offered by shell completion), default def.
func enumFlag[T ~string](cmd *cobra.Command, p *T, name string, def T, allowed []T, usage string) {
	*p = def
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	cmd.Flags().Var(&enumValue[T]{p: p, name: name, allowed: allowed}, name, fmt.Sprintf("%s: %s", usage, orList(names)))
	_ = cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

type enumValue[T ~string] struct {
	p       *T
	name    string
	allowed []T
}

func (v *enumValue[T]) String() string { return string(*v.p) }
func (v *enumValue[T]) Type() string   { return "string" }
func (v *enumValue[T]) Set(s string) error {
	for _, a := range v.allowed {
		if T(s) == a {
			*v.p = a
			return nil
		}
	}
	names := make([]string, len(v.allowed))
	for i, a := range v.allowed {
		names[i] = string(a)
	}
	return usageErrorf("--%s must be %s, not %q", v.name, orList(names), s)
}

// orList writes "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// rateValue is --rate: attack.ParseRate's syntax ("100/1s", "5", "60/m";
// "" or "0" for no pacing) into a vegeta.Rate.
type rateValue struct {
	p    *vegeta.Rate
	name string
}

func (v *rateValue) String() string { return attack.FormatRate(*v.p) }
func (v *rateValue) Type() string   { return "rate" }
func (v *rateValue) Set(s string) error {
	r, err := attack.ParseRate(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = r
	return nil
}

// splitValue is --split: attack.ParseSplit's syntax into an attack.Split.
type splitValue struct {
	p    *attack.Split
	name string
}

func (v *splitValue) String() string { return v.p.String() }
func (v *splitValue) Type() string   { return "split" }
func (v *splitValue) Set(s string) error {
	sp, err := attack.ParseSplit(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = sp
	return nil
}

// targetsValue is a repeatable NAME=URL flag into attack targets: NAME a
// unique evidence.CheckName name, URL http:// or https:// (a
// user:password@ in it is sent as basic auth and shown redacted). A URL
// without NAME= is accepted as the only target, named after its host:port
// as --targets-file names the targets its URLs add (unnamedTarget).
type targetsValue struct {
	p    *[]attack.Target
	name string
	// unnamed is set once a URL without NAME= was given.
	unnamed bool
}

func (v *targetsValue) String() string {
	var parts []string
	for _, t := range *v.p {
		parts = append(parts, t.Name+"="+evidence.RedactURL(t.URL))
	}
	return strings.Join(parts, ",")
}
func (v *targetsValue) Type() string { return "NAME=URL" }
func (v *targetsValue) Set(s string) error {
	if v.unnamed || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		return v.setUnnamed(s)
	}
	name, u, ok := strings.Cut(s, "=")
	if !ok || name == "" || u == "" {
		return usageErrorf("--%s %q: want NAME=URL", v.name, evidence.RedactText(s))
	}
	// NAME is the proxy whose stats/<NAME>.<label>.json analyze joins.
	if err := evidence.CheckName("--"+v.name+" NAME", name); err != nil {
		return &UsageError{Err: err}
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return usageErrorf("--%s %s: the URL must start with http:// or https://", v.name, evidence.RedactText(s))
	}
	for _, t := range *v.p {
		if t.Name == name {
			return usageErrorf("--%s %s given twice", v.name, name)
		}
	}
	*v.p = append(*v.p, attack.Target{Name: name, URL: u})
	return nil
}

// headerValue is a repeatable "Name: value" flag into an http.Header
// (attack.ParseHeader: a bad name, or CR, LF or another control character
// in the value, is refused).
type headerValue struct {
	p    *http.Header
	name string
}

// String lists the headers, credential values redacted
// (evidence.RedactHeader).
func (v *headerValue) String() string {
	var parts []string
	for k, vs := range *v.p {
		for _, x := range vs {
			parts = append(parts, k+": "+evidence.RedactHeader(k, x))
		}
	}
	return strings.Join(parts, ", ")
}
func (v *headerValue) Type() string { return "header" }
func (v *headerValue) Set(s string) error {
	k, val, err := attack.ParseHeader(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	if *v.p == nil {
		*v.p = http.Header{}
	}
	v.p.Add(k, val)
	return nil
}

// rangeValue is a count range "N" or "MIN..MAX" (evidence.ParseRange) with
// 0 <= MIN; unset leaves the pointer nil.
type rangeValue struct {
	p    **evidence.Range
	name string
}

func (v *rangeValue) String() string {
	if *v.p == nil {
		return ""
	}
	return (*v.p).String()
}
func (v *rangeValue) Type() string { return "range" }
func (v *rangeValue) Set(s string) error {
	r, err := evidence.ParseRange(s)
	if err == nil && r.Min < 0 {
		err = fmt.Errorf("range %q: want 0 <= min <= max", s)
	}
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = &r
	return nil
}

// countValue is an optional count >= 0; unset leaves the pointer nil.
type countValue struct {
	p    **int
	name string
}

func (v *countValue) String() string {
	if *v.p == nil {
		return ""
	}
	return strconv.Itoa(**v.p)
}
func (v *countValue) Type() string { return "int" }
func (v *countValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return usageErrorf("--%s must be a count >= 0, not %q", v.name, s)
	}
	*v.p = &n
	return nil
}

// descriptorsValue is a repeatable key=value flag into generic_key rate
// limit actions (Envoy's route rate_limits actions; an empty key is
// generic_key, descriptor.DefaultGenericKey).
type descriptorsValue struct {
	p    *[]descriptor.RateLimitAction
	name string
}

func (v *descriptorsValue) String() string {
	var parts []string
	for _, a := range *v.p {
		if a.GenericKey != nil {
			parts = append(parts, a.GenericKey.DescriptorKey+"="+a.GenericKey.DescriptorValue)
		}
	}
	return strings.Join(parts, ",")
}
func (v *descriptorsValue) Type() string { return "key=value" }
func (v *descriptorsValue) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok {
		return usageErrorf("--%s %q: want key=value", v.name, s)
	}
	*v.p = append(*v.p, descriptor.RateLimitAction{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: k, DescriptorValue: val}})
	return nil
}

// Helpers that bind the values above to a flag set.

func rateFlag(fs *pflag.FlagSet, p *vegeta.Rate, name, usage string) {
	fs.Var(&rateValue{p: p, name: name}, name, usage)
}

func splitFlag(fs *pflag.FlagSet, p *attack.Split, name string, def attack.Split, usage string) {
	*p = def
	fs.Var(&splitValue{p: p, name: name}, name, usage)
}

func targetsFlag(fs *pflag.FlagSet, p *[]attack.Target, name, usage string) {
	fs.Var(&targetsValue{p: p, name: name}, name, usage)
}

func headerFlag(fs *pflag.FlagSet, p *http.Header, name, usage string) {
	fs.Var(&headerValue{p: p, name: name}, name, usage)
}

func rangeFlag(fs *pflag.FlagSet, p **evidence.Range, name, usage string) {
	fs.Var(&rangeValue{p: p, name: name}, name, usage)
}

func countFlag(fs *pflag.FlagSet, p **int, name, usage string) {
	fs.Var(&countValue{p: p, name: name}, name, usage)
}

func descriptorsFlag(fs *pflag.FlagSet, p *[]descriptor.RateLimitAction, name, usage string) {
	fs.Var(&descriptorsValue{p: p, name: name}, name, usage)
}

// FlowSpec is one --flow value, parsed at the flag boundary: the keys of
// NewAttackCmd's help. IDs come from IDs (generated with IDPrefix, default
// "<--id-prefix>-<name>"), IDsFile, or Rate x Duration.
type FlowSpec struct {
	Name        string
	IDs         int
	IDPrefix    string
	IDsFile     string
	Rate        vegeta.Rate
	Duration    time.Duration
	Method      string
	Path        string
	Header      http.Header
	Body        string
	Split       attack.Split
	Seed        int64
	Concurrency int
	NoKeepAlive bool
}

// ParseFlowSpec parses "key=value,key=value,..." (see NewAttackCmd); errors
// quote the spec and name the bad part, both redacted (redactFlowPart).
func ParseFlowSpec(s string) (FlowSpec, error) {
	var f FlowSpec
	spec := redactFlowSpec(s)
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok && k != "no-keepalive" {
			return f, fmt.Errorf("flow %q: %q: %s", spec, redactFlowPart(part), "want key=value")
		}
		if msg := f.set(k, v, ok); msg != "" {
			return f, fmt.Errorf("flow %q: %q: %s", spec, redactFlowPart(part), evidence.RedactText(msg))
		}
	}
	err := f.check(spec) // sets IDs from rate x duration: called before f is returned
	return f, err
}

// redactFlowSpec is a flow spec as errors quote it: each part redacted
// (redactFlowPart).
func redactFlowSpec(s string) string {
	var shown []string
	for _, part := range strings.Split(s, ",") {
		shown = append(shown, redactFlowPart(part))
	}
	return strings.Join(shown, ",")
}

// redactFlowPart is one "key=value" part of a flow spec as errors quote
// it: a header's credential value and a path's query secrets redacted
// (evidence.RedactHeaderField, evidence.RedactURL).
func redactFlowPart(part string) string {
	k, v, ok := strings.Cut(part, "=")
	switch {
	case !ok:
		return evidence.RedactText(part)
	case strings.TrimSpace(k) == "header":
		return k + "=" + evidence.RedactHeaderField(v)
	case strings.TrimSpace(k) == "path":
		return k + "=" + evidence.RedactURL(v)
	}
	return evidence.RedactText(part)
}

// set sets the key k of a flow spec to v (ok: the part had a "="); it
// returns what is wrong with the part, or "".
func (f *FlowSpec) set(k, v string, ok bool) string {
	switch k {
	case "name":
		f.Name = v
	case "id-prefix":
		f.IDPrefix = v
	case "ids-file":
		f.IDsFile = v
	case "method":
		f.Method = v
	case "path":
		f.Path = v
	case "body":
		f.Body = v
	case "header":
		name, val, err := attack.ParseHeader(v)
		if err != nil {
			return err.Error()
		}
		if f.Header == nil {
			f.Header = http.Header{}
		}
		f.Header.Add(name, val)
	default:
		return f.setParsed(k, v, ok)
	}
	return ""
}

// setParsed sets the keys whose values are parsed (counts, the rate, the
// duration, the split, the seed, no-keepalive); it returns what is wrong
// with the value, or "" (an unknown key is wrong too).
func (f *FlowSpec) setParsed(k, v string, ok bool) string {
	var err error
	switch k {
	case "ids":
		if f.IDs, err = strconv.Atoi(v); err != nil || f.IDs <= 0 {
			return "want a count > 0"
		}
	case "rate":
		if f.Rate, err = attack.ParseRate(v); err != nil {
			return err.Error()
		}
	case "duration":
		if f.Duration, err = time.ParseDuration(v); err != nil || f.Duration <= 0 {
			return "want a positive duration such as 5s"
		}
	case "split":
		if f.Split, err = attack.ParseSplit(strings.ReplaceAll(v, ":", ",")); err != nil {
			return fmt.Sprintf("%v (values separated by ':', e.g. weights=60:30:10)", err)
		}
	case "seed":
		if f.Seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			return "want an integer"
		}
	case "concurrency":
		if f.Concurrency, err = strconv.Atoi(v); err != nil || f.Concurrency < 0 {
			return "want a count >= 0"
		}
	case "no-keepalive":
		if !ok {
			v = "true"
		}
		if f.NoKeepAlive, err = strconv.ParseBool(v); err != nil {
			return "want true or false"
		}
	default:
		return fmt.Sprintf("unknown key %q (name, ids, id-prefix, ids-file, rate, duration, method, path, header, body, split, seed, concurrency, no-keepalive)", k)
	}
	return ""
}

// check checks the parsed spec s as a whole: a name; one of ids, ids-file
// or duration (which needs a rate and sets IDs to rate x duration, at least
// one); at most attack.MaxIDs IDs.
func (f *FlowSpec) check(s string) error {
	switch {
	case f.Name == "":
		return fmt.Errorf("flow %q: name=NAME is required", s)
	case f.Duration > 0 && f.Rate.Freq == 0:
		return fmt.Errorf("flow %q: duration needs a rate (the IDs are rate x duration)", s)
	case countTrue(f.IDs > 0, f.IDsFile != "", f.Duration > 0) != 1:
		return fmt.Errorf("flow %q: give one of ids=N, ids-file=FILE or duration=D (with rate)", s)
	}
	if f.Duration > 0 {
		if f.IDs = attack.DurationIDs(f.Rate, f.Duration); f.IDs == 0 {
			return fmt.Errorf("flow %q: rate %s over %s is no request", s, attack.FormatRate(f.Rate), f.Duration)
		}
	}
	return attack.CheckIDs(fmt.Sprintf("flow %q", s), f.IDs)
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// flow is the attack.Flow of f: its IDs read or generated (prefix
// "<prefix>-<name>" unless f.IDPrefix), common headers under its own.
func (f FlowSpec) flow(prefix string, common http.Header) (attack.Flow, error) {
	p := f.IDPrefix
	if p == "" {
		p = prefix + "-" + f.Name
	}
	n := f.IDs
	if f.IDsFile != "" {
		n = 0
	}
	ids, err := readIDs(n, f.IDsFile, p)
	if err != nil {
		return attack.Flow{}, err
	}
	h := common.Clone()
	for k, vs := range f.Header {
		if h == nil {
			h = http.Header{}
		}
		h[k] = vs
	}
	return attack.Flow{Name: f.Name, IDs: ids, Split: f.Split, Seed: f.Seed, Method: f.Method, Path: f.Path, Header: h,
		Body: []byte(f.Body), Rate: f.Rate, Concurrency: f.Concurrency, DisableKeepAlives: f.NoKeepAlive}, nil
}

// flowsValue is the repeatable --flow (ParseFlowSpec); names unique.
type flowsValue struct {
	p    *[]FlowSpec
	name string
}

func (v *flowsValue) String() string {
	var names []string
	for _, f := range *v.p {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}
func (v *flowsValue) Type() string { return "flow" }
func (v *flowsValue) Set(s string) error {
	f, err := ParseFlowSpec(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	for _, g := range *v.p {
		if g.Name == f.Name {
			return usageErrorf("--%s: flow name %q given twice", v.name, f.Name)
		}
	}
	*v.p = append(*v.p, f)
	return nil
}

// shardValue is --shard K/N (attack.ParseShard).
type shardValue struct {
	p    *attack.Shard
	name string
}

func (v *shardValue) String() string { return v.p.String() }
func (v *shardValue) Type() string   { return "K/N" }
func (v *shardValue) Set(s string) error {
	sh, err := attack.ParseShard(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = sh
	return nil
}

// startAtValue is --start-at: RFC 3339 (with or without fraction) or an
// integer of unix ns.
type startAtValue struct {
	p    *time.Time
	name string
}

func (v *startAtValue) String() string {
	if v.p.IsZero() {
		return ""
	}
	return v.p.UTC().Format(time.RFC3339Nano)
}
func (v *startAtValue) Type() string { return "time" }
func (v *startAtValue) Set(s string) error {
	t, err := ParseStartAt(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = t
	return nil
}

// ParseStartAt parses an instant written in RFC 3339 ("2026-12-01T12:00:00Z",
// fractions allowed) or as unix nanoseconds ("1796124000000000000").
func ParseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return time.Time{}, fmt.Errorf("%q: want a positive unix ns", s)
		}
		return time.Unix(0, n), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-12-01T12:00:00Z) or unix ns", s)
	}
	return t, nil
}

func flowsFlag(fs *pflag.FlagSet, p *[]FlowSpec, name, usage string) {
	fs.Var(&flowsValue{p: p, name: name}, name, usage)
}

func shardFlag(fs *pflag.FlagSet, p *attack.Shard, name, usage string) {
	fs.Var(&shardValue{p: p, name: name}, name, usage)
}

func startAtFlag(fs *pflag.FlagSet, p *time.Time, name, usage string) {
	fs.Var(&startAtValue{p: p, name: name}, name, usage)
}

// checkHTTPURL refuses (usage error) a URL that is not http(s)://HOST[:PORT]
// with a port number 1..65535: what names it (a flag or "wait") prefixes
// the message, and the URL is shown redacted.
func checkHTTPURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("%s: %q is not an http(s) URL", what, evidence.RedactText(raw))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return usageErrorf("%s: %q: port %q is not a port number 1..65535", what, evidence.RedactURL(raw), p)
		}
	}
	return nil
}
