package model

import (
	"reflect"
	"testing"
)

// TestNoFindingIDs: Options.NoFindingIDs leaves every finding's IDs nil and
// changes nothing else of the result (a tight bucket's findings, bounds,
// violations and uncertainty), and without it the findings name requests.
func TestNoFindingIDs(t *testing.T) {
	m := MustNew(Spec{Kind: KindTokenBucket, Capacity: 100, RatePerSec: 400_000})
	evs := labTightEvents(20_000)
	full, err := Check(m, evs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := Check(m, evs, Options{NoFindingIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, w := range full.Windows {
		named += len(w.IDs)
	}
	if len(full.Windows) == 0 || named == 0 {
		t.Fatalf("not tight: %d findings naming %d requests", len(full.Windows), named)
	}
	for i, w := range bare.Windows {
		if w.IDs != nil {
			t.Errorf("finding %d names %d requests with NoFindingIDs", i, len(w.IDs))
		}
	}
	for i := range full.Windows {
		full.Windows[i].IDs = nil
	}
	if !reflect.DeepEqual(full, bare) {
		t.Errorf("results differ beyond the findings' IDs:\nfull %+v\nbare %+v", full.Windows, bare.Windows)
	}
}

// TestNoWidths: Options.NoWidths leaves the widths of the uncertainty zero
// and changes nothing else of the result.
func TestNoWidths(t *testing.T) {
	m := MustNew(Spec{Kind: KindTokenBucket, Capacity: 100, RatePerSec: 400_000})
	evs := labTightEvents(20_000)
	full, err := Check(m, evs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := Check(m, evs, Options{NoWidths: true})
	if err != nil {
		t.Fatal(err)
	}
	u := bare.Uncertainty
	if u.MaxWidth != 0 || u.MedianWidth != 0 || u.P99Width != 0 {
		t.Errorf("widths with NoWidths: %v %v %v", u.MaxWidth, u.MedianWidth, u.P99Width)
	}
	if full.Uncertainty.MaxWidth == 0 || full.Uncertainty.MedianWidth == 0 {
		t.Fatalf("no widths without NoWidths: %+v", full.Uncertainty)
	}
	full.Uncertainty.MaxWidth, full.Uncertainty.MedianWidth, full.Uncertainty.P99Width = 0, 0, 0
	if !reflect.DeepEqual(full, bare) {
		t.Errorf("results differ beyond the widths:\nfull %+v\nbare %+v", full.Uncertainty, bare.Uncertainty)
	}
}
