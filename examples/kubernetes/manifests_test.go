// Package kubernetes holds the Kubernetes example of a sharded attack
// (issue 15); its test decodes every manifest strictly into the k8s.io/api
// types and runs each container's args through rlbench's own flag parsing.
package kubernetes

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/cli"
)

// manifests are the example's objects by kind and name.
type manifests struct {
	namespaces  map[string]*corev1.Namespace
	pvcs        map[string]*corev1.PersistentVolumeClaim
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	jobs        map[string]*batchv1.Job
	pods        map[string]*corev1.Pod
}

// strict decodes one document into v, refusing unknown and duplicate fields.
func strict(t *testing.T, where string, doc []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

// add decodes one object strictly into into, by its name.
func add[T any, P interface {
	*T
	GetName() string
}](t *testing.T, where string, doc []byte, into map[string]*T) {
	t.Helper()
	var o T
	strict(t, where, doc, &o)
	into[P(&o).GetName()] = &o
}

func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{namespaces: map[string]*corev1.Namespace{}, pvcs: map[string]*corev1.PersistentVolumeClaim{},
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		jobs: map[string]*batchv1.Job{}, pods: map[string]*corev1.Pod{}}
	files, err := filepath.Glob(filepath.Join("base", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			where := fmt.Sprintf("%s document %d", f, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "kustomize.config.k8s.io/v1beta1 Kustomization":
				continue // base/kustomization.yaml: TestKustomize
			case "v1 Namespace":
				add(t, where, doc, m.namespaces)
			case "v1 PersistentVolumeClaim":
				add(t, where, doc, m.pvcs)
			case "apps/v1 Deployment":
				add(t, where, doc, m.deployments)
			case "v1 Service":
				add(t, where, doc, m.services)
			case "v1 ConfigMap":
				add(t, where, doc, m.configMaps)
			case "batch/v1 Job":
				add(t, where, doc, m.jobs)
			case "v1 Pod":
				add(t, where, doc, m.pods)
			default:
				t.Fatalf("%s: unexpected %s %s", where, tm.APIVersion, tm.Kind)
			}
		}
	}
	return m
}

// TestStrictDecodingCatchesTypos: the decoder the test relies on refuses a
// misspelt field.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	var j batchv1.Job
	err := yaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n"), &j)
	if err == nil || !strings.Contains(err.Error(), "completionsMode") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) as the kubelet does, with the values in env; a
// reference to a variable the container does not define fails.
func expand(t *testing.T, where string, args []string, env map[string]string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				t.Fatalf("%s: args refer to $(%s), which the container does not define", where, name)
			}
			return v
		})
	}
	return out
}

// containerEnv gives each env entry of c a sample value: a ConfigMap key's
// value (the key must exist), the pod name, the completion index.
func containerEnv(t *testing.T, m *manifests, where string, c corev1.Container, index string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm := m.configMaps[ref.Name]
			if cm == nil {
				t.Fatalf("%s: env %s: no ConfigMap %s", where, e.Name, ref.Name)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				t.Fatalf("%s: env %s: ConfigMap %s has no key %s", where, e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = "rlbench-pod-x"
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			env[e.Name] = "node-x"
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']":
			env[e.Name] = index
		default:
			t.Fatalf("%s: env %s: unexpected source", where, e.Name)
		}
	}
	return env
}

// parse runs args through rlbench's command for args[0] (args[0:2] for
// collect) with a runF that keeps the options: a flag rlbench does not have,
// or a bad value, fails here.
func parse(t *testing.T, where string, args []string) any {
	t.Helper()
	tio := &cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	var got any
	keep := func(o any) error { got = o; return nil }
	var cmd *cobra.Command
	rest := args[1:]
	switch args[0] {
	case "attack":
		cmd = cli.NewAttackCmd(tio, func(o *cli.AttackOptions) error { return keep(o) })
	case "backend":
		cmd = cli.NewBackendCmd(tio, func(o *cli.BackendOptions) error { return keep(o) })
	case "merge":
		cmd = cli.NewMergeCmd(tio, func(o *cli.MergeOptions) error { return keep(o) })
	case "analyze":
		cmd = cli.NewAnalyzeCmd(tio, func(o *cli.AnalyzeOptions) error { return keep(o) })
	case "collect":
		if len(args) < 2 || args[1] != "receipts" {
			t.Fatalf("%s: unexpected %v", where, args)
		}
		cmd, rest = cli.NewCollectReceiptsCmd(tio, func(o *cli.CollectReceiptsOptions) error { return keep(o) }), args[2:]
	default:
		t.Fatalf("%s: unexpected command %q", where, args[0])
	}
	cmd.SetArgs(rest)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil || got == nil {
		t.Fatalf("%s: rlbench %s: %v", where, strings.Join(args, " "), err)
	}
	return got
}

func TestManifests(t *testing.T) {
	m := load(t)
	if m.namespaces["rlbench"] == nil || m.pvcs["rlbench-evidence"] == nil {
		t.Fatal("want namespace rlbench and PVC rlbench-evidence")
	}
	each := func(fn func(ns string)) {
		for _, o := range m.pvcs {
			fn(o.Namespace)
		}
		for _, o := range m.deployments {
			fn(o.Namespace)
		}
		for _, o := range m.services {
			fn(o.Namespace)
		}
		for _, o := range m.configMaps {
			fn(o.Namespace)
		}
		for _, o := range m.jobs {
			fn(o.Namespace)
		}
		for _, o := range m.pods {
			fn(o.Namespace)
		}
	}
	each(func(ns string) {
		if ns != "rlbench" {
			t.Errorf("object in namespace %q, want rlbench", ns)
		}
	})

	// The backend: a Deployment whose Service reaches its listener.
	dep, svc := m.deployments["rlbench-backend"], m.services["rlbench-backend"]
	if dep == nil || svc == nil {
		t.Fatal("want Deployment and Service rlbench-backend")
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Fatalf("Service selector %s=%s does not select the backend pods", k, v)
		}
	}
	bc := dep.Spec.Template.Spec.Containers[0]
	bo := parse(t, "backend", expand(t, "backend", bc.Args, containerEnv(t, m, "backend", bc, ""))).(*cli.BackendOptions)
	port := strconv.Itoa(int(bc.Ports[0].ContainerPort))
	if !strings.HasSuffix(bo.Listen, ":"+port) || svc.Spec.Ports[0].TargetPort.String() != bc.Ports[0].Name || bo.Replica != "rlbench-pod-x" {
		t.Fatalf("backend listens on %s, replica %q; Service targets %s, container port %s", bo.Listen, bo.Replica, svc.Spec.Ports[0].TargetPort.String(), port)
	}
	backendURL := fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, svc.Namespace, svc.Spec.Ports[0].Port)

	// The attack: an Indexed Job, parallelism = completions = N, each pod a shard.
	job := m.jobs["rlbench-attack"]
	if job == nil {
		t.Fatal("want Job rlbench-attack")
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil ||
		*s.Parallelism != *s.Completions || *s.Completions < 2 {
		t.Fatalf("attack Job: completionMode %s, completions %s, parallelism %s: want Indexed with parallelism = completions = N",
			deref(s.CompletionMode), deref(s.Completions), deref(s.Parallelism))
	}
	n := int(*s.Completions)
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 || s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("attack Job: a retried shard re-sends its IDs: want backoffLimit 0 and restartPolicy Never")
	}
	ac := s.Template.Spec.Containers[0]
	// Each pod names the node whose clock it reads (issue 24): a pod's host
	// name is its own, and merge intersects the clock bounds per node.
	if env := containerEnv(t, m, "attack pod", ac, "0"); env[evidence.NodeNameEnv] != "node-x" {
		t.Fatalf("attack pod: want env %s from the downward API's spec.nodeName", evidence.NodeNameEnv)
	}
	outs := map[string]bool{}
	var startAt time.Time
	for k := range n {
		t.Setenv("JOB_COMPLETION_INDEX", strconv.Itoa(k)) // set by the control plane in an Indexed Job
		where := fmt.Sprintf("attack pod %d", k)
		args := expand(t, where, ac.Args, containerEnv(t, m, where, ac, strconv.Itoa(k)))
		o := parse(t, where, args).(*cli.AttackOptions)
		if o.ShardFromEnv != "JOB_COMPLETION_INDEX" || o.Shards != n || o.Shard.Index != k || o.Shard.Count != n {
			t.Fatalf("%s: shard %+v from %q of %d: want %d/%d from JOB_COMPLETION_INDEX", where, o.Shard, o.ShardFromEnv, o.Shards, k, n)
		}
		if o.StartAt.IsZero() || (!startAt.IsZero() && !o.StartAt.Equal(startAt)) {
			t.Fatalf("%s: --start-at %v: want the ConfigMap's one instant", where, o.StartAt)
		}
		startAt = o.StartAt
		if outs[o.Out] || !strings.HasPrefix(o.Out, "/evidence/") {
			t.Fatalf("%s: --out %s: want a directory of its own on the evidence volume", where, o.Out)
		}
		outs[o.Out] = true
	}
	if m.configMaps["rlbench-attack"].Data["TARGET"] != backendURL {
		t.Fatalf("default target %q, want the backend Service %s", m.configMaps["rlbench-attack"].Data["TARGET"], backendURL)
	}

	// The collection: receipts from the backend Service, merge, analyze.
	cj := m.jobs["rlbench-collect"]
	if cj == nil || len(cj.Spec.Template.Spec.InitContainers) != 2 {
		t.Fatal("want Job rlbench-collect with the receipts and merge steps")
	}
	steps := append(append([]corev1.Container{}, cj.Spec.Template.Spec.InitContainers...), cj.Spec.Template.Spec.Containers...)
	rc := parse(t, "collect receipts", steps[0].Args).(*cli.CollectReceiptsOptions)
	mo := parse(t, "merge", steps[1].Args).(*cli.MergeOptions)
	an := parse(t, "analyze", steps[2].Args).(*cli.AnalyzeOptions)
	if len(rc.URLs) != 1 || !strings.HasPrefix(rc.URLs[0], backendURL+"/") || !strings.HasPrefix(rc.Out, "/evidence/") ||
		len(mo.Inputs) != 1 || mo.Inputs[0] != "/evidence" || an.Dir != mo.Out {
		t.Fatalf("collection: receipts %+v, merge %+v, analyze %s", rc, mo, an.Dir)
	}
	// Every pod mounts the evidence claim at /evidence.
	for name, spec := range map[string]corev1.PodSpec{"attack": s.Template.Spec, "collect": cj.Spec.Template.Spec, "holder": m.pods["rlbench-evidence"].Spec} {
		ok := false
		for _, v := range spec.Volumes {
			ok = ok || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "rlbench-evidence"
		}
		if !ok {
			t.Errorf("%s pod does not mount the rlbench-evidence claim", name)
		}
	}
}

// deref renders an optional field ("unset" for nil).
func deref[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
