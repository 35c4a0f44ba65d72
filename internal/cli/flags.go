package cli

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/proxy"
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
	formatTable    = "table"    // analyze.WriteTable: for people
	formatJSON     = "json"     // analyze.WriteJSON: schemas/report.v1.schema.json
	formatMarkdown = "markdown" // analyze.WriteMarkdown: a pull-request comment
	formatJUnit    = "junit"    // analyze.WriteJUnit: CI test reports
	formatCSV      = "csv"      // analyze.WriteCSV: one row per request
	formatHTML     = "html"     // analyze.WriteHTML: one self-contained page with plots
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

// targetsValue is a repeatable NAME=URL flag into attack targets: NAME
// non-empty and unique, URL http:// or https://.
type targetsValue struct {
	p    *[]attack.Target
	name string
}

func (v *targetsValue) String() string {
	var parts []string
	for _, t := range *v.p {
		parts = append(parts, t.Name+"="+t.URL)
	}
	return strings.Join(parts, ",")
}
func (v *targetsValue) Type() string { return "NAME=URL" }
func (v *targetsValue) Set(s string) error {
	name, u, ok := strings.Cut(s, "=")
	if !ok || name == "" || u == "" {
		return usageErrorf("--%s %q: want NAME=URL", v.name, s)
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return usageErrorf("--%s %s: the URL must start with http:// or https://", v.name, s)
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

func (v *headerValue) String() string {
	var parts []string
	for k, vs := range *v.p {
		for _, x := range vs {
			parts = append(parts, k+": "+x)
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
// generic_key, proxy.DefaultGenericKey).
type descriptorsValue struct {
	p    *[]proxy.Action
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
	*v.p = append(*v.p, proxy.Action{GenericKey: &proxy.GenericKeyAction{DescriptorKey: k, DescriptorValue: val}})
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

func descriptorsFlag(fs *pflag.FlagSet, p *[]proxy.Action, name, usage string) {
	fs.Var(&descriptorsValue{p: p, name: name}, name, usage)
}
