package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// quietRedis is go-redis' logger as the gateway sets it: it drops the
// lines go-redis would print to stderr (a refused dial while Redis is
// stopped); the errors reach the gateway through each call instead.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// NewRedisClient returns a go-redis client of the Redis at addr
// ("127.0.0.1:PORT", the scenario's private redis-server), with a pool
// large enough for a lab attack's concurrency. The caller closes it.
// go-redis' process-wide logger is silenced (the package never prints).
func NewRedisClient(addr string) *redis.Client {
	quietOnce.Do(func() { redis.SetLogger(quietRedis{}) })
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 256, MinIdleConns: 4, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
}

// Units of NowFormat.Unit: the unit of the unix time a Lua script is given.
var nowUnits = map[string]int64{"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}

// MaxNowDecimals bounds NowFormat.Decimals.
const MaxNowDecimals = 9

// NowFormat is how a Lua script is given the gateway's clock ({now}): unix
// time in Unit (s, ms, us or ns) with Decimals digits after the point (0:
// an integer), truncated (toward the past).
type NowFormat struct {
	Unit     string
	Decimals int
}

// Validate checks the unit and 0 <= Decimals <= MaxNowDecimals.
func (f NowFormat) Validate() error {
	if _, ok := nowUnits[f.Unit]; !ok {
		return fmt.Errorf("now unit %q: want s, ms, us or ns", f.Unit)
	}
	if f.Decimals < 0 || f.Decimals > MaxNowDecimals {
		return fmt.Errorf("now decimals %d: want 0..%d", f.Decimals, MaxNowDecimals)
	}
	return nil
}

// Format renders t (at or after the unix epoch) as f says, in integer
// arithmetic: 1733475600.123 for unit s with 3 decimals.
func (f NowFormat) Format(t time.Time) string {
	ns := t.UnixNano()
	unit := nowUnits[f.Unit]
	whole, frac := ns/unit, ns%unit
	if f.Decimals == 0 {
		return strconv.FormatInt(whole, 10)
	}
	// frac has digits(unit)-1 digits in the unit; keep Decimals of them.
	digits := len(strconv.FormatInt(unit, 10)) - 1
	fs := ""
	if digits > 0 {
		fs = fmt.Sprintf("%0*d", digits, frac)
	}
	if f.Decimals <= digits {
		fs = fs[:f.Decimals]
	} else {
		fs += strings.Repeat("0", f.Decimals-digits)
	}
	return strconv.FormatInt(whole, 10) + "." + fs
}

// AdmitNonZero is LuaOptions.AdmitWhen's default: the script's answer is an
// integer other than 0.
const AdmitNonZero = "nonzero"

// MaxAdmitWhenBytes bounds an AdmitWhen string.
const MaxAdmitWhenBytes = 256

// admitRule is a parsed AdmitWhen (ParseAdmitWhen).
type admitRule struct {
	nonzero bool   // "" or AdmitNonZero: an integer other than 0
	isInt   bool   // an integer in decimal: the answer is that integer
	n       int64  // the integer of isInt
	s       string // otherwise: the answer is this string (status or bulk reply)
}

// ParseAdmitWhen checks an admit_when: "" or AdmitNonZero (the answer must
// be an integer, admitted when not 0), an integer in decimal ("1", "-1":
// the answer must be an integer, admitted when equal) or a string (the
// answer must be a string, a status or bulk reply, admitted when equal)
// of at most MaxAdmitWhenBytes printable characters without surrounding
// spaces. A script's Lua true reaches Redis' caller as the integer 1 and
// false or nil as a nil reply (https://redis.io/docs/latest/develop/interact/programmability/lua-api/),
// so "true", "false" and "nil" could never match and are refused.
func ParseAdmitWhen(s string) error {
	_, err := parseAdmitWhen(s)
	return err
}

func parseAdmitWhen(s string) (admitRule, error) {
	switch {
	case s == "" || s == AdmitNonZero:
		return admitRule{nonzero: true}, nil
	case s == "true" || s == "false" || s == "nil":
		return admitRule{}, fmt.Errorf("admit_when %q: a script's Lua true reaches the gateway as the integer 1, false and nil as a nil reply: want nonzero, an integer or a string the script returns", s)
	case len(s) > MaxAdmitWhenBytes:
		return admitRule{}, fmt.Errorf("admit_when: %d bytes, want at most %d", len(s), MaxAdmitWhenBytes)
	case strings.TrimSpace(s) != s || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return admitRule{}, fmt.Errorf("admit_when %q: want nonzero, an integer or a string without surrounding spaces or control characters", s)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return admitRule{isInt: true, n: n}, nil
	}
	return admitRule{s: s}, nil
}

// answerType names the Lua type behind a script's answer v as go-redis
// returns it, for errors: "an integer", "a string", "an array (Lua
// table)", "nil (Lua nil or false)".
func answerType(v any) string {
	switch v.(type) {
	case nil:
		return "nil (Lua nil or false)"
	case int64:
		return "an integer"
	case string:
		return "a string"
	case []any:
		return "an array (Lua table)"
	}
	return fmt.Sprintf("a %T", v)
}

// decide applies the rule to the script's answer v: admitted, or an
// error when v is not of the type the rule reads (the limiter did not
// decide).
func (a admitRule) decide(v any) (bool, error) {
	switch {
	case a.nonzero || a.isInt:
		n, ok := v.(int64)
		if !ok {
			want := "nonzero"
			if a.isInt {
				want = strconv.FormatInt(a.n, 10)
			}
			return false, fmt.Errorf("lua: the script answered %s %s, but admit_when %s wants an integer", answerType(v), clipAnswer(v), want)
		}
		if a.nonzero {
			return n != 0, nil
		}
		return n == a.n, nil
	}
	str, ok := v.(string)
	if !ok {
		return false, fmt.Errorf("lua: the script answered %s %s, but admit_when %q wants a string", answerType(v), clipAnswer(v), a.s)
	}
	return str == a.s, nil
}

// clipAnswer is the answer's text (LuaAnswer) quoted and cut to 64 bytes.
func clipAnswer(v any) string {
	t := LuaAnswer(v)
	if len(t) > 64 {
		t = t[:64] + "..."
	}
	return strconv.Quote(t)
}

// LuaOptions configure NewLua.
type LuaOptions struct {
	// Script is the Lua script's text, loaded once with SCRIPT LOAD.
	Script []byte
	// Keys and Args are the templates of EVALSHA's KEYS and ARGV: "{key}"
	// becomes the request's key, "{now}" the gateway's clock (Now), other
	// text is passed as is (Redis receives every argument as a string);
	// no other brace (CheckTemplate).
	Keys, Args []string
	// Now formats {now}.
	Now NowFormat
	// AdmitWhen is ParseAdmitWhen's rule: "" or AdmitNonZero (an integer
	// other than 0), an integer in decimal, or a string the answer must
	// equal. An answer of another type is a limiter error.
	AdmitWhen string
}

// Lua runs a user's Lua script on Redis per request with EVALSHA, as a
// gateway's distributed limiter does (https://redis.io/docs/latest/commands/evalsha/).
type Lua struct {
	rdb   *redis.Client
	src   string
	sha   string
	opts  LuaOptions
	admit admitRule
}

// NewLua loads the script into the Redis of rdb (SCRIPT LOAD) and returns
// the limiter; a script Redis refuses (a syntax error) is an error.
func NewLua(ctx context.Context, rdb *redis.Client, opts LuaOptions) (*Lua, error) {
	if err := opts.Now.Validate(); err != nil {
		return nil, fmt.Errorf("lua: %w", err)
	}
	for _, group := range [][]string{opts.Keys, opts.Args} {
		for _, t := range group {
			if err := CheckTemplate(t); err != nil {
				return nil, fmt.Errorf("lua: %w", err)
			}
		}
	}
	admit, err := parseAdmitWhen(opts.AdmitWhen)
	if err != nil {
		return nil, fmt.Errorf("lua: %w", err)
	}
	l := &Lua{rdb: rdb, src: string(opts.Script), opts: opts, admit: admit}
	sha, err := rdb.ScriptLoad(ctx, l.src).Result()
	if err != nil {
		return nil, fmt.Errorf("lua: SCRIPT LOAD: %w", err)
	}
	l.sha = sha
	return l, nil
}

// SHA is the script's SHA1 digest (EVALSHA's first argument).
func (l *Lua) SHA() string { return l.sha }

// Placeholders of the KEYS and ARGV templates (LuaOptions.Keys, Args).
const (
	PlaceholderKey = "{key}"
	PlaceholderNow = "{now}"
)

// CheckTemplate checks a KEYS or ARGV template: its only braces are those
// of the placeholders {key} and {now}; any other {...} ({{key}}, {user}),
// a { without its } ({now) or a } without its { ({now}}) is an error
// naming the byte offset, so that a mistyped placeholder is never sent to
// the script as literal text.
func CheckTemplate(t string) error {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '{':
			if strings.HasPrefix(t[i:], PlaceholderKey) || strings.HasPrefix(t[i:], PlaceholderNow) {
				i += len(PlaceholderKey) - 1
				continue
			}
			end := strings.IndexByte(t[i+1:], '}')
			if end < 0 {
				return fmt.Errorf("template %q: the { at byte %d has no }: only {key} and {now} are placeholders", t, i)
			}
			return fmt.Errorf("template %q: %q at byte %d is not a placeholder: only {key} and {now} are", t, t[i:i+end+2], i)
		case '}':
			return fmt.Errorf("template %q: the } at byte %d has no {: only {key} and {now} are placeholders", t, i)
		}
	}
	return nil
}

// UsesNow reports whether template t (CheckTemplate) contains {now}.
func UsesNow(t string) bool { return strings.Contains(t, PlaceholderNow) }

// expand returns the templates with {key} and {now} replaced.
func expand(templates []string, key, now string) []string {
	out := make([]string, len(templates))
	for i, t := range templates {
		if strings.Contains(t, "{") {
			t = strings.ReplaceAll(strings.ReplaceAll(t, PlaceholderKey, key), PlaceholderNow, now)
		}
		out[i] = t
	}
	return out
}

// Allow runs EVALSHA with the request's KEYS and ARGV; a NOSCRIPT answer
// (Redis lost its script cache) loads the script again and retries once.
// An error reply, or an answer not of the type AdmitWhen reads (a string,
// nil or a table where an integer is wanted), is an error naming it: the
// script did not decide.
func (l *Lua) Allow(ctx context.Context, key string, now time.Time) (Decision, error) {
	ns := l.opts.Now.Format(now)
	keys := expand(l.opts.Keys, key, ns)
	argv := expand(l.opts.Args, key, ns)
	args := make([]any, len(argv))
	for i, a := range argv {
		args[i] = a
	}
	v, err := l.rdb.EvalSha(ctx, l.sha, keys, args...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if _, lerr := l.rdb.ScriptLoad(ctx, l.src).Result(); lerr != nil {
			return Decision{}, fmt.Errorf("lua: SCRIPT LOAD: %w", lerr)
		}
		v, err = l.rdb.EvalSha(ctx, l.sha, keys, args...).Result()
	}
	if errors.Is(err, redis.Nil) { // the script returned nil or false
		v, err = nil, nil
	}
	if err != nil {
		return Decision{}, fmt.Errorf("lua: EVALSHA: %w", err)
	}
	ok, err := l.admit.decide(v)
	if err != nil {
		return Decision{}, err
	}
	return Decision{Allowed: ok, Answer: LuaAnswer(v)}, nil
}

// LuaAnswer is a script's answer as text: an integer in decimal, a status
// or bulk string as is, an array its first element's text, nil (Lua false
// or nil) "nil".
func LuaAnswer(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	case []any:
		if len(x) == 0 {
			return "nil"
		}
		return LuaAnswer(x[0])
	}
	return fmt.Sprint(v)
}

// GCRA is the generic cell rate algorithm on Redis through
// github.com/go-redis/redis_rate/v10 (Limiter.Allow with Limit{Rate, Burst,
// Period}: emission interval T = Period/Rate, tolerance Burst x T; the
// library's Lua script keeps each key's theoretical arrival time in Redis
// and reads Redis' own clock, TIME, so the gateway's now is not used).
type GCRA struct {
	l     *redis_rate.Limiter
	limit redis_rate.Limit
}

// NewGCRA returns the limiter of rate requests per period with burst on
// the Redis of rdb; rate and burst >= 1, period > 0.
func NewGCRA(rdb *redis.Client, rate, burst int, period time.Duration) (*GCRA, error) {
	if rate < 1 || burst < 1 || period <= 0 {
		return nil, fmt.Errorf("gcra: rate %d, burst %d, period %s: want rate >= 1, burst >= 1, period > 0", rate, burst, period)
	}
	return &GCRA{l: redis_rate.NewLimiter(rdb), limit: redis_rate.Limit{Rate: rate, Burst: burst, Period: period}}, nil
}

// Allow asks redis_rate for one request of key.
func (g *GCRA) Allow(ctx context.Context, key string, _ time.Time) (Decision, error) {
	res, err := g.l.Allow(ctx, key, g.limit)
	if err != nil {
		return Decision{}, fmt.Errorf("gcra: %w", err)
	}
	return Decision{Allowed: res.Allowed > 0, Answer: strconv.Itoa(res.Allowed)}, nil
}
