package rls

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// RLConfigEntry is one line of the RLS debug-port /rlconfig dump
// (config/config_impl.go dump(): `%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t`;
// quota_mode is absent before 2026-01).
type RLConfigEntry struct {
	// Key is "<domain>.<key>_<value>[.…]", the stat key.
	Key             string `json:"key"`
	Unit            string `json:"unit"`
	RequestsPerUnit uint32 `json:"requests_per_unit"`
	ShadowMode      bool   `json:"shadow_mode"`
	QuotaMode       bool   `json:"quota_mode"`
}

var reRLConfig = regexp.MustCompile(`^(\S+): unit=(\w+) requests_per_unit=(\d+)(?:, shadow_mode: (true|false))?(?:, quota_mode: (true|false))?\s*$`)

// ParseRLConfig parses a /rlconfig dump. An `unlimited` rule shows as
// unit=UNKNOWN requests_per_unit=0. A line that does not match is an error
// naming name and the line.
func ParseRLConfig(r io.Reader, name string) ([]RLConfigEntry, error) {
	var out []RLConfigEntry
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		m := reRLConfig.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: not an /rlconfig line", name, n)
		}
		v, err := strconv.ParseUint(m[3], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: requests_per_unit: %w", name, n, err)
		}
		out = append(out, RLConfigEntry{Key: m[1], Unit: m[2], RequestsPerUnit: uint32(v),
			ShadowMode: m[4] == "true", QuotaMode: m[5] == "true"})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// RedisKey is one RLS counter key in Redis: Value is the fixed-window count
// (INCRBY result), WindowStart the key's numeric suffix (unix s).
type RedisKey struct {
	Key         string `json:"key"`
	Value       int64  `json:"value"`
	WindowStart int64  `json:"window_start"`
	TTLSeconds  int64  `json:"ttl_s"`
	// PTTLMs is the PTTL in ms, -1 when the capture lacks it.
	PTTLMs int64 `json:"pttl_ms"`
}

// RedisSnapshot is a labelled set of keys.
type RedisSnapshot struct {
	Label string `json:"label,omitempty"`
	// UnixS is the capture time from the `# label=… unix=N` header, 0 if absent.
	UnixS int64      `json:"unix_s,omitempty"`
	Keys  []RedisKey `json:"keys"`
}

// ParseRedisKeys parses Redis key captures in two layouts:
//   - `key value ttl=N` lines (one unlabelled snapshot);
//   - TSV `key\tvalue\tttl_s\tpttl_ms` lines, each snapshot introduced by a
//     `# label=<name> utc=<time> unix=<s>` comment (other `#` lines skipped).
//
// A malformed line is an error naming name and the line.
func ParseRedisKeys(r io.Reader, name string) ([]RedisSnapshot, error) {
	var out []RedisSnapshot
	cur := func() *RedisSnapshot {
		if len(out) == 0 {
			out = append(out, RedisSnapshot{})
		}
		return &out[len(out)-1]
	}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, "#") {
			if strings.Contains(s, "label=") {
				snap := RedisSnapshot{}
				for _, f := range strings.Fields(strings.TrimPrefix(s, "#")) {
					k, v, _ := strings.Cut(f, "=")
					switch k {
					case "label":
						snap.Label = v
					case "unix":
						snap.UnixS, _ = strconv.ParseInt(v, 10, 64)
					}
				}
				out = append(out, snap)
			}
			continue
		}
		var f []string
		if strings.Contains(s, "\t") {
			f = strings.Split(s, "\t")
		} else {
			f = strings.Fields(s)
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: want key, value, ttl", name, n)
		}
		k := RedisKey{Key: f[0], PTTLMs: -1}
		var err error
		if k.Value, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return nil, fmt.Errorf("%s:%d: value %q: %w", name, n, f[1], err)
		}
		if k.TTLSeconds, err = strconv.ParseInt(strings.TrimPrefix(f[2], "ttl="), 10, 64); err != nil {
			return nil, fmt.Errorf("%s:%d: ttl %q: %w", name, n, f[2], err)
		}
		if len(f) > 3 {
			if k.PTTLMs, err = strconv.ParseInt(f[3], 10, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: pttl %q: %w", name, n, f[3], err)
			}
		}
		if m := reWindow.FindStringSubmatch(k.Key); m != nil {
			k.WindowStart, _ = strconv.ParseInt(m[1], 10, 64)
		}
		c := cur()
		c.Keys = append(c.Keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// WindowStart returns the numeric suffix of an RLS cache key (the window
// start, unix s: limiter/cache_key.go appends (now/unit_s)*unit_s after the
// last '_') and whether there is one.
func WindowStart(key string) (int64, bool) {
	m := reWindow.FindStringSubmatch(key)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	return v, err == nil
}
