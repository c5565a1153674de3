# Sourced by the GPU test scripts: skip with 77 where no GPU is present, a temporary directory
# $dir removed at exit, check NAME CONDITION (prints ok/FAIL, sets fail=1) and q DB SQL (the first
# column of the first row).
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
q() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }
