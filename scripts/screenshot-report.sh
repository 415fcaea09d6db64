#!/usr/bin/env bash
# Open the guarantees report in headless Chromium (Debian's package, networking off) and
# save what a reader sees: the page at 1400 px and at 700 px wide, where a click on the
# first violated cell leads (its counterexample's timeline, on its cell's page), and
# the timeline of the first `fencing` break with fencing on (the verdict's worst
# counterexample) at 1400 and 700 px. Fails if the page logs an error, a violated
# cell's link has no target, or a shot is empty.
#
#   scripts/screenshot-report.sh [reports/index.html] [out folder: reports/screenshots]
#
# Installs chromium when it is missing and apt-get can (root or password-less sudo);
# exits 3 when it cannot, so callers can tell "no browser here" from a broken page.
set -euo pipefail
page="${1:-reports/index.html}"
out="${2:-reports/screenshots}"
[ -f "$page" ] || { echo "no $page: run locksim report first" >&2; exit 2; }
# Debian's chromium; on other machines (an Ubuntu CI runner) a Chrome already there.
browser() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
if [ -z "$(browser)" ]; then
    as_root=()
    [ "$(id -u)" = 0 ] || as_root=(sudo -n)
    if command -v apt-get >/dev/null 2>&1 && "${as_root[@]}" true 2>/dev/null; then
        "${as_root[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${as_root[@]}" \
            apt-get install -y -qq --no-install-recommends chromium >/dev/null || true
    fi
    [ -n "$(browser)" ] || { echo "chromium is not installable here" >&2; exit 3; }
fi
chrome="$(browser)"
mkdir -p "$out"
page="$(realpath "$page")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The first violated cell's link: href="timelines/<cell>.html#<cell>--<check>" inside a
# td of class bad.
href="$(grep -o '<td class="bad"><a href="[^"]*#[^"]*"' "$page" | sed -n '1{s/.*href="//; s/"$//; p}')"
[ -n "$href" ] || { echo "no violated cell links to a timeline" >&2; exit 1; }
dir="$(dirname "$page")"
# A link's target: its page exists and holds its anchor.
resolves() {
    local file="${1%%#*}" id="${1#*#}"
    [ -f "$dir/$file" ] && grep -q " id=\"$id\"" "$dir/$file"
}
resolves "$href" || { echo "$href: no such anchor" >&2; exit 1; }
anchor="${href#*#}"
# The worst counterexample: the first fencing break with fencing on.
worst="$(grep -o 'href="timelines/[^"]*--fenced\.html#[^"]*--fencing"' "$page" | sed -n '1{s/^href="//; s/"$//; p}')"
[ -z "$worst" ] || resolves "$worst" || { echo "$worst: no such anchor" >&2; exit 1; }
# Headless screenshots ignore a URL's fragment; a frame scrolled to it does not.
frame() { # url file
    cat > "$2" <<HTML
<!DOCTYPE html><html><body style="margin:0"><iframe src="$1"
style="border:0;width:100vw;height:100vh;display:block"></iframe></body></html>
HTML
}
frame "file://$dir/$href" "$work/click.html"
[ -z "$worst" ] || frame "file://$dir/$worst" "$work/worst.html"

shoot() { # width height url file
    "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --allow-file-access-from-files --user-data-dir="$work/profile-$1" \
        --enable-logging=stderr --v=0 --virtual-time-budget=2000 \
        --window-size="$1,$2" --screenshot="$4" "$3" 2>>"$work/log"
    [ -s "$4" ] || { echo "no screenshot written: $4" >&2; exit 1; }
    echo "wrote $4 ($(stat -c %s "$4") bytes)"
}
shoot 1400 3000 "file://$page" "$out/report-1400px.png"
shoot 700 3000 "file://$page" "$out/report-700px.png"
shoot 1400 1100 "file://$work/click.html" "$out/click-$anchor.png"
if [ -n "$worst" ]; then
    shoot 1400 1300 "file://$work/worst.html" "$out/timeline-${worst#*#}-1400px.png"
    shoot 700 1500 "file://$work/worst.html" "$out/timeline-${worst#*#}-700px.png"
fi
# Console errors from the page itself (a broken page reports them as CONSOLE lines).
if grep -E "CONSOLE\(|Uncaught|Failed to load" "$work/log" | grep -v "dbus"; then
    echo "the page logged errors (above)" >&2
    exit 1
fi
