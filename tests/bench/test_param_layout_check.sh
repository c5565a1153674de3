# scripts/param_layout_check.py: recorded parameter blocks against the captured cubins' functions
# of the traced registers. The shipped eager run is consistent (exit 0); the same run with one
# unique kernel's recorded block cut short is named as mismatched (exit 1).
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
command -v zstd >/dev/null || { echo "zstd missing: skipped"; exit 77; }
chk="$SRC/scripts/param_layout_check.py"
python3 "$chk" "$SRC/examples/runs/bloom560m.kjdb" >"$T/out" 2>"$T/err" || fail "shipped run: $(cat "$T/out" "$T/err")"
grep -Eq ": [1-9][0-9]* consistent, 0 mismatched" "$T/out" || fail "shipped run not consistent: $(cat "$T/out")"
cp "$SRC/examples/runs/bloom560m.kjdb" "$T/cut.kjdb"
# the first consistent kernel: its recorded block loses its last 8 bytes
python3 - "$T/cut.kjdb" "$chk" <<'P' || fail "could not cut a block"
import importlib.util, sqlite3, subprocess, sys
spec = importlib.util.spec_from_file_location("chk", sys.argv[2]); chk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(chk)
db = sqlite3.connect(sys.argv[1])
funcs = {}
for codec, data in db.execute("SELECT codec, data FROM module WHERE data IS NOT NULL"):
    img = subprocess.run(["zstd", "-dcq"], input=bytes(data), capture_output=True).stdout if codec == "zstd" else bytes(data)
    for fn, facts in chk.elf_functions(img).items():
        funcs.setdefault(fn, []).append(facts)
for uid, name, regs in db.execute("SELECT u.id, n.mangled, u.registers FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"):
    row = db.execute("SELECT id, length(params) FROM launch_params WHERE unique_id = ? LIMIT 1", (uid,)).fetchone()
    if row and row[1] and row[1] > 8 and (regs, row[1]) in funcs.get(name, []):
        db.execute("UPDATE launch_params SET params = substr(params, 1, ?) WHERE unique_id = ?", (row[1] - 8, uid))
        db.commit()
        print(name)
        sys.exit(0)
sys.exit(1)
P
python3 "$chk" "$T/cut.kjdb" >"$T/out2" 2>&1 && fail "a cut block passed the check"
grep -q ", 1 mismatched" "$T/out2" || fail "the cut block is not named: $(cat "$T/out2")"
grep -q "parameters recorded; its functions with" "$T/out2" || fail "no example line: $(cat "$T/out2")"
finish
