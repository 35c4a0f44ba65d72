package cli

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// readmeCheckClean fails the test for each file the README's blocks wrote in the work directory (a stand-in for
// the repository's directory, where a reader runs them) that `git status` of the repository at repo would show: a
// path that is neither in the repository nor ignored by its .gitignore (git check-ignore --no-index). Run
// directories, for one, must go under an ignored root (issue 25: they piled up in the Go package evidence/).
func readmeCheckClean(t *testing.T, repo, work string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git to ask about .gitignore")
	}
	if _, err := os.Stat(filepath.Join(repo, ".gitignore")); err != nil {
		t.Skipf("no .gitignore beside the README: %v", err)
	}
	var dirty []string
	err = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == work {
			return err
		}
		rel, err := filepath.Rel(work, p)
		if err != nil {
			return err
		}
		if rel == "rlbench" && d.Type()&fs.ModeSymlink != 0 {
			return nil // the harness's stand-in for `go build -o rlbench` (ignored as /rlbench)
		}
		if _, err := os.Lstat(filepath.Join(repo, rel)); err == nil {
			return nil // the repository has it (examples/...): look inside
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			name += "/"
		}
		cmd := exec.Command(git, "-C", repo, "check-ignore", "-q", "--no-index", "--", name)
		err = cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil: // ignored, and so is everything below it
			if d.IsDir() {
				return filepath.SkipDir
			}
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			dirty = append(dirty, name)
			if d.IsDir() {
				return filepath.SkipDir
			}
		default:
			t.Skipf("git check-ignore: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirty {
		t.Errorf("the README's blocks write %s, which `git status` of the repository would show: write it elsewhere or add it to .gitignore", d)
	}
}
