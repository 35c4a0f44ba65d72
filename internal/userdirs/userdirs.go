// Package userdirs owns where rlbench keeps files of its own outside any source tree: the default root of run
// directories (Runs) and the directory of installed real parts (Bin). Every caller (rlbench run, demo, lab, runs,
// internal/realparts, scripts/install-real-parts.sh, which repeats Bin's rule in shell) takes these paths from here.
//
// $RLBENCH_HOME, when set, holds both: $RLBENCH_HOME/runs and $RLBENCH_HOME/bin. Otherwise run directories are user
// state, kept in the XDG Base Directory Specification's state directory ($XDG_STATE_HOME, default ~/.local/state;
// https://specifications.freedesktop.org/basedir-spec/latest/), and the installed binaries are a cache that can be
// rebuilt, kept in os.UserCacheDir ($XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS). On macOS and
// Windows, which have no state directory, runs go under os.UserConfigDir (~/Library/Application Support, %AppData%).
//
// The package creates nothing; callers create the directories they write.
package userdirs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// EnvHome is the environment variable that puts every rlbench user directory under one directory.
const EnvHome = "RLBENCH_HOME"

// App is the directory name rlbench uses inside the user's state and cache directories.
const App = "rlbench"

// RunsDir and BinDir are the subdirectories of $RLBENCH_HOME (and of the state or cache directory's rlbench/).
const (
	RunsDir = "runs"
	BinDir  = "bin"
)

// home returns $RLBENCH_HOME made absolute, or "" when it is unset or empty.
func home() (string, error) {
	h := os.Getenv(EnvHome)
	if h == "" {
		return "", nil
	}
	abs, err := filepath.Abs(h)
	if err != nil {
		return "", fmt.Errorf("$%s %q: %w", EnvHome, h, err)
	}
	return abs, nil
}

// stateDir is the user's state directory: $XDG_STATE_HOME when it is an absolute path (the specification says a
// relative one is to be ignored), else ~/.local/state; on macOS and Windows os.UserConfigDir.
func stateDir() (string, error) {
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "plan9":
		return os.UserConfigDir()
	}
	if s := os.Getenv("XDG_STATE_HOME"); s != "" && filepath.IsAbs(s) {
		return s, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".local", "state"), nil
}

// Runs returns the default root of run directories (absolute): $RLBENCH_HOME/runs when $RLBENCH_HOME is set, else
// $XDG_STATE_HOME/rlbench/runs, else ~/.local/state/rlbench/runs (macOS: ~/Library/Application
// Support/rlbench/runs). It fails only when none of these can be determined (no $HOME); the error says to set
// $RLBENCH_HOME or give --root.
func Runs() (string, error) {
	h, err := home()
	if err != nil || h != "" {
		return filepath.Join(h, RunsDir), err
	}
	s, err := stateDir()
	if err != nil {
		return "", fmt.Errorf("no directory for run directories (%w): set $%s or give --root", err, EnvHome)
	}
	return filepath.Join(s, App, RunsDir), nil
}

// Bin returns the directory of the real parts scripts/install-real-parts.sh installs (absolute): $RLBENCH_HOME/bin
// when $RLBENCH_HOME is set, else os.UserCacheDir()/rlbench/bin ($XDG_CACHE_HOME/rlbench/bin or
// ~/.cache/rlbench/bin on Linux, ~/Library/Caches/rlbench/bin on macOS).
func Bin() (string, error) {
	h, err := home()
	if err != nil || h != "" {
		return filepath.Join(h, BinDir), err
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for installed parts (%w): set $%s", err, EnvHome)
	}
	if !filepath.IsAbs(c) {
		return "", errors.New("the user cache directory " + c + " is not absolute: set $" + EnvHome)
	}
	return filepath.Join(c, App, BinDir), nil
}

// RunsRule states Runs's rule for help texts, in lines of at most 78 columns.
const RunsRule = "$RLBENCH_HOME/runs if RLBENCH_HOME is set, else $XDG_STATE_HOME/rlbench/runs,\n" +
	"else ~/.local/state/rlbench/runs\n(macOS: ~/Library/Application Support/rlbench/runs)"
