// Package examples embeds the example plans so that `rlbench demo` runs the
// same file a user can read and edit.
package examples

import _ "embed"

// DemoPlanFile is the demo plan's path in the repository, the name
// `rlbench demo` gives DemoPlan in its errors.
const DemoPlanFile = "examples/demo/plan.yaml"

// DemoPlan is the content of DemoPlanFile.
//
//go:embed demo/plan.yaml
var DemoPlan []byte
