# kjoule report in a real browser: headless Chromium loads the shipped run's page (and a bare
# synthetic run's), the page's own self-check must pass (every chart and table non-empty, no NaN),
# no console message or script error may appear, the kernel table must sort when its header is
# clicked, and a screenshot is saved under BUILD_DIR/report_browser/. Skipped without chromium.
set -u
KJ=$1 SRC=$2 BUILD=$3
. "$SRC/tests/cli/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "chromium not installed (scripts/install-deps.sh installs it): skipped"; exit 77; }
OUTDIR=$BUILD/report_browser
mkdir -p "$OUTDIR"
# a private profile, no first-run work, no network
chrome() {
	timeout 120 "$CHROME" --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions \
		--user-data-dir="$T/profile" --enable-logging=stderr --v=0 --virtual-time-budget=5000 "$@"
}

# load PAGE NAME: dump the DOM after the scripts ran, keep the console log, take a screenshot
load() {
	local page=$1 name=$2
	chrome --dump-dom "file://$page" >"$T/$name.dom" 2>"$T/$name.log" || fail "$name: chromium failed ($(tail -2 "$T/$name.log"))"
	grep -q '<p id="kj-selfcheck">KJ_SELFCHECK_OK charts=[0-9]' "$T/$name.dom" ||
		fail "$name: self-check: $(grep -o 'id="kj-selfcheck">[^<]*' "$T/$name.dom" || echo 'no result')"
	grep -E 'CONSOLE|Uncaught' "$T/$name.log" && fail "$name: console message or script error"
	chrome --screenshot="$OUTDIR/$name.png" --window-size=1280,7000 --hide-scrollbars "file://$page" \
		>/dev/null 2>>"$T/$name.log"
	[ "$(stat -c %s "$OUTDIR/$name.png" 2>/dev/null || echo 0)" -gt 20000 ] || fail "$name: no screenshot"
}

expect 0 "$KJ" report "$SRC/examples/runs/bloom560m.kjdb" -o "$OUTDIR/bloom560m.html"
load "$OUTDIR/bloom560m.html" bloom560m
charts=$(grep -o '>KJ_SELFCHECK_OK charts=[0-9]* tables=[0-9]*' "$T/bloom560m.dom")
echo "$charts"
n=$(echo "$charts" | sed 's/.*charts=\([0-9]*\).*/\1/')
[ "${n:-0}" -ge 9 ] || fail "bloom560m: $n charts, want >= 9"

# the sort script: a copy of the page clicks the 'traced µs / launch' header, then checks order
sed 's|</body>|<script>(function(){var t=document.getElementById("kernel-table");t.tHead.rows[0].cells[5].click();var r=t.tBodies[0].rows,ok=true;for(var i=1;i<r.length;i++)if(+r[i].cells[5].getAttribute("data-v")<+r[i-1].cells[5].getAttribute("data-v"))ok=false;document.body.insertAdjacentHTML("beforeend","<p>KJ_SORT_"+(ok\&\&r.length>5?"OK":"FAIL")+"</p>");})();</script></body>|' \
	"$OUTDIR/bloom560m.html" >"$T/sorted.html"
chrome --dump-dom "file://$T/sorted.html" >"$T/sorted.dom" 2>/dev/null
grep -q KJ_SORT_OK "$T/sorted.dom" || fail "clicking a header does not sort the kernel table"

# a run with most parts missing still passes the self-check (no empty chart, no NaN)
python3 "$SRC/tests/tools/kjgen.py" -o "$T/bare.kjdb" --kernels 2000 --nvtx 0 --power 0 >/dev/null
expect 0 "$KJ" report "$T/bare.kjdb" -o "$OUTDIR/bare.html" --quiet
load "$OUTDIR/bare.html" bare
echo "screenshots: $OUTDIR/bloom560m.png $OUTDIR/bare.png"
finish
