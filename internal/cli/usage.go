package cli

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/userdirs"
	"github.com/spf13/cobra"
)

// argHint says what a command's positional arguments are, for the usage
// error of a command run without them: "analyze needs an evidence or run
// directory, e.g. rlbench analyze evidence/latest" instead of cobra's
// "accepts 1 arg(s), received 0".
type argHint struct {
	what    string // "an evidence or run directory"
	example string // "rlbench analyze {latest}": {latest} is the latest run under the default root
}

// argHints are the hints by command path.
var argHints = map[string]argHint{
	"rlbench analyze":                  {"an evidence or run directory", "rlbench analyze {latest}"},
	"rlbench report":                   {"an evidence or run directory", "rlbench report {latest} --html report.html"},
	"rlbench diff":                     {"two evidence or run directories (or saved JSON reports), A before B", "rlbench diff runs/20261130T101500Z-1 {latest}"},
	"rlbench run":                      {"a plan file", "rlbench run examples/e06/plan.yaml"},
	"rlbench simulate":                 {"a plan file of bucket dimensions", "rlbench simulate examples/dimensions/instances.yaml"},
	"rlbench lint":                     {"one or more Envoy configuration files", "rlbench lint examples/envoy/*.yaml"},
	"rlbench merge":                    {"one or more shard directories (rlbench attack --shard K/N)", "rlbench merge ev-shards --out ev-run"},
	"rlbench wait":                     {"one or more URLs to wait for", "rlbench wait http://127.0.0.1:10100/ready"},
	"rlbench export vegeta":            {"an evidence or run directory", "rlbench export vegeta {latest} > results.json"},
	"rlbench collect rls-log":          {"envoyproxy/ratelimit's log file (or - for stdin)", "rlbench collect rls-log ratelimit.log --out ev"},
	"rlbench collect envoy-access-log": {"an Envoy access log file (or - for stdin)", "rlbench collect envoy-access-log access.log"},
	"rlbench collect nginx-access-log": {"an nginx access log file (or - for stdin)", "rlbench collect nginx-access-log rlbench.log --out ev --proxy edge"},
}

// argsError is the usage error of cmd's argument check (err from cobra):
// without any argument, what the command needs (argHints).
func argsError(cmd *cobra.Command, args []string, err error) error {
	if h, ok := argHints[cmd.CommandPath()]; ok && len(args) == 0 {
		return usageErrorf("%s needs %s, e.g. %s", cmd.Name(), h.what, strings.ReplaceAll(h.example, "{latest}", latestRun()))
	}
	return &UsageError{Err: err}
}

// latestRun is the latest run directory under the default root
// (userdirs.Runs, with a home replaced by ~), for examples in messages.
func latestRun() string {
	dir, err := userdirs.Runs()
	if err != nil {
		return filepath.Join("RUNS", "latest")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		if rel, err := filepath.Rel(h, dir); err == nil && !strings.HasPrefix(rel, "..") {
			dir = filepath.Join("~", rel)
		}
	}
	return filepath.Join(dir, "latest")
}

// helpHint is the line after a usage error: the help of the command that
// failed, e.g. "Run 'rlbench analyze --help' for usage.".
func helpHint(cmd *cobra.Command) string {
	path := "rlbench"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	return fmt.Sprintf("Run '%s --help' for usage.", path)
}

// setUnnamed adds s, a target URL without NAME=, as the only target,
// named unnamedTarget(URL); with another --target before or after it, it
// is a usage error: several targets need names to tell them apart.
func (v *targetsValue) setUnnamed(s string) error {
	if len(*v.p) > 0 {
		first := (*v.p)[0].Name
		if v.unnamed {
			first = (*v.p)[0].URL
		}
		return usageErrorf("--%s %s: with more than one target, give each as NAME=URL (the other is %s)", v.name, evidence.RedactText(s), evidence.RedactText(first))
	}
	name, err := unnamedTarget(s)
	if err != nil {
		return usageErrorf("--%s %s: %v", v.name, evidence.RedactText(s), err)
	}
	v.unnamed = true
	*v.p = append(*v.p, attack.Target{Name: name, URL: s})
	return nil
}

// unnamedTarget is the name of a target given as a bare URL: its
// host:port as the URL writes it ("127.0.0.1:10000", "example.com"), the
// name --targets-file gives a URL without a --target.
func unnamedTarget(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("want http(s)://host[:port][/path], or NAME=URL")
	}
	return u.Host, nil
}

// resolveRunLink returns dir with its last element resolved when it is a
// symbolic link, such as <root>/latest (evidence.LatestLink), which
// `rlbench run` points at the newest run directory: a report of
// evidence/latest then names the run it judged, e.g.
// evidence/20261205T101500Z-1 (its JUnit suite, its JSON dir), not
// "latest", which moves with the next run. Any other dir, or a link that
// cannot be read, is returned as it is.
func resolveRunLink(dir string) string {
	st, err := os.Lstat(dir)
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		return dir
	}
	target, err := os.Readlink(dir)
	if err != nil {
		return dir
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(filepath.Clean(dir)), target)
	}
	return target
}
