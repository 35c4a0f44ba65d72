package lint

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// listenersDoc is a bootstrap of n static listeners, one line each.
func listenersDoc(n int) string {
	var b strings.Builder
	b.WriteString("node: {id: x}\nstatic_resources:\n  listeners:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: l%d, address: {socket_address: {address: 127.0.0.1, port_value: %d}}}\n", i, 1+i%60000)
	}
	return b.String()
}

// TestListenersCap: MaxListeners listeners are linted; one more is one
// E_DECODE finding naming the field's line and the cap, and nothing else
// of the file is checked.
func TestListenersCap(t *testing.T) {
	if rep := lintString(t, "at-cap.yaml", listenersDoc(MaxListeners), Options{}); len(rep.Findings) != 0 {
		t.Fatalf("at the cap, findings:%s", dump(rep))
	}
	doc := listenersDoc(MaxListeners+1) + "  - {name: bad, address: {socket_address: {port_value: x}}}\n"
	rep := lintString(t, "over.yaml", doc, Options{})
	want := Finding{Code: CodeDecode, Level: LevelError, File: "over.yaml", Line: 3, Path: "static_resources.listeners",
		Message: "more than 10000 listeners (10002), the most rlbench lint checks in one file; nothing in the file was checked"}
	if len(rep.Findings) != 1 || rep.Findings[0] != want {
		t.Fatalf("over the cap, findings:%s", dump(rep))
	}
	// The JSON spelling of the field counts too.
	rep = lintString(t, "json.yaml", strings.Replace(listenersDoc(MaxListeners+1), "static_resources:", "staticResources:", 1), Options{})
	if len(rep.Findings) != 1 || !strings.HasPrefix(rep.Findings[0].Message, "more than 10000 listeners (10001)") {
		t.Fatalf("staticResources, findings:%s", dump(rep))
	}
}

// TestShallowDecodeFindings: with each message decoded as a stub at its
// parent, every decode error is still found at its own path, at any depth:
// wrong shapes in lists and maps, a field set by both its names, a
// well-known type's payload inside an Any, a bad leaf at the bottom of a
// deep access log filter.
func TestShallowDecodeFindings(t *testing.T) {
	var deep strings.Builder
	ind := "        "
	const depth = 40
	for range depth {
		deep.WriteString(ind + "and_filter:\n" + ind + "  filters:\n" + ind + "  - not_health_check_filter: {}\n" + ind + "  -\n")
		ind += "    "
	}
	deep.WriteString(ind + "status_code_filter: {comparison: {op: GE, value: {default_value: \"many\", runtime_key: k}}}\n")
	doc := `static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 1}}
    filter_chains: "notalist"
  - "notamap"
  - name: m
    address: [1, 2]
    listener_filters:
    - name: a
      typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: 5}
    - name: b
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true, suppressEnvoyHeaders: false}
    access_log:
    - name: envoy.access_loggers.stdout
      typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}
      filter:
` + deep.String() + `  clusters:
  - name: c
    typed_extension_protocol_options:
      bad: "str"
    load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: x, port_value: 1}}}}, 7]}]}
`
	rep := lintString(t, "shapes.yaml", doc, Options{})
	deepPath := "static_resources.listeners[2].access_log[0].filter" + strings.Repeat(".and_filter.filters[1]", depth) + ".status_code_filter.comparison.value.default_value"
	want := []cp{
		{CodeNoListeners, ""},
		{CodeDecode, "static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints"},
		{CodeDecode, "static_resources.clusters[0].typed_extension_protocol_options"},
		{CodeDecode, "static_resources.listeners"},
		{CodeDecode, "static_resources.listeners[0].filter_chains"},
		{CodeDecode, deepPath},
		{CodeDecode, "static_resources.listeners[2].address"},
		{CodeDecode, "static_resources.listeners[2].listener_filters[0].typed_config"},
		{CodeDecode, "static_resources.listeners[2].listener_filters[1].typed_config"},
	}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s", dump(rep))
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Message, "(line ") {
			t.Errorf("%s: the position in rlbench's internal JSON is not the user's", f)
		}
	}
	if f := rep.Findings[8]; !strings.Contains(f.Message, `duplicate field "suppress_envoy_headers"`) {
		t.Errorf("both names of one field: %s", f)
	}
}

// BenchmarkLintListeners times Lint of a bootstrap of n static listeners
// (one line each); past MaxListeners it is one finding.
func BenchmarkLintListeners(b *testing.B) {
	for _, n := range []int{1_000, MaxListeners, 20_000} {
		doc := listenersDoc(n)
		b.Run(fmt.Sprintf("listeners=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Lint(context.Background(), []Source{{Name: "l.yaml", R: strings.NewReader(doc)}}, Options{})
				if err != nil || (len(rep.Findings) != 0) != (n > MaxListeners) {
					b.Fatal(err, dump(rep))
				}
			}
		})
	}
}

// BenchmarkLintDepth times Lint of an access log filter nested depth
// levels deep above 2,000 leaf filters: the time stays about flat in depth
// (each level decoded its whole subtree again: size times depth).
func BenchmarkLintDepth(b *testing.B) {
	for _, depth := range []int{1, 20, 60} {
		var d strings.Builder
		d.WriteString("static_resources:\n  listeners:\n  - name: l\n    access_log:\n    - name: envoy.access_loggers.stdout\n" +
			"      typed_config: {\"@type\": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}\n      filter:\n")
		ind := "        "
		for range depth {
			d.WriteString(ind + "and_filter:\n" + ind + "  filters:\n" + ind + "  - not_health_check_filter: {}\n" + ind + "  -\n")
			ind += "    "
		}
		d.WriteString(ind + "and_filter:\n" + ind + "  filters:\n")
		for i := range 2000 {
			fmt.Fprintf(&d, "%s  - duration_filter: {comparison: {op: GE, value: {default_value: %d, runtime_key: k}}}\n", ind, i)
		}
		doc := d.String()
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Lint(context.Background(), []Source{{Name: "d.yaml", R: strings.NewReader(doc)}}, Options{})
				if err != nil || len(rep.Findings) != 0 {
					b.Fatal(err, dump(rep))
				}
			}
		})
	}
}
