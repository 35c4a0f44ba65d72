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

// LuaOptions configure NewLua.
type LuaOptions struct {
	// Script is the Lua script's text, loaded once with SCRIPT LOAD.
	Script []byte
	// Keys and Args are the templates of EVALSHA's KEYS and ARGV: "{key}"
	// becomes the request's key, "{now}" the gateway's clock (Now), other
	// text is passed as is (Redis receives every argument as a string).
	Keys, Args []string
	// Now formats {now}.
	Now NowFormat
	// AdmitWhen admits a request when the script's answer, as text
	// (LuaAnswer), equals it; "" or AdmitNonZero: an integer other than 0.
	AdmitWhen string
}

// Lua runs a user's Lua script on Redis per request with EVALSHA, as a
// gateway's distributed limiter does (https://redis.io/docs/latest/commands/evalsha/).
type Lua struct {
	rdb  *redis.Client
	src  string
	sha  string
	opts LuaOptions
}

// NewLua loads the script into the Redis of rdb (SCRIPT LOAD) and returns
// the limiter; a script Redis refuses (a syntax error) is an error.
func NewLua(ctx context.Context, rdb *redis.Client, opts LuaOptions) (*Lua, error) {
	if err := opts.Now.Validate(); err != nil {
		return nil, fmt.Errorf("lua: %w", err)
	}
	l := &Lua{rdb: rdb, src: string(opts.Script), opts: opts}
	sha, err := rdb.ScriptLoad(ctx, l.src).Result()
	if err != nil {
		return nil, fmt.Errorf("lua: SCRIPT LOAD: %w", err)
	}
	l.sha = sha
	return l, nil
}

// SHA is the script's SHA1 digest (EVALSHA's first argument).
func (l *Lua) SHA() string { return l.sha }

// expand returns the templates with {key} and {now} replaced.
func expand(templates []string, key, now string) []string {
	out := make([]string, len(templates))
	for i, t := range templates {
		if strings.Contains(t, "{") {
			t = strings.ReplaceAll(strings.ReplaceAll(t, "{key}", key), "{now}", now)
		}
		out[i] = t
	}
	return out
}

// Allow runs EVALSHA with the request's KEYS and ARGV; a NOSCRIPT answer
// (Redis lost its script cache) loads the script again and retries once.
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
	if err != nil && !errors.Is(err, redis.Nil) {
		return Decision{}, fmt.Errorf("lua: EVALSHA: %w", err)
	}
	ans := LuaAnswer(v)
	return Decision{Allowed: l.admits(v, ans), Answer: ans}, nil
}

// admits applies AdmitWhen to the answer v (text ans).
func (l *Lua) admits(v any, ans string) bool {
	switch l.opts.AdmitWhen {
	case "", AdmitNonZero:
		if a, ok := v.([]any); ok && len(a) > 0 {
			v = a[0]
		}
		n, ok := v.(int64)
		return ok && n != 0
	}
	return ans == l.opts.AdmitWhen
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
