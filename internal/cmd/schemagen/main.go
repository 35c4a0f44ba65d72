// Command schemagen writes the JSON Schemas of schemas/ from the Go types
// (internal/schemagen). `go generate ./...` runs it from schemas/:
//
//	go run ../internal/cmd/schemagen
//
// It finds the repository root (the directory of rlbench's go.mod) above the
// working directory, writes every schema into <root>/schemas (or -out) and
// removes *.schema.json files there that no type generates any more.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlbench/rlbench/internal/schemagen"
)

func main() {
	out := flag.String("out", "", "output directory (default <root>/schemas)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(root, "schemas")
	}
	files, err := schemagen.Generate(root)
	if err != nil {
		return err
	}
	return schemagen.Write(out, files)
}

// repoRoot is the nearest directory at or above the working directory whose
// go.mod declares rlbench's module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module "+schemagen.Module+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module " + schemagen.Module + " at or above the working directory")
		}
		dir = parent
	}
}
