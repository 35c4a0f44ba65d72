package evidence

import "fmt"

// MaxRunScenarios is the most scenario directories one evidence directory
// holds: 10,000, the most scenario runs one plan has (internal/runner.MaxRuns
// is this constant), so rlbench never writes a manifest.json over it. Load
// refuses a manifest.json whose scenario_dirs (or scenarios) list more, and
// a directory under which it finds more scenario directories, with an error
// naming the file or directory and the cap (CheckRunScenarios): every
// scenario, present or missing, becomes a report of its own held in memory
// (a few kilobytes each), so the bound keeps analyze of any evidence
// directory under a few hundred megabytes.
const MaxRunScenarios = 10_000

// MaxScenarioProxies is the most proxies one scenario names: 10,000 (the
// embedded lab starts at most 26; a real fleet under test is tens).
// DecodeScenario refuses a scenario.json whose proxies list more, and Load
// reads the stats snapshots of at most that many proxies (those named
// plus those with a stats/<proxy>.<label>.json), each a Problem naming the
// file and the cap beyond it: every proxy costs two file reads and a
// section of the report.
const MaxScenarioProxies = 10_000

// CheckRunScenarios returns an error when n scenario directories are more
// than MaxRunScenarios ("WHAT: more than 10000 scenario directories (N),
// the most one run has"), nil otherwise. what names where they are listed
// ("run/manifest.json: scenario_dirs").
func CheckRunScenarios(what string, n int) error {
	if n > MaxRunScenarios {
		return fmt.Errorf("%s: more than %d scenario directories (%d), the most one run has", what, MaxRunScenarios, n)
	}
	return nil
}

// CheckScenarioProxies returns an error when n proxies are more than
// MaxScenarioProxies ("WHAT: more than 10000 proxies, the most one
// scenario has"; n may be a count that stopped at MaxScenarioProxies+1),
// nil otherwise. what names where they are listed ("line 5: proxies",
// "dir/stats").
func CheckScenarioProxies(what string, n int) error {
	if n > MaxScenarioProxies {
		return fmt.Errorf("%s: more than %d proxies, the most one scenario has", what, MaxScenarioProxies)
	}
	return nil
}
