package runner

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/yamlguard"
	yamlv3 "go.yaml.in/yaml/v3"
)

// ParseLabFile parses a lab file (`rlbench lab -f FILE`): a plan
// scenario's lab: section as a document of its own (LabPlan, the same YAML
// keys and schema), decoded strictly and bounded like a plan
// (yamlguard.ParseOne: one document, a second one is refused), then checked by LabPlan.Validate. Errors name the file
// and, where the value can be found, its line ("lab.yaml: line 3:
// local.fill_interval: ...").
func ParseLabFile(name string, data []byte) (*LabPlan, error) {
	root, err := yamlguard.ParseOne(name, data, yamlguard.Limits{})
	if yamlguard.IsGuard(err) {
		return nil, err
	}
	if err == nil && (root == nil || len(root.Content) == 0) {
		// An empty file (or one of comments only) is a mistake, not a
		// request for the default lab, which "{}" asks for explicitly.
		return nil, fmt.Errorf("%s: empty: a lab file holds a plan scenario's lab: section (proxies, local, global, rls ...; {} for the default lab)", name)
	}
	var lp LabPlan
	if err := decodeStrict(name, data, root, &lp); err != nil {
		return nil, err
	}
	lp.setPlanDir(filepath.Dir(name))
	if field, err := lp.Validate(); err != nil {
		if line := labLine(root, field); line > 0 {
			return nil, fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &lp, nil
}

// Validate checks the lab section on its own, with the rules a plan
// applies to a scenario's lab: proxies >= 0 (0: lab.DefaultProxies unless
// nginx replaces them), the nginx section (validateNginx), global needs
// rls, rls.kind lab (the default) or real, then the lab's own rules and the
// inline RLS config (validate). It fills in the defaults (proxy count, RLS
// kind). field is the key of the failing part ("proxies", "nginx",
// "global", "rls.kind", "rls.config" or "").
func (lp *LabPlan) Validate() (field string, err error) {
	if err := lp.checkProxies(); err != nil {
		return "proxies", err
	}
	return lp.checkSection()
}

// checkProxies checks lab.proxies (>= 0) and fills its default,
// lab.DefaultProxies (none with lab.nginx, whose instances are the targets).
func (lp *LabPlan) checkProxies() error {
	if lp.Proxies < 0 {
		return fmt.Errorf("lab.proxies must be >= 1 (or absent), not %d", lp.Proxies)
	}
	if lp.Proxies == 0 && lp.Nginx == nil && lp.Gateway == nil && lp.HAProxy == nil {
		lp.Proxies = lab.DefaultProxies
	}
	return nil
}

// checkSection checks the rest of the section: lab.nginx (validateNginx)
// or the lab proxies' global filter and RLS (global needs rls; rls.kind lab,
// the default, or real), then the lab's own rules and the inline RLS
// config (validate). field is the key of the failing part.
func (lp *LabPlan) checkSection() (field string, err error) {
	// lab.nginx, lab.gateway and lab.haproxy each replace the lab proxies:
	// at most one of them (the run would start only one).
	var replacing []string
	for _, r := range []struct {
		set  bool
		name string
	}{{lp.Nginx != nil, "nginx"}, {lp.Gateway != nil, "gateway"}, {lp.HAProxy != nil, "haproxy"}} {
		if r.set {
			replacing = append(replacing, r.name)
		}
	}
	if len(replacing) > 1 {
		return replacing[1], fmt.Errorf("lab.%s and lab.%s each replace the lab proxies: give one of lab.nginx, lab.gateway, lab.haproxy", replacing[0], replacing[1])
	}
	if lp.Istio != nil {
		if lp.Nginx != nil || lp.Gateway != nil || lp.HAProxy != nil {
			return "istio", errors.New("lab.istio configures the lab proxies, which lab.nginx, lab.gateway and lab.haproxy replace")
		}
		if field, err := lp.applyIstio(); err != nil {
			return field, err
		}
	}
	if lp.Gateway != nil {
		if err := lp.validateGateway(); err != nil {
			field := "gateway"
			if ge := (*gatewayError)(nil); errors.As(err, &ge) && ge.field != "" {
				field += "." + ge.field
			}
			return field, err
		}
		return lp.validate()
	}
	if lp.HAProxy != nil {
		if field, err := lp.validateHAProxy(); err != nil {
			return field, err
		}
		return lp.validate()
	}
	if lp.Nginx != nil {
		if field, err := lp.validateNginx(); err != nil {
			return field, err
		}
		return lp.validate()
	}
	if lp.Global != nil && lp.RLS == nil {
		return "global", errors.New("lab.global needs lab.rls")
	}
	if lp.RLS != nil && lp.RLS.Kind == "" {
		lp.RLS.Kind = RLSLab
	}
	if lp.RLS != nil && lp.RLS.Kind != RLSLab && lp.RLS.Kind != RLSReal {
		return "rls.kind", errors.New("lab.rls.kind must be lab or real")
	}
	return lp.validate()
}

// LabOptions is the lab section as the lab's options (lab.Options), without
// the evidence writers, the lab RLS's parsed configuration and a real RLS's
// address, which whoever starts the lab adds.
func (lp *LabPlan) LabOptions() lab.Options { return lp.labOptions() }

// labLine is nodeLine for a lab file's field; 0 without a field or tree.
func labLine(root *yamlv3.Node, field string) int {
	if root == nil || field == "" {
		return 0
	}
	return nodeLine(root, field)
}
