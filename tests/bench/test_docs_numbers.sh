# scripts/docs_numbers.py and scripts/bench_index.py on a copy of the docs and the results: a number
# changed by hand inside a block, a result key or file gone, an unknown or unterminated block each
# fail --check, naming the file and the block; rewriting restores the block. bench_index: a stale
# table, a result no benchmark claims, a result named by when it was made, and a reference to a
# result that is not there each fail --check; a removed result written COMMIT:bench/results/NAME
# does not.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
D="$SRC/scripts/docs_numbers.py" B="$SRC/scripts/bench_index.py"
mkroot() { # a root with copies of the docs, bench/ (results linked file by file) and the shipped runs
	rm -rf "$T/r" && mkdir -p "$T/r/docs" "$T/r/bench/results" "$T/r/examples" "$T/r/scripts"
	cp "$SRC/README.md" "$T/r/" && cp "$SRC"/docs/*.md "$T/r/docs/"
	cp "$SRC/bench/README.md" "$SRC/bench/index.json" "$T/r/bench/"
	for f in "$SRC"/bench/results/*; do ln -s "$f" "$T/r/bench/results/"; done
	ln -s "$SRC/examples/runs" "$T/r/examples/runs"
}
mkroot
expect 0 python3 "$D" --check --kjoule "$KJ" --root "$T/r"
has "generated blocks in"
# a number changed by hand inside the README's headline table
python3 - "$T/r/README.md" <<'P'
import re, sys
p = sys.argv[1]; s = open(p).read()
i = s.index("<!-- kj:gen readme-headline -->")
m = re.compile(r"\d+\.\d{3}\u00d7").search(s, i)
open(p, "w").write(s[:m.start()] + "9.999\u00d7" + s[m.end():])
P
expect 1 python3 "$D" --check --kjoule "$KJ" --root "$T/r"
grep -q "README.md: block readme-headline differs" "$T/err" || fail "planted number: $(head -3 "$T/err")"
grep -q "9.999" "$T/err" || fail "the diff shows no planted number: $(head -5 "$T/err")"
# without --check the block is rewritten from the results, and --check passes again
expect 0 python3 "$D" --kjoule "$KJ" --root "$T/r"
cmp -s "$T/r/README.md" "$SRC/README.md" || fail "rewriting did not restore README.md"
expect 0 python3 "$D" --check --kjoule "$KJ" --root "$T/r"
# a key a block reads is gone from its result file: named with the file and the block
rm "$T/r/bench/results/energy_accuracy.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["steady_windows"]["300ms"]; json.dump(d, open(sys.argv[2], "w"))' \
	"$SRC/bench/results/energy_accuracy.json" "$T/r/bench/results/energy_accuracy.json"
expect 1 python3 "$D" --check --kjoule "$KJ" --root "$T/r"
grep -q "README.md: block readme-headline: bench/results/energy_accuracy.json: no key steady_windows/300ms/" "$T/err" ||
	fail "missing key: $(head -3 "$T/err")"
grep -q "docs/results.md: block results-energy: bench/results/energy_accuracy.json: no key" "$T/err" ||
	fail "missing key in results.md: $(head -3 "$T/err")"
# a result file gone; a key that is null (not measured)
rm "$T/r/bench/results/energy_accuracy.json" "$T/r/bench/results/ingest_speed.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["best_wall_s"] = None; json.dump(d, open(sys.argv[2], "w"))' \
	"$SRC/bench/results/ingest_speed.json" "$T/r/bench/results/ingest_speed.json"
expect 1 python3 "$D" --check --kjoule "$KJ" --root "$T/r"
grep -q "block readme-headline: bench/results/energy_accuracy.json: no such result file" "$T/err" || fail "missing file: $(head -3 "$T/err")"
grep -q "bench/results/ingest_speed.json: best_wall_s is null (not measured)" "$T/err" || fail "null key: $(head -3 "$T/err")"
# an unknown block, a block without its end; no kjoule for the compare block
mkroot
printf '\n<!-- kj:gen no-such-block -->\nx\n<!-- kj:end -->\n' >>"$T/r/docs/limits.md"
printf '\n<!-- kj:gen results-speed -->\nx\n' >>"$T/r/docs/results.md"
expect 1 python3 "$D" --check --kjoule "$KJ" --root "$T/r"
grep -q "docs/limits.md: block no-such-block: no such generator" "$T/err" || fail "unknown block: $(head -3 "$T/err")"
grep -q "docs/results.md: block results-speed: no <!-- kj:end --> after it" "$T/err" || fail "no end: $(head -3 "$T/err")"
mkroot
expect 1 python3 "$D" --check --kjoule "$T/nothing" --root "$T/r"
grep -q "README.md: block readme-compare: the kjoule binary" "$T/err" || fail "no kjoule: $(head -3 "$T/err")"

# bench_index.py: the copy agrees; then one fault at a time
mkroot
expect 0 python3 "$B" --check --root "$T/r"
python3 - "$T/r/bench/README.md" <<'P'
import sys
p = sys.argv[1]; s = open(p).read()
open(p, "w").write(s.replace("| H100 |", "| H200 |", 1))
P
expect 1 python3 "$B" --check --root "$T/r"
grep -q "bench/README.md: the benchmark tables differ" "$T/err" || fail "stale table: $(head -3 "$T/err")"
expect 0 python3 "$B" --root "$T/r"
has "tables rewritten"
expect 0 python3 "$B" --check --root "$T/r"
cmp -s "$T/r/bench/README.md" "$SRC/bench/README.md" || fail "rewriting did not restore bench/README.md"
W=s29 # a name that says when it was made (spelled so: tests/docs/test_no_history.sh keeps such names out of the tree)
ln -s "$SRC/bench/results/ingest_speed.json" "$T/r/bench/results/ingest_speed_$W.json"
mkdir "$T/r/bench/results/notes" && echo x >"$T/r/bench/results/notes/call3_probe.txt"
r=bench/results # (spelled so: bench_index.py checks this file's own references too)
echo "see \`$r/predict_accuracy_third.json\` and \`72a7992:$r/predict_accuracy_ninth.json\`" >>"$T/r/docs/limits.md"
expect 1 python3 "$B" --check --root "$T/r"
grep -q "bench/result[s]/ingest_speed_$W.json: no benchmark in bench/index.json claims it" "$T/err" || fail "unclaimed: $(cat "$T/err")"
grep -q "bench/result[s]/ingest_speed_$W.json: named by when it was made ('ingest_speed_$W.json')" "$T/err" || fail "when-named: $(cat "$T/err")"
grep -q "bench/result[s]/notes/call3_probe.txt: named by when it was made" "$T/err" || fail "call3: $(cat "$T/err")"
grep -q "docs/limits.md:[0-9]*: bench/result[s]/predict_accuracy_third.json is not there" "$T/err" || fail "dangling: $(cat "$T/err")"
grep -q "predict_accuracy_ninth" "$T/err" && fail "a COMMIT: reference was taken for a missing file"
# over_copies: one contestant's processes against another's (mean over mean, resampled processes)
python3 - "$SRC/scripts" <<'P' || fail "over_copies"
import sys
sys.path.insert(0, sys.argv[1])
from docs_numbers import over_copies
t = lambda a, b: {"summary": {"a": {"ratio_per_copy": dict(enumerate(a))}, "b": {"ratio_per_copy": dict(enumerate(b))}}}
same = [1.10, 1.14, 1.12]
# the same processes: no cost, an interval about it as wide below as above
text = over_copies(t(same, same), "a", "b")
assert text == "0.0 % (over 3 and 3 processes, 95 % -2.4 % to 2.4 %)", text
# every process of a 5 % slower: 5 % whichever processes are drawn
slow = [x * 1.05 for x in [1.1] * 4]
assert over_copies(t(slow, [1.1] * 3), "a", "b") == "5.0 % (over 4 and 3 processes, 95 % 5.0 % to 5.0 %)"
# spread processes: the interval holds the estimate and is wider than zero; a before b
text = over_copies(t([1.20, 1.15, 1.25], [1.10, 1.14, 1.12]), "a", "b")
est, lo, hi = (float(x) for x in __import__("re").findall(r"(-?\d+\.\d) %", text))
assert lo < est < hi and est > 0, text
P
finish
