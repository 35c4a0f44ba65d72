package lint

import (
	"encoding/json"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/internal/istio"
)

// Istio finding codes (rlbench lint of a DestinationRule or EnvoyFilter).
const (
	// CodeIstioDecode: the Istio document does not decode (unknown field,
	// wrong type, a value out of range), as istiod would refuse it.
	CodeIstioDecode = "E_ISTIO_DECODE"
	// CodeIstioLab: what the lab (lab.istio in a plan) makes of the
	// document: the Envoy cluster and route settings istiod writes.
	CodeIstioLab = "I_ISTIO_LAB"
)

// istioFile lints an Istio networking document (istio.Kind non-empty): its
// translation's findings (internal/istio: panic routing off, fields the lab
// does not model), a decode error, and one I_ISTIO_LAB finding with the
// Envoy settings the lab will use, each at its line where the path is found.
func (l *linter) istioFile(name string, data []byte) {
	var root yaml3.Node
	_ = yaml3.Unmarshal(data, &root)
	s, err := istio.Translate(name, data)
	if err != nil {
		l.findings = append(l.findings, Finding{Code: CodeIstioDecode, Level: LevelError, File: name, Path: "spec",
			Line: yamlPathLine(&root, "spec"), Message: strings.TrimPrefix(err.Error(), name+": ")})
		return
	}
	for _, f := range s.Findings {
		lv := LevelInfo
		if f.Level == istio.LevelWarning {
			lv = LevelWarning
		}
		l.findings = append(l.findings, Finding{Code: f.Code, Level: lv, File: name, Path: f.Path, Line: yamlPathLine(&root, f.Path), Message: f.Message})
	}
	lab := *s
	lab.Findings = nil
	b, _ := json.Marshal(lab)
	l.findings = append(l.findings, Finding{Code: CodeIstioLab, Level: LevelInfo, File: name, Path: "spec", Line: yamlPathLine(&root, "spec"),
		Message: "the lab's cluster and route (lab.istio): " + string(b)})
}

// yamlPathLine returns the 1-based line of a dotted path with [i] indexes
// ("spec.configPatches[0].patch") in a YAML document, or of its nearest
// ancestor found; 0 when not even the first key is.
func yamlPathLine(root *yaml3.Node, path string) int {
	n := root
	if n.Kind == yaml3.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		key, idx, _ := strings.Cut(part, "[")
		next := (*yaml3.Node)(nil)
		if n.Kind == yaml3.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					next = n.Content[i+1]
					line = n.Content[i].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		for idx != "" {
			var num string
			num, idx, _ = strings.Cut(idx, "]")
			idx = strings.TrimPrefix(idx, "[")
			i, err := strconv.Atoi(num)
			if err != nil || n.Kind != yaml3.SequenceNode || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return line
}
