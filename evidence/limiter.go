package evidence

import "github.com/rlbench/rlbench/analyze/model"

// Limiter stages (Limiter.Stage), in the order a request meets them.
const (
	// StageLocal is a limiter inside the proxy that decides on its own:
	// Envoy's local_ratelimit filter, nginx limit_req, a gateway's token bucket.
	StageLocal = "local"
	// StageGlobal is a rate limit service the proxy asks (Envoy's ratelimit
	// filter calling envoyproxy/ratelimit or the lab RLS).
	StageGlobal = "global"
)

// Limiter keys (Limiter.Key): what one instance of the limiter's state is
// shared by.
const (
	// KeyTarget: one instance per attack target, i.e. per proxy process.
	KeyTarget = "target"
	// KeyShared: one instance for every request of the limiter's targets.
	KeyShared = "shared"
)

// Limiter declares one rate limiter on the requests' path for the limiter
// models (analyze/model): which targets' requests it sees, what its
// instances are keyed by, and its semantic, a model.Spec:
//
//	{"name":"nginx-a limit_req","stage":"local","targets":["nginx-a"],"key":"target",
//	 "model":{"kind":"nginx_limit_req","zones":[{"name":"rl","rate":"100r/s","burst":200}]}}
type Limiter struct {
	// Name names the limiter in the report; unique in a scenario.
	Name string `json:"name"`
	// Stage is StageLocal or StageGlobal.
	Stage string `json:"stage"`
	// Targets are the attack targets whose requests meet this limiter; empty: every target.
	Targets []string `json:"targets,omitempty"`
	// Key is KeyTarget or KeyShared.
	Key string `json:"key"`
	// Model is the limiter's semantic.
	Model *model.Spec `json:"model,omitempty"`
}
