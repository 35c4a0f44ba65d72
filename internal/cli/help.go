package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The help layout (issue 25): what a new user needs first. `rlbench CMD
// --help` prints the one-line summary, the usage line and the command's
// Example (three lines at most: runnable as written), then the common
// flags under "Flags:", then the advanced flags in named groups, and the
// long description last:
//
//	Fire a fixed set of request IDs ...
//
//	Usage:
//	  rlbench attack --target NAME=URL... ...
//
//	Examples:
//	  rlbench attack --target http://127.0.0.1:10000 --ids 20 --out ev
//	  ...
//
//	Flags:
//	      --ids int   number of IDs to fire
//	  ...
//
//	Timing and pacing:
//	  ...
//
//	Description:
//	  attack sends each ID exactly once ...
//
// A flag's group is its annotation flagGroupKey (set by groupFlags from
// flagGroups); a flag without one is common ("Flags:"). TestHelpLayout
// checks that every flag is listed in exactly one group and that the
// example is within the first lines.

// flagGroupKey is the pflag annotation that names a flag's help group.
const flagGroupKey = "rlbench_help_group"

// commonGroup is the title of the common flags, listed first.
const commonGroup = "Flags"

// flagGroups are the flag groups by command path, in the order the help
// lists them: an entry titled commonGroup orders the common flags (the
// others follow it in alphabetical order), then the advanced groups. Each
// group lists its flags in the order given.
var flagGroups = map[string][]flagGroup{
	"rlbench attack": {
		{commonGroup, []string{"target", "ids", "out", "rate", "duration", "split", "path", "method", "header", "quiet"}},
		{"Requests and IDs", []string{"ids-file", "id-prefix", "seed", "body", "body-file", "capture-header"}},
		{"Timing and pacing", []string{"concurrency", "timeout"}},
		{"Flows and vegeta targets", []string{"flow", "targets-file", "targets-format"}},
		{"Connections and TLS", []string{"no-keepalive", "pipeline", "engine", "insecure", "cacert", "cert", "key", "http2", "h2c"}},
		{"Sharding and a synchronised start", []string{"shard", "shard-from-env", "shards", "start-at", "warm-ahead"}},
		{"Output", []string{"overwrite"}},
	},
	"rlbench lab": {
		{commonGroup, []string{"file", "proxies", "listen-base", "receipts", "local-max-tokens", "local-tokens-per-fill", "local-fill-interval"}},
		{"Global rate limit (a rate limit service)", []string{"global-domain", "global-descriptor", "rls", "rls-config", "rls-timeout", "decisions"}},
	},
	"rlbench analyze": {
		{commonGroup, []string{"expect-admitted", "intended-limit", "format"}},
		{"Output", []string{"status-file", "wide", "details"}},
	},
	"rlbench diff": {
		{commonGroup, []string{"format", "out"}},
		{"Output", []string{"wide"}},
	},
	"rlbench run": {
		{"Output", []string{"format", "quiet", "wide", "details"}},
	},
	"rlbench demo": {
		{"Output", []string{"format", "quiet", "wide", "details"}},
	},
	"rlbench conformance": {
		{commonGroup, []string{"url", "receipts-url", "model", "capacity", "rate", "key-header", "shape"}},
		{"The limiter's requests and responses", []string{"header", "reject-status", "name"}},
		{"Output", []string{"root", "format", "quiet", "wide"}},
	},
}

// flagGroup is one titled group of flags, by long name.
type flagGroup struct {
	title string
	flags []string
}

// groupFlags annotates the flags of every command below root with their
// flagGroups title and installs the help layout. A name in flagGroups
// that is not a flag of its command is left out here and reported by
// TestHelpLayout.
func groupFlags(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, g := range flagGroups[c.CommandPath()] {
			for _, name := range g.flags {
				if f := c.Flags().Lookup(name); f != nil {
					if f.Annotations == nil {
						f.Annotations = map[string][]string{}
					}
					f.Annotations[flagGroupKey] = []string{g.title}
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { _ = writeHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { return writeHelp(c.OutOrStderr(), c) })
}

// helpGroups returns c's local flags by group: the common ones first
// (commonGroup), then the groups of flagGroups in their order, each
// non-empty; hidden flags are left out.
func helpGroups(c *cobra.Command) []flagGroup {
	order := []string{commonGroup}
	for _, g := range flagGroups[c.CommandPath()] {
		order = append(order, g.title)
	}
	by := map[string][]string{}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		title := commonGroup
		if t := f.Annotations[flagGroupKey]; len(t) == 1 {
			title = t[0]
		}
		if !slices.Contains(order, title) {
			order = append(order, title)
		}
		by[title] = append(by[title], f.Name)
	})
	rank := map[string]int{}
	for _, g := range flagGroups[c.CommandPath()] {
		for i, name := range g.flags {
			rank[name] = i + 1
		}
	}
	var out []flagGroup
	for _, t := range slices.Compact(order) {
		names := by[t]
		if len(names) == 0 {
			continue
		}
		// The configured order; the rest (help, flags no group names)
		// after it, alphabetically.
		slices.SortStableFunc(names, func(a, b string) int {
			ra, rb := rank[a], rank[b]
			switch {
			case ra != 0 && rb != 0:
				return ra - rb
			case ra != 0:
				return -1
			case rb != 0:
				return 1
			}
			return strings.Compare(a, b)
		})
		out = append(out, flagGroup{t, names})
	}
	return out
}

// writeHelp writes c's help in the layout above.
func writeHelp(w io.Writer, c *cobra.Command) error {
	var b strings.Builder
	if s := strings.TrimSpace(c.Short); s != "" {
		b.WriteString(s + "\n\n")
	}
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	b.WriteString("\n")
	if c.HasExample() {
		b.WriteString("\nExamples:\n" + strings.TrimRight(c.Example, "\n") + "\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nAvailable Commands:\n")
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				fmt.Fprintf(&b, "  %-*s %s\n", c.NamePadding(), s.Name(), s.Short)
			}
		}
	}
	// Flag usages wrap at the width the tables are fitted to.
	cols := report.FitWidth(terminalWidth(w))
	local := c.LocalFlags()
	for _, g := range helpGroups(c) {
		fs := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
		fs.SortFlags = false
		for _, name := range g.flags {
			fs.AddFlag(local.Lookup(name))
		}
		b.WriteString("\n" + g.title + ":\n" + strings.TrimRight(fs.FlagUsagesWrapped(cols), " \n") + "\n")
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\nGlobal Flags:\n" + strings.TrimRight(c.InheritedFlags().FlagUsagesWrapped(cols), " \n") + "\n")
	}
	if long := strings.TrimSpace(c.Long); long != "" && long != strings.TrimSpace(c.Short) {
		b.WriteString("\nDescription:\n")
		for l := range strings.Lines(long) {
			if strings.TrimSpace(l) == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("  " + l)
		}
		b.WriteString("\n")
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
	_, err := io.WriteString(w, b.String())
	return err
}
