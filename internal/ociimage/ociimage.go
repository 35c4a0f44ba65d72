// Package ociimage builds rlbench's container image from the static
// binary, without Docker, a base image or a registry (issue 24): one layer
// on an empty base, written as an image tarball (the `docker save`
// format, which `docker load`, `ctr images import`, `kind load
// image-archive`, `podman load` and `crane push` read). It uses
// github.com/google/go-containerregistry, the library of ko and crane
// (pkg/v1/empty, pkg/v1/mutate, pkg/v1/tarball).
//
// The image holds what examples/kubernetes/Dockerfile's distroless base
// gives the binary: /rlbench, /etc/passwd and /etc/group with root and
// nonroot (65532), and a world-writable /tmp; it runs as 65532:65532 with
// /rlbench as its entrypoint. Every file's time is the epoch and the
// config's created time too, so the same binary gives the same image
// digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BinaryPath is where the binary lives in the image, and the entrypoint.
const BinaryPath = "/rlbench"

// User is the image's user and group: distroless's nonroot, which
// examples/kubernetes' pods run as (runAsNonRoot, fsGroup 65532).
const User = "65532:65532"

// DefaultTag is the image name examples/kubernetes' manifests run.
const DefaultTag = "rlbench:local"

// Options say what to build.
type Options struct {
	// Binary is the rlbench binary's content: a static linux binary for
	// Arch (CGO_ENABLED=0 GOOS=linux).
	Binary []byte
	// Arch is its GOARCH (amd64, arm64 ...); the image's platform is
	// linux/Arch. Required.
	Arch string
	// Labels are the image config's labels (e.g.
	// org.opencontainers.image.version); may be nil.
	Labels map[string]string
}

// Build returns the image: an empty base, one gzip-compressed layer with
// the root file system (package doc), the config (entrypoint BinaryPath,
// User, working directory /, PATH, platform linux/Arch).
func Build(o Options) (v1.Image, error) {
	if len(o.Binary) == 0 {
		return nil, errors.New("ociimage: no binary")
	}
	if o.Arch == "" {
		return nil, errors.New("ociimage: no architecture")
	}
	layerTar, err := rootFS(o.Binary)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return nil, fmt.Errorf("ociimage: layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "rlbench internal/ociimage", Created: v1.Time{Time: time.Unix(0, 0).UTC()}}})
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.User = User
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cf.Config.Labels = o.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	return img, nil
}

// rootFS is the layer's tar: the directories, /etc/passwd, /etc/group and
// the binary, owned by root, times at the epoch.
func rootFS(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	dir := func(n string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n, Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(n string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: mode, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	for _, err := range []error{
		dir("etc/", 0o755),
		file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
		file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		dir("home/", 0o755),
		dir("home/nonroot/", 0o700),
		dir("tmp/", 0o1777),
		file(BinaryPath[1:], 0o755, bin),
		tw.Close(),
	} {
		if err != nil {
			return nil, fmt.Errorf("ociimage: layer: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// WriteFile writes img as an image tarball named tag (e.g. "rlbench:local";
// manifest.json's RepoTags) to path, through a temporary file renamed into
// place. An invalid tag is an error naming it.
func WriteFile(path, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("ociimage: tag %q: %w", tag, err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("ociimage: %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
