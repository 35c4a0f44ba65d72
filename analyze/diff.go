package analyze

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
)

// DiffSide builds one side of `rlbench diff` (report.Compare) from rep,
// judged from the bundle b that path (a run or scenario directory, as the
// user named it) loaded: manifest.json's plan name and plan_digest, and
// the configuration digests of each scenario directory (ConfigDigests).
// The error is one of ConfigDigests'.
func DiffSide(ctx context.Context, path string, b *evidence.Bundle, rep *report.Report) (*report.DiffSide, error) {
	side := &report.DiffSide{Path: path, Kind: report.DiffRun, Report: rep, Config: make([][]report.ConfigDigest, len(rep.Scenarios))}
	if evidence.IsScenarioDir(path) {
		side.Kind = report.DiffScenario
	}
	if b != nil && b.Manifest != nil {
		side.Plan, side.PlanDigest = b.Manifest.Plan, b.Manifest.PlanDigest
	}
	root := rep.Dir
	if b != nil && b.Root != "" {
		root = b.Root
	}
	for i, s := range rep.Scenarios {
		dir := s.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir) // ScenarioReport.Dir is relative to the bundle's root
		}
		d, err := ConfigDigests(ctx, dir)
		if err != nil {
			return nil, err
		}
		side.Config[i] = d
	}
	return side, nil
}

// configFiles are the configuration files of a scenario directory that
// ConfigDigests digests, relative to it (nginx/<proxy>/nginx.conf are
// found by a glob).
var configFiles = []string{evidence.ScenarioFile, evidence.AttackFile}

// ConfigDigests computes the report.ConfigDigest of each configuration
// file present in the scenario directory dir: scenario.json (the
// expectation, limiters, limits, classification rules, the request headers
// the descriptors read), attack.json (each phase's attack configuration:
// targets, rate, IDs, method, path, headers ...) and every
// nginx/<proxy>/nginx.conf; in that order. rlbench records no digest of a
// scenario's configuration (manifest.json's plan_digest covers the whole
// plan file), and the RLS configuration is not saved in the evidence (its
// limits are scenario.json's limiters), so this is the one place the
// digests are computed.
//
// What differs from run to run without being configuration is left out:
// scenario.json's schema and repeat and its limits' start_ns; of
// attack.json everything but the phases' (and their flows') config, and
// there fd_limit, fd_open and fd_cap (the host's file descriptors); in
// every string, the port of a loopback address (127.0.0.1:PORT,
// localhost:PORT, [::1]:PORT), which the lab binds afresh. A JSON file
// that does not decode is digested as text (analyze reports it). A file
// that is absent is left out; one that cannot be read is an error naming
// it.
func ConfigDigests(ctx context.Context, dir string) ([]report.ConfigDigest, error) {
	out := []report.ConfigDigest{}
	if dir == "" {
		return out, nil
	}
	files := slices.Clone(configFiles)
	confs, _ := evidence.Dir(dir).Glob(evidence.NginxDir + "/*/" + evidence.NginxConfFile)
	for _, c := range confs {
		if rel, err := filepath.Rel(dir, c); err == nil {
			files = append(files, filepath.ToSlash(rel))
		}
	}
	for _, name := range files {
		p := evidence.Dir(dir).Path(name)
		raw, err := boundedio.ReadRegular(ctx, p, evidence.MaxDocumentBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, digestConfig(name, raw))
	}
	return out, nil
}

// digestConfig digests one configuration file (ConfigDigests).
func digestConfig(name string, raw []byte) report.ConfigDigest {
	d := report.ConfigDigest{File: name}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if filepath.Ext(name) != ".json" || dec.Decode(&v) != nil {
		d.Digest = sha256Hex(loopbackPortRE.ReplaceAll(raw, []byte("${1}:PORT")))
		return d
	}
	var keys map[string]any
	switch name {
	case evidence.ScenarioFile:
		keys = scenarioConfig(v)
	case evidence.AttackFile:
		keys = attackConfig(v)
	}
	d.Keys = map[string]string{}
	for k, x := range keys {
		d.Keys[k] = sha256Hex(canonical(x))
	}
	d.Digest = sha256Hex(canonical(keys))
	return d
}

// scenarioConfig is scenario.json's object without schema, repeat and
// limits[].start_ns.
func scenarioConfig(v any) map[string]any {
	m, _ := v.(map[string]any)
	out := map[string]any{}
	for k, x := range m {
		switch k {
		case "schema", "repeat":
			continue
		case "limits":
			if ls, ok := x.([]any); ok {
				for _, l := range ls {
					if lm, ok := l.(map[string]any); ok {
						delete(lm, "start_ns")
					}
				}
			}
		}
		out[k] = x
	}
	return out
}

// attackConfig is the config of each phase of attack.json (and of each of
// its flows), keyed by the config's fields ("rate"; "<phase N>.rate" when
// the attack has several phases and configs), without fd_limit, fd_open
// and fd_cap. An attack.json of rlbench.attack/v1 written by `rlbench
// attack` (one bare summary) is its one phase.
func attackConfig(v any) map[string]any {
	m, _ := v.(map[string]any)
	var configs []any
	add := func(s any) {
		sm, _ := s.(map[string]any)
		if c, ok := sm["config"]; ok {
			configs = append(configs, c)
		}
		if fs, ok := sm["flows"].([]any); ok {
			for _, f := range fs {
				if fm, ok := f.(map[string]any); ok && fm["config"] != nil {
					configs = append(configs, fm["config"])
				}
			}
		}
	}
	if ps, ok := m["phases"].([]any); ok {
		for _, p := range ps {
			add(p)
		}
	} else {
		add(m)
	}
	out := map[string]any{}
	for i, c := range configs {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		for k, x := range cm {
			switch k {
			case "fd_limit", "fd_open", "fd_cap":
				continue
			}
			if len(configs) > 1 {
				k = "phase " + strconv.Itoa(i+1) + "." + k
			}
			out[k] = x
		}
	}
	return out
}

// loopbackPortRE matches a loopback address with its port; group 1 is
// the host.
var loopbackPortRE = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):[0-9]+`)

// canonical is v as JSON with sorted keys (encoding/json sorts map keys),
// loopback ports replaced by PORT in every string.
func canonical(v any) []byte {
	b, _ := json.Marshal(unport(v))
	return b
}

func unport(v any) any {
	switch x := v.(type) {
	case string:
		return loopbackPortRE.ReplaceAllString(x, "${1}:PORT")
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = unport(y)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = unport(y)
		}
		return out
	}
	return v
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
