//go:build k8s

package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/ociimage"
)

// The k8s test's settings (environment):
//
//	KUBECONFIG              the cluster (required: without it the test skips)
//	RLBENCH_K8S_CONTAINERD  the node's containerd socket: the image tarball is imported with
//	                        `ctr --address SOCKET -n k8s.io images import` (a one-node cluster on this machine)
//	RLBENCH_K8S_LOAD        or a shell command that loads $IMAGE_TAR into the cluster
//	                        (e.g. 'kind load image-archive "$IMAGE_TAR"'); one of the two is required
//	RLBENCH_K8S_PV_DIR      the hostPath directory of the evidence PV on the node (default: a new
//	                        temporary directory: right when the node is this machine)
//	RLBENCH_K8S_SHARDS      the shard count N (default 4); RLBENCH_K8S_IDS the IDs (default 4000)
//	RLBENCH_K8S_LEAD        the START_AT lead (default 45s)
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// kubectl runs kubectl with args (stdin from in, when not nil) and returns
// its stdout; a failure stops the test with its output.
func kubectl(t *testing.T, ctx context.Context, in []byte, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	if in != nil {
		cmd.Stdin = bytes.NewReader(in)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// waitJob waits until Job name of namespace rlbench completes; when it
// fails (or 10 minutes pass) the test stops with the pods and their logs.
func waitJob(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		st := kubectl(t, ctx, nil, "-n", "rlbench", "get", "job", name, "-o",
			`jsonpath={range .status.conditions[?(@.status=="True")]}{.type} {end}`)
		switch {
		case strings.Contains(st, "Complete"):
			return
		case strings.Contains(st, "Failed") || time.Now().After(deadline):
			pods, _ := exec.CommandContext(ctx, "kubectl", "-n", "rlbench", "get", "pods", "-o", "wide").CombinedOutput()
			logs, _ := exec.CommandContext(ctx, "kubectl", "-n", "rlbench", "logs", "job/"+name, "--all-containers", "--tail=50").CombinedOutput()
			t.Fatalf("job %s: conditions %q\n%s\n%s", name, st, pods, logs)
		}
		time.Sleep(2 * time.Second) // polling the API: there is nothing to wait on locally
	}
}

// TestKubernetesExample (issue 24, build tag k8s) runs examples/kubernetes
// on the cluster KUBECONFIG names, through the one-node overlay and an
// overlay of the test's own (the PV's directory, the shard count, analyze's
// JSON): it builds the image tarball (internal/ociimage), loads it, applies
// the steps in order (setup; START_AT; attack; collect), waits for the
// Indexed Job and the collect Job, and asserts from analyze's JSON report
// the verdict PASS, N shards, every ID sent, admitted and received once,
// and one clock (the pods' node) for all shards. The namespace and the PV
// are deleted afterwards.
func TestKubernetesExample(t *testing.T) {
	if os.Getenv("KUBECONFIG") == "" {
		t.Skip("KUBECONFIG names no cluster")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl not on PATH")
	}
	shards, err1 := strconv.Atoi(envOr("RLBENCH_K8S_SHARDS", "4"))
	ids, err2 := strconv.Atoi(envOr("RLBENCH_K8S_IDS", "4000"))
	lead, err3 := time.ParseDuration(envOr("RLBENCH_K8S_LEAD", "45s"))
	if err1 != nil || err2 != nil || err3 != nil || shards < 1 || ids < shards {
		t.Fatalf("RLBENCH_K8S_SHARDS / _IDS / _LEAD: %v %v %v", err1, err2, err3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := t.TempDir()
	t0 := time.Now()
	step := func(what string) { t.Logf("%7.1fs %s", time.Since(t0).Seconds(), what) }

	// The image: the static binary, packaged without Docker.
	bin := filepath.Join(dir, "rlbench")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/rlbench")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Build(ociimage.Options{Binary: b, Arch: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "rlbench-image.tar")
	if err := ociimage.WriteFile(tarPath, ociimage.DefaultTag, img); err != nil {
		t.Fatal(err)
	}
	var load *exec.Cmd
	switch {
	case os.Getenv("RLBENCH_K8S_LOAD") != "":
		load = exec.CommandContext(ctx, "sh", "-c", os.Getenv("RLBENCH_K8S_LOAD"))
		load.Env = append(os.Environ(), "IMAGE_TAR="+tarPath)
	case os.Getenv("RLBENCH_K8S_CONTAINERD") != "":
		load = exec.CommandContext(ctx, "ctr", "--address", os.Getenv("RLBENCH_K8S_CONTAINERD"), "-n", "k8s.io", "images", "import", tarPath)
	default:
		t.Fatal("say how to load the image: RLBENCH_K8S_CONTAINERD=<the node's containerd socket> (ctr import) or RLBENCH_K8S_LOAD='<command loading $IMAGE_TAR>'")
	}
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("loading the image: %v\n%s", err, out)
	}
	step("image built and loaded")

	// The test's overlay on the one-node overlay.
	pv := os.Getenv("RLBENCH_K8S_PV_DIR")
	if pv == "" {
		pv = filepath.Join(dir, "pv")
		if err := os.Mkdir(pv, 0o775); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(pv, 65532, 65532); err != nil {
			t.Fatalf("the PV directory must be writable by the pods' user 65532: %v", err)
		}
	}
	overlay, err := filepath.Abs(filepath.Join("overlays", "one-node"))
	if err != nil {
		t.Fatal(err)
	}
	// kustomize takes a base by a relative path only.
	kdir := filepath.Join(dir, "overlay")
	if err := os.Mkdir(kdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if overlay, err = filepath.Rel(kdir, overlay); err != nil {
		t.Fatal(err)
	}
	kust := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [%q]
patches:
  - target: {kind: PersistentVolume, name: rlbench-evidence-one-node}
    patch: |
      - {op: replace, path: /spec/hostPath/path, value: %q}
  - target: {kind: Job, name: rlbench-attack}
    patch: |
      - {op: replace, path: /spec/completions, value: %[3]d}
      - {op: replace, path: /spec/parallelism, value: %[3]d}
      - {op: replace, path: /spec/template/spec/containers/0/env/1, value: {name: SHARDS, value: "%[3]d"}}
      - {op: replace, path: /spec/template/spec/containers/0/args/4, value: "%[4]d"}
  - target: {kind: Job, name: rlbench-collect}
    patch: |
      - {op: replace, path: /spec/template/spec/containers/0/args, value: [analyze, /evidence/run, --expect-admitted, "%[4]d", --format, json]}
`, overlay, pv, shards, ids)
	if err := os.WriteFile(filepath.Join(kdir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered := kubectl(t, ctx, nil, "kustomize", kdir)
	if !strings.Contains(rendered, "value: \""+strconv.Itoa(shards)+"\"") || !strings.Contains(rendered, "imagePullPolicy: Never") {
		t.Fatalf("overlay did not apply:\n%s", rendered)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_ = exec.CommandContext(c, "kubectl", "delete", "namespace", "rlbench", "--wait=true", "--timeout=2m").Run()
		_ = exec.CommandContext(c, "kubectl", "delete", "pv", "rlbench-evidence-one-node", "--wait=true", "--timeout=1m").Run()
	})

	kubectl(t, ctx, nil, "apply", "-k", kdir, "-l", "rlbench.dev/step=setup")
	kubectl(t, ctx, nil, "-n", "rlbench", "rollout", "status", "deploy/rlbench-backend", "--timeout=5m")
	step("setup applied, backend ready")
	startAt := time.Now().Add(lead).UTC().Truncate(time.Second)
	cm := kubectl(t, ctx, nil, "-n", "rlbench", "create", "configmap", "rlbench-attack", "--from-literal=TARGET=http://rlbench-backend.rlbench.svc:8080",
		"--from-literal=START_AT="+startAt.Format(time.RFC3339), "--dry-run=client", "-o", "yaml")
	kubectl(t, ctx, []byte(cm), "apply", "-f", "-")
	kubectl(t, ctx, nil, "apply", "-k", kdir, "-l", "rlbench.dev/step=attack")
	waitJob(t, ctx, "rlbench-attack")
	step(fmt.Sprintf("attack Job complete (START_AT %s, lead %v)", startAt.Format(time.RFC3339), lead))
	kubectl(t, ctx, nil, "apply", "-k", kdir, "-l", "rlbench.dev/step=collect")
	waitJob(t, ctx, "rlbench-collect")
	step("collect Job complete")
	mergeLog := kubectl(t, ctx, nil, "-n", "rlbench", "logs", "job/rlbench-collect", "-c", "merge")
	out := kubectl(t, ctx, nil, "-n", "rlbench", "logs", "job/rlbench-collect", "-c", "analyze")
	t.Logf("merge: %s", strings.TrimSpace(mergeLog))

	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("analyze's JSON: %v\n%s", err, out)
	}
	if rep.Status != "PASS" || len(rep.Scenarios) != 1 {
		t.Fatalf("verdict %s, %d scenarios\n%s", rep.Status, len(rep.Scenarios), out)
	}
	s := rep.Scenarios[0]
	if s.Totals.Sent != ids || s.Totals.N[evidence.ClassAdmitted] != ids || s.Receipts.Total != ids {
		t.Fatalf("sent %d, admitted %d, receipts %d: want %d each", s.Totals.Sent, s.Totals.N[evidence.ClassAdmitted], s.Receipts.Total, ids)
	}
	sh := s.Shards
	if sh == nil || sh.Count != shards || len(sh.Shards) != shards || len(sh.Unbounded) != 0 {
		t.Fatalf("shards %+v: want %d, every clock bounded", sh, shards)
	}
	nodes := strings.Fields(kubectl(t, ctx, nil, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"))
	for _, x := range sh.Shards {
		if x.Node == "" || x.Node == x.Host {
			t.Fatalf("shard %d: node %q, host %q: want the pod's node (spec.nodeName), not its host name", x.Index, x.Node, x.Host)
		}
	}
	if len(nodes) == 1 && sh.Clocks != 1 {
		t.Fatalf("one node (%s): %d clocks, want 1 (the shards' bounds intersected)", nodes[0], sh.Clocks)
	}
	t.Logf("PASS: %d shards on %d host(s), %d clock(s), start spread %v, max late %v, clock widening ±%v; %d sent, %d admitted, %d receipts; total %v",
		shards, sh.Hosts, sh.Clocks, time.Duration(sh.StartSpreadNs), time.Duration(sh.MaxLateNs), time.Duration(sh.OffsetBoundNs), s.Totals.Sent,
		s.Totals.N[evidence.ClassAdmitted], s.Receipts.Total, time.Since(t0).Round(time.Second))
}
