# kjoule fit's output folder is replaced whole or not at all: a refused or failed fit creates no
# folder and leaves an earlier one byte for byte as it was (no model file overwritten, no index
# of no models, no temporary folder left); a corrupt models.json is refused, naming it; a refit
# keeps the earlier models of other keys and their files, and drops the replaced ones' files.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
F="--rounds 5"

# csv FILE SCALE [ROWS]: a {b,l,dim} operator's sweep CSV, time 3 + b l dim / 1e5 x SCALE
csv() {
	python3 - "$1" "$2" "${3:-0}" <<'P'
import sys
path, scale, limit = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rows = [(b, l, d) for b in (1, 2, 4) for l in (256, 512, 1024, 2048) for d in (512, 1024, 2048)]
with open(path, "w") as f:
    f.write("b,l,dim,F_dur(us),B_dur(us),status\n")
    for b, l, d in rows[:limit or None]:
        t = (3 + b * l * d / 1e5) * scale
        f.write("%d,%d,%d,%.6g,%.6g,ok\n" % (b, l, d, t, 2 * t))
P
}
# snap DIR: every file of DIR with its checksum, one a line (what "untouched" compares)
snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha1sum); }
leftovers() { ls -a "$T" | grep -E '\.(tmp|old)-' && fail "a temporary folder was left behind: $*"; }

# 1. a CSV with a bad value: refused before anything is created (no empty -o folder)
mkdir -p "$T/junk"
printf 'b,l,dim,F_dur(us),B_dur(us)\n1,1,1,2.0,4.0\n1,1,2,fast,4.0\n' >"$T/junk/G_layernorm_fp16.csv"
expect 1 "$KJ" fit "$T/junk" -o "$T/new" $F
grep -q "G_layernorm_fp16.csv:3: column 'F_dur(us)': 'fast'" "$T/err" || fail "junk: $(cat "$T/err")"
[ -e "$T/new" ] && fail "a refused fit created its -o folder"
# 2. too few rows for any model: exit 1 and no folder (not an index of no models)
mkdir -p "$T/few"
csv "$T/few/G_layernorm_fp16.csv" 1 3
expect 1 "$KJ" fit "$T/few" -o "$T/new" $F
grep -q "no model trained" "$T/err" || fail "few rows: $(cat "$T/err")"
[ -e "$T/new" ] && fail "a fit that trained no model wrote $(ls "$T/new")"
leftovers "few rows"

# 3. a models folder of two operators; refits that fail leave it byte for byte as it was. The bad
#    operator is each of the two in turn, so whichever the folder lists first, one run reads the
#    good one first (a fit that writes as it goes would overwrite its files)
mkdir -p "$T/good"
csv "$T/good/G_layernorm_fp16.csv" 1
csv "$T/good/G_res_add_fp16.csv" 1
expect 0 "$KJ" fit "$T/good" -o "$T/m" $F
has "4 models in"
snap "$T/m" >"$T/m.before"
for bad in layernorm res_add; do
	rm -rf "$T/bad" && mkdir -p "$T/bad"
	for op in layernorm res_add; do csv "$T/bad/G_${op}_fp16.csv" 3; done # other figures: other models
	awk -F, -v OFS=, 'NR == 30 { $4 = "fast" } 1' "$T/bad/G_${bad}_fp16.csv" >"$T/x" && mv "$T/x" "$T/bad/G_${bad}_fp16.csv"
	expect 1 "$KJ" fit "$T/bad" -o "$T/m" $F
	grep -q "G_${bad}_fp16.csv:30: column 'F_dur(us)': 'fast'" "$T/err" || fail "bad $bad: $(cat "$T/err")"
	snap "$T/m" | cmp -s - "$T/m.before" || fail "a failed refit ($bad bad) changed the models folder: $(snap "$T/m" | diff - "$T/m.before" | head -4)"
	leftovers "failed refit ($bad)"
done
# ... and a refit that trains no model leaves it as it was too
expect 1 "$KJ" fit "$T/few" -o "$T/m" $F
snap "$T/m" | cmp -s - "$T/m.before" || fail "a fit of no model changed the models folder"

# 4. a corrupt models.json is refused, naming it, and nothing is written
cp -r "$T/m" "$T/c"
printf '{"models": [' >"$T/c/models.json"
snap "$T/c" >"$T/c.before"
expect 1 "$KJ" fit "$T/good" -o "$T/c" $F
grep -q "c/models.json:1: .*not a models index" "$T/err" || fail "corrupt index: $(cat "$T/err")"
snap "$T/c" | cmp -s - "$T/c.before" || fail "a corrupt models.json was replaced"
echo '{"kjoule_models": 1}' >"$T/c/models.json"
expect 1 "$KJ" fit "$T/good" -o "$T/c" $F
grep -q "c/models.json: no \"models\" list" "$T/err" || fail "index without models: $(cat "$T/err")"
# a folder of other files (no models.json), one holding a folder, or a file: refused, untouched
mkdir -p "$T/other" && echo notes >"$T/other/notes.txt"
expect 1 "$KJ" fit "$T/good" -o "$T/other" $F
grep -q "other holds files but no models.json" "$T/err" || fail "other folder: $(cat "$T/err")"
[ "$(ls "$T/other")" = notes.txt ] || fail "the other folder was changed: $(ls "$T/other")"
cp -r "$T/m" "$T/sub" && mkdir "$T/sub/keep"
expect 1 "$KJ" fit "$T/good" -o "$T/sub" $F
grep -q "sub/keep: not a plain file" "$T/err" || fail "sub-folder: $(cat "$T/err")"
[ -d "$T/sub/keep" ] || fail "the sub-folder went"
expect 1 "$KJ" fit "$T/good" -o "$T/other/notes.txt" $F
grep -q "exists and is not a folder" "$T/err" || fail "-o a file: $(cat "$T/err")"
leftovers "refusals"
# an empty folder is fine
mkdir -p "$T/empty"
expect 0 "$KJ" fit "$T/good" -o "$T/empty" $F
expect 0 "$KJ" fit "$T/good" -o "$T/empty/" $F
[ -s "$T/empty/models.json" ] || fail "fit into an empty folder"

# 5. a refit of one operator on another GPU's CSVs into the folder: the earlier GPU's models stay,
#    files and entries; a refit of the same key replaces its files; other plain files are kept
echo "mine" >"$T/m/README"
mkdir -p "$T/h"
csv "$T/h/H_layernorm_fp16.csv" 2
expect 0 "$KJ" fit "$T/h" -o "$T/m" $F
python3 - "$T/m" <<'P' || fail "merge of another GPU: $(ls "$T/m")"
import json, os, sys
d = sys.argv[1]
ms = json.load(open(os.path.join(d, "models.json")))["models"]
keys = sorted((m["gpu"], m["op"]) for m in ms)
assert keys == sorted([("G", "layernorm")] * 2 + [("G", "res_add")] * 2 + [("H", "layernorm")] * 2), keys
named = {f for m in ms for f in (m["model"], m["svg"]) if f}
assert all(os.path.isfile(os.path.join(d, f)) for f in named), named  # every file the index names is there
assert set(os.listdir(d)) == named | {"models.json", "README"}, set(os.listdir(d)) - named  # and no other
assert open(os.path.join(d, "README")).read() == "mine\n"
P
leftovers "merge"
# the same key again from other figures: its files are the new fit's, the others' as they were
snap "$T/m" | grep -v "G_layernorm\|models.json" >"$T/m.keep"
sha1sum "$T/m/G_layernorm_fp16_fwd_time.svg" >"$T/svg.before"
rm -rf "$T/g3" && mkdir -p "$T/g3" && csv "$T/g3/G_layernorm_fp16.csv" 3
expect 0 "$KJ" fit "$T/g3" -o "$T/m" $F
sha1sum -c --quiet "$T/svg.before" >/dev/null 2>&1 && fail "a refit did not replace its model's files"
snap "$T/m" | grep -v "G_layernorm\|models.json" | cmp -s - "$T/m.keep" || fail "a refit changed other models' files"
python3 -c 'import json,sys; ms=json.load(open(sys.argv[1]))["models"]; assert len(ms) == 6, len(ms)' "$T/m/models.json" ||
	fail "refit of one key: $(cat "$T/m/models.json" | head -c 300)"
leftovers "refit"
finish
