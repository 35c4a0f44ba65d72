package userdirs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRunsAndBin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG rules apply on Linux")
	}
	tmp := t.TempDir()
	for _, c := range []struct {
		name                     string
		home, rlHome, state, cch string
		runs, bin                string
	}{
		{"RLBENCH_HOME wins", tmp + "/h", tmp + "/rl", tmp + "/st", tmp + "/c", tmp + "/rl/runs", tmp + "/rl/bin"},
		{"XDG dirs", tmp + "/h", "", tmp + "/st", tmp + "/c", tmp + "/st/rlbench/runs", tmp + "/c/rlbench/bin"},
		{"HOME only", tmp + "/h", "", "", "", tmp + "/h/.local/state/rlbench/runs", tmp + "/h/.cache/rlbench/bin"},
		{"relative XDG_STATE_HOME is ignored", tmp + "/h", "", "rel/state", "", tmp + "/h/.local/state/rlbench/runs", tmp + "/h/.cache/rlbench/bin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HOME", c.home)
			t.Setenv(EnvHome, c.rlHome)
			t.Setenv("XDG_STATE_HOME", c.state)
			t.Setenv("XDG_CACHE_HOME", c.cch)
			if got, err := Runs(); err != nil || got != c.runs {
				t.Errorf("Runs = %q, %v; want %q", got, err, c.runs)
			}
			if got, err := Bin(); err != nil || got != c.bin {
				t.Errorf("Bin = %q, %v; want %q", got, err, c.bin)
			}
		})
	}
}

func TestRelativeHomeIsMadeAbsolute(t *testing.T) {
	t.Setenv(EnvHome, "rel")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Runs(); err != nil || got != filepath.Join(wd, "rel", RunsDir) {
		t.Fatalf("Runs = %q, %v", got, err)
	}
}

func TestNoHome(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG rules apply on Linux")
	}
	t.Setenv(EnvHome, "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := Runs(); err == nil || !strings.Contains(err.Error(), "--root") || !strings.Contains(err.Error(), EnvHome) {
		t.Fatalf("Runs without HOME: %v", err)
	}
	if _, err := Bin(); err == nil || !strings.Contains(err.Error(), EnvHome) {
		t.Fatalf("Bin without HOME: %v", err)
	}
}
