# scripts/check_layers.py on small trees of its own: a clean tree passes; an upward include, an
# include circle, a header of src/common the injection library does not link, a folder missing
# from the table and an ambiguous header name each fail, naming file and line; a listed debt
# passes, a listed debt that is gone fails, and a debt without a reason fails.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
C="$SRC/scripts/check_layers.py"
R="$T/r"
mk() { # mk PATH LINE...: write a source file of the test tree
	local p=$R/$1; shift
	mkdir -p "$(dirname "$p")" && printf '%s\n' "$@" >"$p"
}
mkroot() { # common <- store <- analyze, the injection library with kj_map.h, no debts
	rm -rf "$R"
	mk src/common/kj_map.h '#pragma once'
	mk src/common/kj_error.h '#pragma once'
	mk src/store/kj_db.h '#pragma once' '#include "kj_error.h"'
	mk src/store/kj_db.c '#include "kj_db.h"' '#include <stdio.h>' '#include "sqlite3ext.h"'
	mk src/analyze/kj_kernels.c '#include "kj_db.h"' '#include "kj_map.h"'
	mk src/trace/kj_spool.h '#pragma once'
	mk src/trace/inject/inject.c '#include "kj_spool.h"' '#include "kj_map.h"'
	: >"$T/debts"
}
run() { expect "$1" python3 "$C" --root "$R" --debts "$T/debts"; }

mkroot
run 0
has "check_layers: 7 files, .* 0 known debts, ok"

# an upward include: common includes store
mkroot
mk src/common/kj_map.h '#pragma once' '' '#include "kj_db.h"'
run 1
has "^src/common/kj_map.h:3: includes src/store/kj_db.h (common may not depend on store)$"
has "FAILED"
# ... listed as a debt it passes, reason shown; its line without a reason fails
echo "src/common/kj_map.h: src/store/kj_db.h # planted for the test" >"$T/debts"
run 0
has "^debt: src/common/kj_map.h:3: .*\[planted for the test\]"
echo "src/common/kj_map.h: src/store/kj_db.h" >"$T/debts"
run 1
has "debts:1: a debt needs a reason"
# ... and once paid, the debt left in the list fails
mkroot
echo "src/common/kj_map.h: src/store/kj_db.h # planted for the test" >"$T/debts"
run 1
has "listed debt no longer exists, remove its line: src/common/kj_map.h: src/store/kj_db.h"

# an include circle of three files in one folder (each include allowed on its own)
mkroot
mk src/analyze/kj_a.h '#pragma once' '#include "kj_b.h"'
mk src/analyze/kj_b.h '#pragma once' '#include "kj_c.h"'
mk src/analyze/kj_c.h '#pragma once' '#include "kj_a.h"'
run 1
has "^src/analyze/kj_a.h:2: includes src/analyze/kj_b.h (include circle: src/analyze/kj_a.h -> src/analyze/kj_b.h -> src/analyze/kj_c.h -> src/analyze/kj_a.h)$"
[ "$(grep -c "include circle" "$T/out")" = 1 ] || fail "the circle is reported once: $(cat "$T/out")"
# two files across folders, one of them an upward include
mkroot
mk src/store/kj_db.h '#pragma once' '#include "kj_kernels.h"'
mk src/analyze/kj_kernels.h '#pragma once' '#include "kj_db.h"'
run 1
has "(store may not depend on analyze)"
has "include circle: src/analyze/kj_kernels.h -> src/store/kj_db.h -> src/analyze/kj_kernels.h"

# the injection library includes a header of src/common whose code it does not link
mkroot
mk src/trace/inject/inject.c '#include "kj_spool.h"' '#include "kj_map.h"' '#include "kj_error.h"'
run 1
has "^src/trace/inject/inject.c:3: includes src/common/kj_error.h (trace/inject may not depend on common beyond kj_map.h, kj_capture_spec.h)$"

# a folder the table does not know, and a header name two folders hold
mkroot
mk src/newfloor/kj_new.c '#include "kj_map.h"'
run 1
has "src/newfloor: folder missing from ALLOWED"
mkroot
mk src/store/kj_map.h '#pragma once'
run 1
has 'src/analyze/kj_kernels.c:2: includes "kj_map.h" (ambiguous: '
finish
