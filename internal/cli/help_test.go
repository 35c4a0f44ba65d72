package cli

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpFlagLine is a flag's line in a help group: "  -q, --quiet ..." or
// "      --out ..." (a wrapped usage's next lines are indented further).
var helpFlagLine = regexp.MustCompile(`^(?:  -\S, |      )--([A-Za-z0-9][A-Za-z0-9-]*)`)

// helpSection is a section title line of the help: "Timing and pacing:".
var helpSection = regexp.MustCompile(`^([A-Z][A-Za-z0-9 (),-]*):$`)

// TestHelpLayout keeps --help a checked property (issue 25): for every
// command, `rlbench ... --help` lists each of its flags in exactly one flag
// group, the common group ("Flags:") first; every name flagGroups gives is
// a flag of its command; the commands a new user starts with have an
// example of at most three lines within the first 15 lines of their help,
// and every example line parses with the command's own flags.
func TestHelpLayout(t *testing.T) {
	titles := map[string]bool{commonGroup: true, "Global Flags": true}
	for _, gs := range flagGroups {
		for _, g := range gs {
			titles[g.title] = true
		}
	}
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.IsAvailableCommand() || !c.HasParent() {
			cmds = append(cmds, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot(tio))
	seen := map[string]bool{}
	for _, c := range cmds {
		path := c.CommandPath()
		seen[path] = true
		t.Run(path, func(t *testing.T) {
			args := append(strings.Fields(path)[1:], "--help")
			code, out, errOut := runCLI(t, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(out, "\n")
			// The flags listed, by group, in the order printed.
			count := map[string]int{}
			var groups []string
			section := ""
			for _, l := range lines {
				if m := helpSection.FindStringSubmatch(l); m != nil {
					section = m[1]
					if titles[section] {
						groups = append(groups, section)
					}
					continue
				}
				if m := helpFlagLine.FindStringSubmatch(l); m != nil && titles[section] {
					count[m[1]]++
				}
			}
			// Cobra adds --help when the command runs; a fresh command
			// has it after InitDefaultHelpFlag.
			fresh := findCmd(t, path)
			fresh.InitDefaultHelpFlag()
			fresh.InitDefaultVersionFlag()
			fresh.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && count[f.Name] != 1 {
					t.Errorf("--%s is listed %d times in the flag groups, want once:\n%s", f.Name, count[f.Name], out)
				}
				delete(count, f.Name)
			})
			// A parent's persistent flags (runs --root) are shown under
			// "Global Flags", not in this command's groups.
			fresh.InheritedFlags().VisitAll(func(f *pflag.Flag) { delete(count, f.Name) })
			for name := range count {
				t.Errorf("--%s is listed but is not a flag of %s", name, path)
			}
			if len(groups) > 0 && groups[0] != commonGroup {
				t.Errorf("the first flag group is %q, want %q", groups[0], commonGroup)
			}
			for _, g := range flagGroups[path] {
				for _, name := range g.flags {
					if fresh.Flags().Lookup(name) == nil {
						t.Errorf("flagGroups[%q] group %q names --%s, which is not a flag", path, g.title, name)
					}
				}
			}
			checkExamples(t, c, lines)
		})
	}
	for path := range flagGroups {
		if !seen[path] {
			t.Errorf("flagGroups names %q, which is not a command", path)
		}
	}
}

// firstSteps are the commands a new user starts with: each has an example
// of at most three lines at the top of its help.
var firstSteps = []string{"rlbench attack", "rlbench lab", "rlbench run", "rlbench analyze", "rlbench demo"}

// checkExamples checks c's Example within the first 15 lines of its help
// (lines) and parses every example line with a fresh command tree.
func checkExamples(t *testing.T, c *cobra.Command, lines []string) {
	t.Helper()
	path := c.CommandPath()
	ex := strings.Split(strings.TrimRight(c.Example, "\n"), "\n")
	if c.Example == "" {
		if slices.Contains(firstSteps, path) {
			t.Errorf("%s has no example", path)
		}
		return
	}
	if slices.Contains(firstSteps, path) {
		if len(ex) > 3 {
			t.Errorf("%s: a %d-line example, want at most 3", path, len(ex))
		}
		top := strings.Join(lines[:min(15, len(lines))], "\n")
		if !strings.Contains(top, ex[0]) {
			t.Errorf("%s: the example is not within the first 15 lines of --help:\n%s", path, top)
		}
	}
	for _, l := range ex {
		if strings.HasSuffix(l, "\\") {
			t.Errorf("%s: example line %q: want one command per line", path, l)
			continue
		}
		// The rlbench command of the line (after a pipe; without a
		// comment, a redirection or a trailing &); lines of other
		// programs are not checked.
		l, _, _ = strings.Cut(l, " #")
		l, _, _ = strings.Cut(l, " >")
		if _, after, ok := strings.Cut(l, " | "); ok {
			l = after
		}
		words := strings.Fields(strings.TrimSuffix(strings.TrimSpace(l), " &"))
		if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
			words = append([]string{"rlbench"}, words[3:]...)
		}
		if len(words) == 0 || words[0] != "rlbench" {
			continue
		}
		root := NewRoot(tio)
		got, rest, err := root.Find(words[1:])
		if err != nil {
			t.Errorf("%s: example line %q: %v", path, l, err)
			continue
		}
		if err := got.ParseFlags(rest); err != nil {
			t.Errorf("%s: example line %q: %v", path, l, err)
		}
	}
}

// findCmd returns the command at path of a fresh tree.
func findCmd(t *testing.T, path string) *cobra.Command {
	t.Helper()
	c, _, err := NewRoot(tio).Find(strings.Fields(path)[1:])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHelpFlagsWrap: on an 80-column terminal (COLUMNS=80) the flag
// groups of lab, run, analyze and demo wrap their usages at 80 columns
// (lab's were 178 wide), with every flag still on a line of its own.
func TestHelpFlagsWrap(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	for _, cmd := range []string{"lab", "run", "analyze", "demo"} {
		code, out, errOut := runCLI(t, cmd, "--help")
		if code != ExitOK {
			t.Fatalf("%s --help: exit %d: %s", cmd, code, errOut)
		}
		section, flags := "", 0
		for _, l := range strings.Split(out, "\n") {
			if m := helpSection.FindStringSubmatch(l); m != nil {
				section = m[1]
				continue
			}
			if section == "" || section == "Usage" || section == "Examples" || section == "Description" {
				continue
			}
			if helpFlagLine.MatchString(l) {
				flags++
			}
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("%s --help, %s: a line of %d columns: %q", cmd, section, n, l)
			}
		}
		if flags < 3 {
			t.Errorf("%s --help: %d flag lines:\n%s", cmd, flags, out)
		}
	}
}

// The top-level help shows a few first commands before the command list,
// each naming a real command.
func TestRootHelpExample(t *testing.T) {
	code, out, _ := runCLI(t, "--help")
	lines := strings.Split(out, "\n")
	ex := slices.Index(lines, "Examples:")
	cmds := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Available Commands:") })
	if code != ExitOK || ex < 0 || ex > 10 || cmds < ex {
		t.Fatalf("rlbench --help: exit %d, Examples at line %d, commands at %d:\n%s", code, ex, cmds, out)
	}
	root := NewRoot(&IOStreams{})
	for _, l := range lines[ex+1 : cmds] {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if c, _, err := root.Find(f[1:2]); f[0] != "rlbench" || err != nil || c == root {
			t.Errorf("example %q does not name an rlbench command", l)
		}
	}
}
