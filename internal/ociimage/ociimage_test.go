package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestBuildReadBack builds the image from a stand-in binary, writes the
// tarball and reads it back with go-containerregistry: one image tagged
// rlbench:local, platform linux/arm64, entrypoint /rlbench as 65532, one
// layer holding the binary (executable, byte for byte), /etc/passwd with
// nonroot and a sticky world-writable /tmp; the same binary gives the same
// digest.
func TestBuildReadBack(t *testing.T) {
	bin := []byte("\x7fELF stand-in for the static rlbench binary")
	img, err := Build(Options{Binary: bin, Arch: "arm64", Labels: map[string]string{"org.opencontainers.image.version": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rlbench.tar")
	if err := WriteFile(path, DefaultTag, img); err != nil {
		t.Fatal(err)
	}

	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return openFile(path) })
	if err != nil || len(m) != 1 || !reflect.DeepEqual(m[0].RepoTags, []string{"rlbench:local"}) || len(m[0].Layers) != 1 {
		t.Fatalf("manifest.json: %+v, %v", m, err)
	}
	back, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if p := cf.Platform(); p == nil || p.OS != "linux" || p.Architecture != "arm64" {
		t.Fatalf("platform %+v, want linux/arm64", p)
	}
	c := cf.Config
	if !reflect.DeepEqual(c.Entrypoint, []string{"/rlbench"}) || c.User != "65532:65532" || c.WorkingDir != "/" || len(c.Cmd) != 0 ||
		c.Labels["org.opencontainers.image.version"] != "test" {
		t.Fatalf("config %+v", c)
	}
	layers, err := back.Layers()
	if err != nil || len(layers) != 1 || len(cf.RootFS.DiffIDs) != 1 {
		t.Fatalf("%d layers, %d diff ids, %v", len(layers), len(cf.RootFS.DiffIDs), err)
	}
	if d, _ := layers[0].DiffID(); d != cf.RootFS.DiffIDs[0] {
		t.Fatalf("layer diff id %v, config %v", d, cf.RootFS.DiffIDs[0])
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	var got []byte
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		switch h.Name {
		case "rlbench":
			got, _ = io.ReadAll(tr)
		case "etc/passwd":
			b, _ := io.ReadAll(tr)
			if !bytes.Contains(b, []byte("nonroot:x:65532:65532:")) {
				t.Fatalf("/etc/passwd: %q", b)
			}
		}
	}
	if h := files["rlbench"]; h == nil || h.Mode&0o111 == 0 || h.Uid != 0 || !bytes.Equal(got, bin) {
		t.Fatalf("/rlbench in the layer: %+v, content %q", h, got)
	}
	if h := files["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Fatalf("/tmp: %+v", h)
	}

	// Reproducible: the same binary, the same digest; another, another.
	again, _ := Build(Options{Binary: bin, Arch: "arm64", Labels: map[string]string{"org.opencontainers.image.version": "test"}})
	other, _ := Build(Options{Binary: append(bin, 'x'), Arch: "arm64", Labels: map[string]string{"org.opencontainers.image.version": "test"}})
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	d3, _ := other.Digest()
	if d1 != d2 || d1 == d3 {
		t.Fatalf("digests %v, %v (same binary), %v (another)", d1, d2, d3)
	}
	raw, _ := back.RawConfigFile()
	var anyCfg map[string]any
	if err := json.Unmarshal(raw, &anyCfg); err != nil || anyCfg["created"] != "1970-01-01T00:00:00Z" {
		t.Fatalf("config created %v (%v)", anyCfg["created"], err)
	}
}

// TestBuildErrors: no binary, no architecture, a bad tag.
func TestBuildErrors(t *testing.T) {
	if _, err := Build(Options{Arch: "amd64"}); err == nil {
		t.Fatal("no binary: no error")
	}
	if _, err := Build(Options{Binary: []byte("x")}); err == nil {
		t.Fatal("no arch: no error")
	}
	img, err := Build(Options{Binary: []byte("x"), Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "x.tar"), "Bad Tag!", img); err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"Bad Tag!"`)) {
		t.Fatalf("bad tag: %v", err)
	}
}

func openFile(p string) (io.ReadCloser, error) { return os.Open(p) }
