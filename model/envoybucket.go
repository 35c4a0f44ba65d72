package model

import (
	"fmt"
	"time"
)

// EnvoyMinFillInterval is Envoy's lower bound on a local rate limit token
// bucket's fill_interval: LocalRateLimiterImpl refuses anything shorter
// (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc:
// "local rate limit token bucket fill timer must be >= 50ms"; the network
// filter's local_rate_limit.proto documents the same floor).
const EnvoyMinFillInterval = 50 * time.Millisecond

// BucketIssue is one finding of CheckEnvoyBucket: the token bucket Field
// ("max_tokens", "tokens_per_fill" or "fill_interval", relative to the
// bucket), whether Envoy Refuses the configuration (an error) or accepts
// a bucket that cannot behave as declared (a warning), and the Problem in
// words. Error is "<Field>: <Problem>".
type BucketIssue struct {
	Field   string
	Refused bool
	Problem string
}

func (i BucketIssue) Error() string { return i.Field + ": " + i.Problem }

// CheckEnvoyBucket checks one Envoy token bucket (envoy.type.v3.TokenBucket
// of a local rate limit filter or of one of its descriptors) as Envoy
// validates it, and is the one place rlbench does (lint, the lab proxy,
// the lab and plan validation and the model's envoy_local Spec all call
// it). tokensPerFill nil means the field is absent (Envoy's default 1).
// Findings come in field order:
//
//   - max_tokens 0 is refused: api/envoy/type/v3/token_bucket.proto has
//     max_tokens [(validate.rules).uint32 = {gt: 0}]. (Envoy releases that
//     relaxed the rule to gte 0 take 0 as a bucket that is always empty and
//     rejects every request; rlbench's lab and models refuse it either way.)
//   - tokens_per_fill 0 is refused: tokens_per_fill
//     [(validate.rules).uint32 = {gt: 0}], default 1.
//   - fill_interval is required and > 0 ([(validate.rules).duration =
//     {required: true, gt {}}]), and below EnvoyMinFillInterval the
//     filter refuses it (local_ratelimit_impl.cc).
//   - tokens_per_fill above max_tokens is accepted but a warning: the
//     bucket never holds more than max_tokens (the fill is capped,
//     std::min(max_tokens, tokens + tokens_per_fill)), so a whole fill can
//     never be held and the declared rate is not the one enforced.
func CheckEnvoyBucket(maxTokens uint32, tokensPerFill *uint32, fillInterval time.Duration) []BucketIssue {
	var out []BucketIssue
	if maxTokens == 0 {
		out = append(out, BucketIssue{Field: "max_tokens", Refused: true,
			Problem: "must be > 0 (Envoy's token_bucket.proto: max_tokens uint32 gt 0; a release that allows 0 rejects every request with it)"})
	}
	if tokensPerFill != nil && *tokensPerFill == 0 {
		out = append(out, BucketIssue{Field: "tokens_per_fill", Refused: true,
			Problem: "must be > 0 (Envoy's token_bucket.proto: tokens_per_fill uint32 gt 0; absent means 1)"})
	}
	switch {
	case fillInterval <= 0:
		out = append(out, BucketIssue{Field: "fill_interval", Refused: true,
			Problem: fmt.Sprintf("%v: must be > 0 (Envoy's token_bucket.proto: fill_interval required, gt 0)", fillInterval)})
	case fillInterval < EnvoyMinFillInterval:
		out = append(out, BucketIssue{Field: "fill_interval", Refused: true,
			Problem: fmt.Sprintf("%v is below Envoy's minimum %v (local rate limit token bucket fill timer must be >= 50ms)", fillInterval, EnvoyMinFillInterval)})
	}
	if tokensPerFill != nil && maxTokens > 0 && *tokensPerFill > maxTokens {
		out = append(out, BucketIssue{Field: "tokens_per_fill",
			Problem: fmt.Sprintf("%d is above max_tokens %d: the bucket never holds more than max_tokens, so it can never hold a whole fill (Envoy caps each fill at max_tokens)", *tokensPerFill, maxTokens)})
	}
	return out
}

// refusedBucket returns CheckEnvoyBucket's first refusal as a *FieldError
// with the field under prefix ("" or "descriptors[i]."), or nil.
func refusedBucket(prefix string, maxTokens uint32, tokensPerFill *uint32, fillInterval time.Duration) error {
	for _, i := range CheckEnvoyBucket(maxTokens, tokensPerFill, fillInterval) {
		if i.Refused {
			return fieldErr(prefix+i.Field, "%s", i.Problem)
		}
	}
	return nil
}
