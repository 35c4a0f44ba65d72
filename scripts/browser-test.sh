#!/usr/bin/env bash
# Real-browser test of the HTML report (`rlbench report --html`): installs
# Debian's chromium when it is missing (apt, non-interactive; nothing to do
# when it is there), then runs the browser-tagged Go test
# (internal/cli/browser_test.go) with RLBENCH_REQUIRE_BROWSER=1: it runs
# examples/e06/plan.yaml, renders its HTML report, opens it headless through
# the DevTools protocol (chromedp), fails on any console error, checks that
# the verdicts, counts and fault windows the DOM shows equal the JSON
# report's, writes screenshots beside the report, and opens the report of
# 1,000,000 requests (size and time to draw). Outputs go to
# $RLBENCH_BROWSER_OUT (default: a new temporary directory, printed).
# --update-docs copies the e06 screenshot to docs/report-e06.png.
set -euo pipefail
cd "$(dirname "$0")/.."

update_docs=false
[ "${1:-}" = "--update-docs" ] && update_docs=true

if [ ! -x /usr/bin/chromium ]; then
	echo "== installing Debian's chromium"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
/usr/bin/chromium --version 2>/dev/null | grep -v '^/usr/bin/chromium:' || true

out="${RLBENCH_BROWSER_OUT:-$(mktemp -d)}"
mkdir -p "$out"
echo "== browser test, outputs in $out"
RLBENCH_REQUIRE_BROWSER=1 RLBENCH_BROWSER_OUT="$out" go test -tags browser -count=1 -run '^TestBrowser' -v ./internal/cli/ 2>&1 |
	grep -v '^=== ' 
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || exit "$status"
if $update_docs; then
	mkdir -p docs
	cp "$out/e06-top.png" docs/report-e06.png
	echo "== wrote docs/report-e06.png"
fi
