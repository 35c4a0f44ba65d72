// Package examples embeds the example plans so that `rlbench demo` runs the
// same file a user can read and edit.
package examples

import _ "embed"

// DemoPlan is examples/demo/plan.yaml.
//
//go:embed demo/plan.yaml
var DemoPlan []byte
