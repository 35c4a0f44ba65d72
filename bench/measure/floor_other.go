//go:build !linux

package main

import "errors"

func sleepFloor([]string) error { return errors.New("floor: Linux only (clock_nanosleep)") }

func burstFloor([]string) error { return errors.New("burstfloor: Linux only") }
