package runner

import (
	"context"
	"errors"
)

// realParts are the real Redis and envoyproxy/ratelimit of one scenario.
type realParts struct{}

// startRealRLS starts Redis and envoyproxy/ratelimit with config; it returns
// the RLS gRPC address or a NOT_RUN reason.
func (r *scenarioRun) startRealRLS(ctx context.Context, config string) (addr, reason string) {
	return "", "rls kind real: not available in this build yet"
}

func (r *scenarioRun) realFault(ctx context.Context, f *FaultPlan) error {
	return errors.New("real parts: no fault support yet")
}

func (r *scenarioRun) snapshotReal(ctx context.Context, label string) string { return "" }

func (r *scenarioRun) finishReal(ctx context.Context) error { return nil }
