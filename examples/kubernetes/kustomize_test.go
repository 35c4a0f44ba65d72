package kubernetes

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// kustomize renders dir with `kubectl kustomize` (kustomize is built into
// kubectl) into its objects; without kubectl the test skips.
func kustomize(t *testing.T, dir string) []map[string]any {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not on PATH")
	}
	out, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	var objs []map[string]any
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var o map[string]any
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

// containers lists the containers and init containers of a Deployment,
// Job or Pod object.
func containers(o map[string]any) []map[string]any {
	spec, _ := o["spec"].(map[string]any)
	if tmpl, ok := spec["template"].(map[string]any); ok {
		spec, _ = tmpl["spec"].(map[string]any)
	}
	var out []map[string]any
	for _, k := range []string{"initContainers", "containers"} {
		cs, _ := spec[k].([]any)
		for _, c := range cs {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

// TestKustomize (issue 24): the base and the one-node overlay render; every
// object carries the step it is applied in (rlbench.dev/step, the README's
// `kubectl apply -k ... -l rlbench.dev/step=...`); the overlay adds the
// hostPath PV bound to the evidence PVC and never pulls the rlbench image.
func TestKustomize(t *testing.T) {
	steps := map[string]bool{"setup": true, "attack": true, "collect": true, "evidence": true}
	for _, c := range []struct {
		dir    string
		policy string
		pv     bool
	}{{"base", "IfNotPresent", false}, {filepath.Join("overlays", "one-node"), "Never", true}} {
		objs := kustomize(t, c.dir)
		pv, rlbench := false, 0
		for _, o := range objs {
			meta, _ := o["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			if s, _ := labels["rlbench.dev/step"].(string); !steps[s] {
				t.Errorf("%s: %s %s: step label %q", c.dir, o["kind"], meta["name"], s)
			}
			if o["kind"] == "PersistentVolume" {
				spec := o["spec"].(map[string]any)
				ref, _ := spec["claimRef"].(map[string]any)
				pv = ref["name"] == "rlbench-evidence" && ref["namespace"] == "rlbench" && spec["hostPath"] != nil
			}
			for _, ct := range containers(o) {
				if ct["image"] != "rlbench:local" {
					continue
				}
				rlbench++
				if ct["imagePullPolicy"] != c.policy {
					t.Errorf("%s: %s %s container %s: imagePullPolicy %v, want %s", c.dir, o["kind"], meta["name"], ct["name"], ct["imagePullPolicy"], c.policy)
				}
			}
		}
		if pv != c.pv || rlbench != 5 {
			t.Fatalf("%s: PV %v (want %v), %d rlbench containers (want 5)", c.dir, pv, c.pv, rlbench)
		}
	}
}
