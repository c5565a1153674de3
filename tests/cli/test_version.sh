#!/usr/bin/env bash
# Versions: `kjoule --version` names CMake's project version and the run schema of kj_schema.h;
# a fresh run (kjoule run, kjoule ingest) records both and `kjoule info` shows them; a run of a newer
# schema is refused naming both versions; runs of schema 1 (the shipped examples) still open.
# usage: test_version.sh KJOULE SRC_DIR BUILD_DIR
KJ=$1 SRC=$2
. "$(dirname "$0")/lib.sh"

ver=$(sed -n 's/^project(kjoule VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
schema=$(sed -n 's/^#define KJ_SCHEMA_VERSION \([0-9]*\)$/\1/p' "$SRC/src/store/kj_schema.h")
[ -n "$ver" ] && [ -n "$schema" ] || { echo "cannot read the version ($ver) or schema ($schema)"; exit 1; }
newer=$((schema + 1))

for arg in --version version; do
	expect 0 "$KJ" $arg
	[ "$(head -1 "$T/out")" = "kjoule $ver" ] || fail "$arg: first line '$(head -1 "$T/out")', want 'kjoule $ver'"
	has "run database schema: writes $schema, reads 1 to $schema"
done
expect 0 "$KJ" --help
has "kjoule --version"

# fresh runs: traced (without a GPU the program runs untraced, the run is still written) and ingested
expect 0 "$KJ" run -o "$T/run.kjdb" -- true
python3 "$SRC/tests/tools/mkspool.py" "$T/spool" --launches 50 --functions 5 --per-iter 25 >/dev/null
expect 0 "$KJ" ingest "$T/spool" -o "$T/ingest.kjdb"
for f in run ingest; do
	db="$T/$f.kjdb"
	[ "$(q "$db" "PRAGMA user_version")" = "$schema" ] || fail "$f: user_version $(q "$db" "PRAGMA user_version"), want $schema"
	[ "$(q "$db" "SELECT value FROM meta WHERE key = 'schema_version'")" = "$schema" ] || fail "$f: meta schema_version"
	[ "$(q "$db" "SELECT value FROM meta WHERE key = 'kjoule_version'")" = "$ver" ] || fail "$f: meta kjoule_version"
	expect 0 "$KJ" info "$db"
	has "(schema $schema, written by kjoule $ver)"
	expect 0 "$KJ" info "$db" --json
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(not (o["schema_version"] == int(sys.argv[2]) and o["kjoule_version"] == sys.argv[3]))' \
		"$T/out" "$schema" "$ver" || fail "$f: info --json versions: $(head -c 200 "$T/out")"
done

# a newer schema: refused by readers and by a writer (replay), naming the file, both schemas, this
# kjoule's version and the one that wrote it; nothing is written to it
cp "$T/ingest.kjdb" "$T/newer.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version = %d" % int(sys.argv[2])); c.execute("UPDATE meta SET value = ? WHERE key = ?", ("7.3.1", "kjoule_version")); c.commit()' \
	"$T/newer.kjdb" "$newer"
sum=$(md5sum <"$T/newer.kjdb")
for cmd in info kernels compare api report replay; do
	expect 1 "$KJ" $cmd "$T/newer.kjdb"
	grep -q "newer.kjdb: run database schema $newer is newer than this kjoule $ver reads (schema 1 to $schema); open it with kjoule 7.3.1, which wrote it, or later" "$T/err" ||
		fail "$cmd: refusal of schema $newer: $(cat "$T/err")"
done
[ "$(md5sum <"$T/newer.kjdb")" = "$sum" ] || fail "the newer run was changed"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM meta WHERE key = ?", ("kjoule_version",)); c.commit()' "$T/newer.kjdb"
expect 1 "$KJ" info "$T/newer.kjdb"
grep -q "schema $newer is newer than this kjoule $ver reads (schema 1 to $schema); open it with a newer kjoule" "$T/err" ||
	fail "refusal of a newer run that does not name its writer: $(cat "$T/err")"

# schema 1, as the shipped runs are (kjoule 0.1.0 wrote them): read as before; one that does not
# name its writer (0.1.0's ingest did not) is said to be from before this version
expect 0 "$KJ" info "$SRC/examples/runs/bloom560m.kjdb"
has "(schema 1, written by kjoule 0.1.0)"
has "kernels  *[1-9]"
cp "$SRC/tests/data/gpt_graph_short.kjdb" "$T/old.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM meta WHERE key = ?", ("kjoule_version",)); c.commit()' "$T/old.kjdb"
expect 0 "$KJ" info "$T/old.kjdb"
has "(schema 1, written by kjoule before 0.9.0)"
expect 0 "$KJ" info "$T/old.kjdb" --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(not (o["schema_version"] == 1 and o["kjoule_version"] is None))' "$T/out" ||
	fail "schema 1 run's info --json versions"
expect 0 "$KJ" kernels "$T/old.kjdb"
# no version at all (user_version 0): a database whose creation did not finish
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version = 0"); c.commit()' "$T/old.kjdb"
expect 1 "$KJ" info "$T/old.kjdb"
grep -q "old.kjdb: schema version 0 is not a complete kjoule run database" "$T/err" || fail "user_version 0: $(cat "$T/err")"
finish
