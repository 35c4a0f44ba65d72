package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The install line (issue 25). The README's first screen installs rlbench
// on the PATH (`go install ./cmd/rlbench` from a clone, or `go install
// github.com/rlbench/rlbench/cmd/rlbench@VERSION`), and every later block
// that calls bare `rlbench` relies on it; `./rlbench` relies on an earlier
// `go build -o rlbench ./cmd/rlbench`. TestREADME runs both as this test
// binary's rlbench, so it checks the order instead (readmeInstallOrder).

// readmeModuleInstall matches `go install` of the module's command at a
// version (@latest, @v0.3.0, @<commit>).
var readmeModuleInstall = regexp.MustCompile(`^go install github\.com/rlbench/rlbench/cmd/rlbench@[A-Za-z0-9._+-]+$`)

// readmeInstalls reports whether the command line (words joined by single
// spaces) puts rlbench on the PATH.
func readmeInstalls(line string) bool {
	return line == "go install ./cmd/rlbench" || readmeModuleInstall.MatchString(line)
}

// readmeInstallOrder returns, for the blocks' sh code in README order
// (runnable or not: a reader runs them all), the lines that call bare
// `rlbench` before any install line, or `./rlbench` before `go build -o
// rlbench ./cmd/rlbench`.
func readmeInstallOrder(blocks []readmeBlock) []string {
	installed, built := false, false
	var errs []string
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		for i, l := range strings.Split(b.text, "\n") {
			c, _, _ := strings.Cut(l, "#")
			words := strings.Fields(c)
			if len(words) == 0 {
				continue
			}
			line := strings.Join(words, " ")
			switch {
			case readmeInstalls(line):
				installed = true
			case line == "go build -o rlbench ./cmd/rlbench":
				built = true
			case words[0] == "rlbench" && !installed:
				errs = append(errs, fmt.Sprintf("README.md:%d: `%s` before the install line (go install ./cmd/rlbench): a reader has no rlbench on the PATH", b.line+1+i, line))
			case words[0] == "./rlbench" && !built:
				errs = append(errs, fmt.Sprintf("README.md:%d: `%s` before `go build -o rlbench ./cmd/rlbench`: a reader has no ./rlbench", b.line+1+i, line))
			}
		}
	}
	return errs
}

func TestREADMEInstallLine(t *testing.T) {
	t.Run("install lines", func(t *testing.T) {
		for line, want := range map[string]bool{
			"go install ./cmd/rlbench":                                 true,
			"go install github.com/rlbench/rlbench/cmd/rlbench@latest": true,
			"go install github.com/rlbench/rlbench/cmd/rlbench@v0.3.0": true,
			"go install github.com/rlbench/rlbench/cmd/rlbench":        false, // outside a module: needs @version
			"go install ./...":                    false,
			"go build -o rlbench ./cmd/rlbench":   false,
			"go install github.com/x/y@latest":    false,
			"go install ./cmd/rlbench ./cmd/else": false,
		} {
			if readmeInstalls(line) != want {
				t.Errorf("readmeInstalls(%q) = %v, want %v", line, !want, want)
			}
		}
	})
	t.Run("translate", func(t *testing.T) {
		lines, runs, err := translate(readmeBlock{line: 1, lang: "sh", text: "go install github.com/rlbench/rlbench/cmd/rlbench@latest\nrlbench demo\n"}, t.TempDir(), 20000)
		if err != nil || runs != 1 || !strings.Contains(strings.Join(lines, "\n"), "# (rlbench is this test binary's command, built already)") {
			t.Fatalf("translate: %v, %d runs, %q", err, runs, lines)
		}
	})
	t.Run("order", func(t *testing.T) {
		sh := func(line int, text string) readmeBlock { return readmeBlock{line: line, lang: "sh", text: text} }
		ok := []readmeBlock{sh(1, "go install ./cmd/rlbench   # on the PATH\nrlbench demo\n"), sh(10, "go build -o rlbench ./cmd/rlbench\n./rlbench lab &\n"), sh(20, "rlbench simulate x.yaml\n")}
		if errs := readmeInstallOrder(ok); len(errs) != 0 {
			t.Errorf("in order: %v", errs)
		}
		bad := []readmeBlock{sh(1, "rlbench demo\n"), sh(10, "go install ./cmd/rlbench\n./rlbench lab &\n")}
		errs := readmeInstallOrder(bad)
		if len(errs) != 2 || !strings.Contains(errs[0], "README.md:2: `rlbench demo` before the install line") || !strings.Contains(errs[1], "README.md:12: `./rlbench lab &` before `go build") {
			t.Errorf("out of order: %q", errs)
		}
	})
	t.Run("first screen", func(t *testing.T) {
		for s, want := range map[string]bool{
			"go install ./cmd/rlbench   # on the PATH\nrlbench demo   # the main job\ngo test -race ./...\n": true,
			"go install github.com/rlbench/rlbench/cmd/rlbench@latest\nrlbench demo\ngo test ./...\n":        true,
			"go install ./cmd/rlbench\ngo run ./cmd/rlbench demo\ngo test ./...\n":                           true,
			"rlbench demo\ngo test ./...\n":                                      false, // not installed
			"go install ./cmd/rlbench\nrlbench demo\n":                           false,
			"go install ./cmd/rlbench\ngo test ./...\nrlbench demo\n":            false,
			"go build -o rlbench ./cmd/rlbench\nrlbench demo\ngo test ./...\n":   false,
			"go install ./cmd/rlbench\nrlbench demo\ngo test ./...\nrlbench x\n": false,
		} {
			if firstScreen(s) != want {
				t.Errorf("firstScreen(%q) = %v, want %v", s, !want, want)
			}
		}
	})
}
