# scripts/check_sql.py on small trees of its own: SQL in src/store passes; a query string, a
# prepare call or a column read in another folder fails, naming the file and line; listed as a
# debt it passes; a listed file that holds no SQL any more fails (the list only shrinks); SQL in
# a comment is not counted.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
C="$SRC/scripts/check_sql.py"
R="$T/r"
mkroot() {
	rm -rf "$R" && mkdir -p "$R/src/store" "$R/src/analyze"
	printf 'static const char *q = "SELECT id FROM kernel";\nint f(void) { return kj_db_prepare(0, q, 0); }\n' \
		>"$R/src/store/kj_store_a.c"
	printf '/* reads SELECT x FROM y through the store */\nint g(void) { return kj_store_a(); }\n' \
		>"$R/src/analyze/kj_a.c"
	: >"$T/debts"
}
run() { expect "$1" python3 "$C" --root "$R" --debts "$T/debts"; }

mkroot
run 0
has "0 files outside src/store with SQL"

# the plants: a query string, a prepare call and a column read outside store each fail
mkroot
printf 'int h(void) {\n\tconst char *s = "SELECT a, b "\n\t\t"FROM t";\n\treturn 0;\n}\n' >"$R/src/analyze/kj_b.c"
printf 'int h2(void) {\n\tconst char *s = "SELECT a FROM t";\n\treturn 0;\n}\n' >"$R/src/analyze/kj_c.c"
run 1
has "^src/analyze/kj_b.c:2: SQL text (SQL outside store)"
has "^src/analyze/kj_b.c:3: SQL text (SQL outside store)"
has "^src/analyze/kj_c.c:2: SQL text (SQL outside store)"
mkroot
printf 'int h(void *db, void **st) {\n\treturn kj_db_prepare(db, s, st);\n}\n' >"$R/src/analyze/kj_b.c"
run 1
has "^src/analyze/kj_b.c:2: kj_db_prepare (SQL outside store)"
mkroot
printf 'long h(void *st) { return sqlite3_column_int64(st, 0); }\n' >"$R/src/analyze/kj_b.c"
run 1
has "^src/analyze/kj_b.c:1: sqlite3_column_int64 (SQL outside store)"

# listed, it passes as a debt; once its SQL is gone its line must go
echo "src/analyze/kj_b.c # planted for the test" >"$T/debts"
run 0
has "^src/analyze/kj_b.c:1: sqlite3_column_int64 (debt)"
printf 'long h(void) { return 0; }\n' >"$R/src/analyze/kj_b.c"
run 1
has "src/analyze/kj_b.c holds no SQL any more: delete its line"
