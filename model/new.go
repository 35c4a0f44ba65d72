package model

import (
	"fmt"
	"time"
)

// New validates spec and builds its model. Errors are *FieldError naming the
// offending field.
func New(spec Spec) (Model, error) {
	s, err := spec.normalized()
	if err != nil {
		return nil, err
	}
	switch s.Kind {
	case KindTokenBucket:
		return &tokenBucketModel{spec: s}, nil
	case KindEnvoyLocal:
		return newEnvoyModel(s)
	case KindFixedWindow:
		return &fixedWindowModel{spec: s, width: UnitSeconds(s.Unit) * int64(time.Second)}, nil
	case KindNginxLimitReq:
		return newNginxModel(s)
	case KindSlidingLog:
		return &slidingLogModel{spec: s}, nil
	case KindSlidingCounter:
		if s.Align == AlignFreqCtr {
			return &freqCtrModel{spec: s}, nil
		}
		return &slidingCounterModel{spec: s}, nil
	case KindGCRA:
		return &gcraModel{spec: s}, nil
	}
	return nil, fmt.Errorf("limiter spec: kind %q has no model", s.Kind)
}

// MustNew is New for specs known to be valid (tests, examples); it panics
// on error.
func MustNew(spec Spec) Model {
	m, err := New(spec)
	if err != nil {
		panic(err)
	}
	return m
}
