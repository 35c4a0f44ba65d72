#!/usr/bin/env bash
# Re-downloads the chart library the HTML report embeds (analyze/report/assets/uplot,
# go:embed in analyze/report/render_html.go): uPlot, pinned to one version, from the
# npm registry with `npm pack`, after checking the tarball's sha512 against
# the integrity the registry's metadata gives for that version. It writes
# the minified IIFE build, its CSS, the licence and VERSION (name, version,
# integrity). With --check it changes nothing and fails when the committed
# files differ from the pinned package's.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=uplot
VERSION=1.6.32
# The integrity npm's registry published for uplot@1.6.32 (`npm view uplot@1.6.32 dist.integrity`).
PINNED_INTEGRITY='sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=='
DEST=analyze/report/assets/uplot

check=false
[ "${1:-}" = "--check" ] && check=true

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

registry="$(npm view "$NAME@$VERSION" dist.integrity)"
if [ "$registry" != "$PINNED_INTEGRITY" ]; then
	echo "fetch-chart-lib: the registry says $NAME@$VERSION has integrity $registry, pinned $PINNED_INTEGRITY" >&2
	exit 1
fi
(cd "$tmp" && npm pack --silent "$NAME@$VERSION" >/dev/null)
tgz="$tmp/$NAME-$VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$PINNED_INTEGRITY" ]; then
	echo "fetch-chart-lib: $tgz has integrity $got, want $PINNED_INTEGRITY" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/LICENSE package/dist/uPlot.iife.min.js package/dist/uPlot.min.css
printf '%s %s %s\n' "$NAME" "$VERSION" "$PINNED_INTEGRITY" >"$tmp/VERSION"

files=(LICENSE uPlot.iife.min.js uPlot.min.css VERSION)
src() { case "$1" in LICENSE) echo "$tmp/package/LICENSE" ;; VERSION) echo "$tmp/VERSION" ;; *) echo "$tmp/package/dist/$1" ;; esac; }
if $check; then
	for f in "${files[@]}"; do
		cmp -s "$(src "$f")" "$DEST/$f" || { echo "fetch-chart-lib: $DEST/$f differs from $NAME@$VERSION" >&2; exit 1; }
	done
	echo "fetch-chart-lib: $DEST matches $NAME@$VERSION ($PINNED_INTEGRITY)"
	exit 0
fi
mkdir -p "$DEST"
for f in "${files[@]}"; do
	cp "$(src "$f")" "$DEST/$f"
done
echo "fetch-chart-lib: wrote $DEST from $NAME@$VERSION ($PINNED_INTEGRITY)"
