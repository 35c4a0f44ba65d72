package decl

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlbench/rlbench/model"
)

// Legacy is one entry of the previous release's scenario.json `limits:`
// (evidence.LimitSpec, field for field, so that one converts to the other):
// a token bucket (the lab proxy's Envoy local rate limit, one per proxy
// process unless Buckets is 1) or a fixed window (an envoyproxy/ratelimit
// rule counting every request under one key). Kind, WindowStart and Refill
// take the values of evidence's LimitTokenBucket / LimitFixedWindow,
// WindowAligned / WindowFirstHit and RefillTimer / RefillContinuous.
type Legacy struct {
	Kind          string
	Buckets       int
	MaxTokens     int
	TokensPerFill int
	FillInterval  int64 // ns
	Limit         int
	Unit          string
	WindowStart   string
	StartNs       int64
	Refill        string
}

// Values of Legacy.Kind and Legacy.WindowStart (evidence.LimitSpec's).
const (
	legacyTokenBucket = "token_bucket"
	legacyFixedWindow = "fixed_window"
	legacyFirstHit    = "first-hit"
)

// Spec translates the entry. A token bucket is an envoy_local bucket: with
// Refill RefillContinuous Envoy's continuous refill (EnvoyContinuousVersion),
// otherwise (RefillTimer, or "" in files older than the field) a timer from
// StartNs (EnvoyTimerVersion; StartNs 0: unknown phase); TokensPerFill below
// 1 is 1, a negative MaxTokens 0. A fixed window is a fixed_window of Limit
// per Unit (lower-cased), epoch-aligned, or from the first hit when
// WindowStart is "first-hit". Unlike the other translations it does not
// validate the values: a bad one of an old file is reported by model.New
// where the limiter is checked. An unknown Kind is an error.
func (l Legacy) Spec() (model.Spec, error) {
	switch l.Kind {
	case legacyTokenBucket:
		tpf := uint32(max(l.TokensPerFill, 1))
		s := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: EnvoyContinuousVersion, MaxTokens: uint32(max(l.MaxTokens, 0)),
			TokensPerFill: &tpf, FillInterval: model.Duration(l.FillInterval)}
		if l.Refill != RefillContinuous {
			s.EnvoyVersion = EnvoyTimerVersion
			if l.StartNs > 0 {
				s.TimerStart = time.Unix(0, l.StartNs).UTC().Format(time.RFC3339Nano)
			}
		}
		return s, nil
	case legacyFixedWindow:
		s := model.Spec{Kind: model.KindFixedWindow, Limit: uint64(max(l.Limit, 0)), Unit: strings.ToLower(l.Unit), Align: model.AlignEpoch}
		if l.WindowStart == legacyFirstHit {
			s.Align = model.AlignFirstHit
		}
		return s, nil
	}
	return model.Spec{}, fmt.Errorf("limits: unknown kind %q (want %s or %s)", l.Kind, legacyTokenBucket, legacyFixedWindow)
}
