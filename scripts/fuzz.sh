#!/usr/bin/env bash
# fuzz.sh — run every native Go fuzz target of the repository for a short time.
# Targets are discovered: every `func FuzzXxx(f *testing.F)` in a *_test.go file (files with a //go:build line are
# skipped; no fuzz target needs a build tag), run one per `go test` invocation, as go test requires:
#   go test -run='^$' -fuzz='^FuzzXxx$' -fuzztime=$FUZZTIME ./pkg
# A failure stops the script with go test's report; the failing input is written to the package's
# testdata/fuzz/FuzzXxx/, to be committed as a regression input once the bug is fixed.
# Env: FUZZTIME (default 3s per target), FUZZMINIMIZE (time spent minimising a new input, default 100x),
#      FUZZ_ONLY (an extended regexp: run only targets whose "pkg FuzzXxx" matches it), GO (go binary).
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-3s}"
FUZZMINIMIZE="${FUZZMINIMIZE:-100x}"

targets=()
while IFS= read -r file; do
	grep -q '^//go:build' "$file" && continue
	dir="./$(dirname "$file")"
	while IFS= read -r name; do
		targets+=("$dir $name")
	done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$file")
done < <(git ls-files --cached --others --exclude-standard -- '*_test.go' | sort)

if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
n=0
for t in "${targets[@]}"; do
	if [ -n "${FUZZ_ONLY:-}" ] && ! [[ "$t" =~ $FUZZ_ONLY ]]; then
		continue
	fi
	read -r dir name <<<"$t"
	echo "== fuzz $dir $name ($FUZZTIME)"
	# Go's fuzzing engine can end a clean run with "context deadline exceeded" when -fuzztime elapses while it is
	# minimising a new interesting input (no crash, no failing input written): such a run is repeated once; any
	# other failure, or that one twice, stops the script.
	for try in 1 2; do
		if "$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZMINIMIZE" "$dir" 2>&1 |
			tee "$log"; then
			break
		fi
		if [ "$try" = 2 ] || ! grep -q 'context deadline exceeded' "$log" || grep -q 'Failing input written' "$log"; then
			exit 1
		fi
		echo "fuzz.sh: $name: the engine stopped at its deadline (no failing input); running it again"
	done
	n=$((n + 1))
done
echo "fuzz.sh: $n fuzz targets passed"
