package evidence

import (
	"fmt"
	"strings"
)

// IDHeader is the request header that carries each request's ID from the
// attack to the backend's receipt: attack.Options.IDHeader defaults to it and
// the lab backend reads it (AttackConfig.IDHeader records the one used).
const IDHeader = "X-Rlbench-Id"

// ReceiptsPath is the backend's HTTP path that returns every receipt line
// recorded so far (JSON Lines, content-type application/x-ndjson), in
// receive order, served from its receipts file (Range requests work):
// collect/receipts fetches it, the lab backend serves it.
const ReceiptsPath = "/_rlbench/receipts"

// MaxNameBytes bounds a name checked by CheckName.
const MaxNameBytes = 100

// CheckName is the one rule for every name that becomes part of a path in
// an evidence directory: a proxy (stats/<proxy>.<label>.json,
// accesslog/<proxy>.log, nginx/<proxy>/), a snapshot label
// (rls/metrics.<label>.json, stub_status.<label>.json), an attack target
// name (the proxy whose stats analyze joins), a flow. A name is 1 to
// MaxNameBytes ASCII letters, digits, '-' and '_': no dot (Load splits
// <proxy>.<label> at the first one, and ".." climbs out of the directory),
// no '/' or '\', no NUL or other control character, nothing that makes the
// path absolute. what says which name it is ("--proxy", "external.proxies[0].name")
// and starts the error, which quotes the name.
//
// Scenario names are labels, not path names: their directory is their slug
// (internal/runner), which is made of such characters only.
func CheckName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s: empty name: want a simple name (letters, digits, - and _)", what)
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf("%s %.20q...: longer than %d bytes: want a simple name (letters, digits, - and _)", what, name, MaxNameBytes)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("%s %q must be a simple name (letters, digits, - and _; no dots, separators or control characters)", what, name)
		}
	}
	return nil
}

// The environment variables that name the node whose clock a client reads
// when its host name is not that node's (issue 24): on Kubernetes each pod
// has its own host name (the pod's name) while the pods of one node share
// its clock; under Slurm, slurmd sets SLURMD_NODENAME for every task
// (Slurm's sbatch(1) "OUTPUT ENVIRONMENT VARIABLES").
const (
	// NodeNameEnv is set by a pod spec from the downward API
	// (env valueFrom fieldRef fieldPath: spec.nodeName; Kubernetes docs,
	// "Expose Pod Information to Containers Through Environment Variables").
	NodeNameEnv = "RLBENCH_NODE_NAME"
	// SlurmNodeEnv is the node a Slurm task runs on.
	SlurmNodeEnv = "SLURMD_NODENAME"
)

// NodeName is the clock's node name from the environment read by getenv
// (os.Getenv): NodeNameEnv, else SlurmNodeEnv, trimmed; "" when neither is
// set (the clock is the host's: AttackSummary.Host).
func NodeName(getenv func(string) string) string {
	for _, k := range []string{NodeNameEnv, SlurmNodeEnv} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	return ""
}
