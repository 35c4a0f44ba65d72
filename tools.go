//go:build tools

// Package tools pins the modules rlbench depends on so that `go mod tidy`
// keeps them while the packages that use them are being written.
package tools

import (
	_ "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	_ "github.com/olekukonko/tablewriter"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "github.com/tsenart/vegeta/v12/lib"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/encoding/protojson"
	_ "sigs.k8s.io/yaml"
)
