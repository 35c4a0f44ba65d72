// Command mkimage builds rlbench's container image tarball without Docker,
// a base image or a registry (internal/ociimage):
//
//	go run ./internal/tools/mkimage                        # rlbench-image.tar, rlbench:local, this GOARCH
//	go run ./internal/tools/mkimage -out /tmp/rlbench.tar -tag registry.example/rlbench:v1 -arch arm64
//	go run ./internal/tools/mkimage -binary ./rlbench      # a binary built already (static, linux)
//
// Without -binary it builds ./cmd/rlbench as the Dockerfile does
// (CGO_ENABLED=0 GOOS=linux GOARCH=-arch go build -trimpath) from the module
// root (the current directory's go.mod). Load the tarball with
// `ctr -n k8s.io images import`, `docker load -i`, `kind load
// image-archive`, or push it with `crane push FILE REF`. Exit 1 on error.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/rlbench/rlbench/internal/ociimage"
)

func main() {
	out := flag.String("out", "rlbench-image.tar", "image tarball to write")
	tag := flag.String("tag", ociimage.DefaultTag, "image name in the tarball (manifest.json RepoTags)")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH of the binary and the image's platform (linux/ARCH)")
	binary := flag.String("binary", "", "a static linux rlbench binary to package instead of building ./cmd/rlbench")
	flag.Parse()
	if err := run(*out, *tag, *arch, *binary); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(out, tag, arch, binary string) error {
	if binary == "" {
		dir, err := os.MkdirTemp("", "mkimage-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "rlbench")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binary, "./cmd/rlbench")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/rlbench: %w", err)
		}
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	img, err := ociimage.Build(ociimage.Options{Binary: b, Arch: arch})
	if err != nil {
		return err
	}
	if err := ociimage.WriteFile(out, tag, img); err != nil {
		return err
	}
	id, err := img.ConfigName() // the image ID docker and ctr show
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s (linux/%s) image ID %s\n", out, tag, arch, id)
	return nil
}
