//go:build !linux

package attack

import (
	"errors"
	"time"
)

// alarm is Linux's timerfd(2) wait; elsewhere there is no relief.
type alarm struct{}

func newAlarm() (*alarm, error)       { return nil, errors.New("no timerfd") }
func (a *alarm) until(time.Time) bool { return false }
func (a *alarm) interrupt()           {}
func (a *alarm) close()               {}
