#!/bin/bash
# kjoule timeline: Chrome trace fields, ASCII window, SVG parsed as XML with one bar per activity.
# usage: test_timeline.sh KJOULE_BIN SRC_DIR BUILD_DIR   (exit 77: skipped, no python3)
set -u
KJ=$1 SRC=$2
command -v python3 >/dev/null || exit 77
T=$(mktemp -d /tmp/kjcli_timeline.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/run.kjdb" --iterations 5 --kernels 30 --streams 2 >/dev/null \
	|| fail "mkrun"
"$KJ" timeline "$T/run.kjdb" --format chrome -o "$T/trace.json" || fail "chrome"
python3 - "$T/trace.json" "$T/run.kjdb" <<'PY' || fail "chrome checks"
import json, sqlite3, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
db = sqlite3.connect(sys.argv[2])
n = lambda q: db.execute(q).fetchone()[0]
cnt = {}
for e in ev:
    for k in ("ph", "ts", "pid", "tid", "name"):
        assert k in e, (k, e)
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    if e["ph"] == "X":
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        cnt[e["cat"]] = cnt.get(e["cat"], 0) + 1
    else:
        cnt[e["ph"]] = cnt.get(e["ph"], 0) + 1
assert cnt["kernel"] == n("select count(*) from kernel"), cnt
assert cnt["memcpy"] == n("select count(*) from memcpy"), cnt
assert cnt["cuda_api"] == n("select count(*) from api_call"), cnt
assert cnt["nvtx"] == n("select count(*) from nvtx_range"), cnt
assert cnt["s"] == cnt["f"] >= n("select count(*) from kernel"), cnt
assert cnt["C"] >= 3 * n("select count(*) from power_sample"), cnt
names = [e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
assert any("stream" in e["args"]["name"] for e in names) and any("CPU thread" in e["args"]["name"] for e in names)
# flows: s on the API thread inside the launch call, f on a GPU track bound to the enclosing slice
flows = {}
for e in ev:
    if e["ph"] in "sf":
        flows.setdefault(e["id"], {})[e["ph"]] = e
for fid, p in flows.items():
    assert p["f"].get("bp") == "e" and p["s"]["tid"] != p["f"]["tid"]
PY
# a window keeps only what overlaps it
"$KJ" timeline "$T/run.kjdb" --format chrome --iteration 2 -o "$T/it2.json" || fail "chrome --iteration"
python3 -c "
import json; a=json.load(open('$T/trace.json'))['traceEvents']; b=json.load(open('$T/it2.json'))['traceEvents']
k=lambda ev: sum(1 for e in ev if e.get('cat')=='kernel')
assert 30 <= k(b) < k(a), (k(a), k(b))" || fail "iteration window"

"$KJ" timeline "$T/run.kjdb" --format ascii --width 60 >"$T/a.txt" || fail "ascii"
grep -q "^gpu0 s7" "$T/a.txt" && grep -q "^gpu0 s8" "$T/a.txt" || fail "ascii rows per stream"
grep -q "legend" "$T/a.txt" || fail "ascii legend"
grep -q "^cpu 4243 *|.*L" "$T/a.txt" || fail "ascii CPU row with launches"
grep -q "us " "$T/a.txt" || fail "ascii axis"
"$KJ" timeline "$T/run.kjdb" --format ascii --from 100 --to 2ms >/dev/null || fail "ascii window"
"$KJ" timeline "$T/run.kjdb" --format ascii --from 2ms --to 1ms 2>/dev/null && fail "reversed window accepted"

"$KJ" timeline "$T/run.kjdb" --format svg --iteration 3 -o "$T/g.svg" || fail "svg"
python3 - "$T/g.svg" <<'PY' || fail "svg checks"
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
rects = [e for e in r.iter(ns + "rect")]
bars = [e for e in rects if e.get("class") == "k"]
assert len(bars) == 31, len(bars)            # 30 kernels + the result copy
assert any(e.get("class") == "idle" for e in rects)
assert any(e.get("class") == "legend" for e in rects)
assert len([e for e in rects if e.get("class") == "nvtx"]) == 4   # layer.0 .. layer.3
assert any("us" in (t.text or "") for t in r.iter(ns + "text"))
PY
"$KJ" timeline "$T/run.kjdb" --format svg --iteration 99 -o "$T/x.svg" 2>/dev/null && fail "absent iteration accepted"
[ -e "$T/x.svg" ] && fail "partial file left behind"
"$KJ" timeline "$T/run.kjdb" 2>/dev/null; [ $? -eq 2 ] || fail "missing --format is not a usage error"
"$KJ" timeline "$T/run.kjdb" --format png 2>/dev/null; [ $? -eq 2 ] || fail "bad format"
: >"$T/empty.kjdb"
"$KJ" timeline "$T/empty.kjdb" --format chrome 2>/dev/null && fail "empty file accepted"
echo ok
