#!/usr/bin/env bash
# Open reports/index.html in headless Chromium (Debian's package) and save a screenshot,
# proving the page renders offline without errors.
#
#   scripts/screenshot-report.sh [reports/index.html] [reports/screenshot.png]
#
# Installs Debian's chromium if it is missing (needs root and the Debian mirror). The
# page has no scripts and no network references; Chromium runs with networking off.
set -euo pipefail
page="${1:-reports/index.html}"
shot="${2:-reports/screenshot.png}"
[ -f "$page" ] || { echo "no $page: run locksim report first" >&2; exit 2; }
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
profile="$(mktemp -d)"
log="$(mktemp)"
trap 'rm -rf "$profile" "$log"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --window-size=1400,4000 --screenshot="$shot" "file://$(realpath "$page")" 2>"$log"
# Console errors from the page itself (a broken page reports them as CONSOLE lines).
if grep -E "CONSOLE\(|Uncaught|Failed to load" "$log" | grep -v "dbus" ; then
    echo "the page logged errors (above)" >&2
    exit 1
fi
[ -s "$shot" ] || { echo "no screenshot written" >&2; exit 1; }
echo "wrote $shot ($(stat -c %s "$shot") bytes)"
