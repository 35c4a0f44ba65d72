package evidence

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/internal/jsonline"
)

// attackSchemaError says attack.json (or one of its phases, at path)
// carries a schema ID this release does not read: a later release's
// (rlbench.attack/v9) or another file's. An empty ID is accepted, as
// before schemas were checked (the shape tells).
func checkAttackSchema(path, id string, want ...string) error {
	if id == "" || slices.Contains(want, id) {
		return nil
	}
	return fmt.Errorf("%s: %q is not a schema this release reads (want %s): written by a later release, or not an attack summary",
		path, id, strings.Join(quoteAll(want), " or "))
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}

// checkCodeKeys checks codes_by_target's keys at path: each code is a
// status code as the attack writes it (strconv.Itoa of the response's
// code, 0..999: HTTP/1.1 status codes are three digits, RFC 9112 section
// 4; "0" is no response). It returns the path of the first bad key, in
// the scanKeys form (dots), with the error.
func checkCodeKeys(path string, m map[string]map[string]int) (string, error) {
	for _, t := range slices.Sorted(maps.Keys(m)) {
		for _, code := range slices.Sorted(maps.Keys(m[t])) {
			if n, err := strconv.Atoi(code); err != nil || n < 0 || n > 999 || strconv.Itoa(n) != code {
				return path + "." + t + "." + code, fmt.Errorf("%s[%q][%q]: not a status code (want 0..999; 0: no response)", path, t, code)
			}
		}
	}
	return "", nil
}

// check checks what the decoder lets through in a decoded attack.json b:
// the phases' schema IDs (AttackSummarySchema), their and their flows'
// config.rate (ParseAttackRate) and the codes of codes_by_target. Its errors name the line (scanKeys).
func (a *Attack) check(b []byte) error {
	fail := func(path string, err error) error { return atKeyLine(b, path, err) }
	for i := range a.Phases {
		p := &a.Phases[i]
		path := fmt.Sprintf("phases[%d]", i)
		if err := checkAttackSchema(path+".schema", p.Schema, AttackSummarySchema); err != nil {
			return fail(path+".schema", err)
		}
		if err := checkRate(path+".config.rate", p.Config.Rate); err != nil {
			return fail(path+".config.rate", err)
		}
		if kp, err := checkCodeKeys(path+".codes_by_target", p.CodesByTarget); err != nil {
			return fail(kp, err)
		}
		for j := range p.Flows {
			fp := fmt.Sprintf("%s.flows[%d]", path, j)
			if err := checkRate(fp+".config.rate", p.Flows[j].Config.Rate); err != nil {
				return fail(fp+".config.rate", err)
			}
			if kp, err := checkCodeKeys(fp+".codes_by_target", p.Flows[j].CodesByTarget); err != nil {
				return fail(kp, err)
			}
		}
	}
	return nil
}

// atKeyLine prefixes err with "line N: ", N the line of key path
// ("phases[0].sent", jsonline.PathLine) in b, when it is found.
func atKeyLine(b []byte, path string, err error) error {
	if line := jsonline.PathLine(b, path); line > 0 {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}

// countErrorAt prefixes a *CountError with the line of its first field;
// bare is the prefix of the fields that are at the top of b (a bare
// summary's "phases[0].").
func countErrorAt(b []byte, err error, bare string) error {
	var ce *CountError
	if !errors.As(err, &ce) || len(ce.Fields) == 0 {
		return err
	}
	p := keyPath(ce.Fields[0])
	if bare != "" {
		p = strings.TrimPrefix(p, bare)
	}
	return atKeyLine(b, p, err)
}

// keyPath turns a CountError field ("phases[0].codes_by_target[\"a\"][\"200\"] = -3: negative")
// into its scanKeys path ("phases[0].codes_by_target.a.200").
func keyPath(field string) string {
	p, _, _ := strings.Cut(field, " ")
	var out strings.Builder
	for p != "" {
		i := strings.Index(p, `["`)
		if i < 0 {
			out.WriteString(p)
			break
		}
		out.WriteString(p[:i])
		rest := p[i+1:]
		j := strings.Index(rest, `"]`)
		if j < 0 {
			out.WriteString(p[i:])
			break
		}
		s, err := strconv.Unquote(rest[:j+1])
		if err != nil {
			out.WriteString(p[i:])
			break
		}
		out.WriteString("." + s)
		p = rest[j+2:]
	}
	return out.String()
}

// ParseAttackRate parses an attack's rate (AttackConfig.Rate, `rlbench
// attack --rate`, a plan's attack.rate): "N/DURATION" ("100/1s",
// "10/100ms"; a unit without a number means one of it, "60/m" = 60 per
// minute) is N requests per DURATION, "N" is per second, and "", "0" and
// "infinity" are no pacing (0 and 0: every ID as soon as a worker is free).
// N must be a positive integer and DURATION a positive Go duration
// (time.ParseDuration); anything else is an error naming the input.
func ParseAttackRate(s string) (freq int, per time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" || s == "infinity" {
		return 0, 0, nil
	}
	f, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(f)
	if err != nil || n <= 0 {
		return 0, 0, fmt.Errorf("rate %q: want N/duration such as 100/1s", s)
	}
	d := time.Second
	if ok {
		if !strings.ContainsAny(p, "0123456789") {
			p = "1" + p
		}
		if d, err = time.ParseDuration(p); err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("rate %q: bad duration %q", s, p)
		}
	}
	return n, d, nil
}

// checkRate checks an attack configuration's rate at path (ParseAttackRate).
func checkRate(path, rate string) error {
	if _, _, err := ParseAttackRate(rate); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
