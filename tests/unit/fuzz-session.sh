#!/bin/bash
# libFuzzer on the whole session reader (tests/fuzz/fuzz_session.c:
# session.meta, meta, vcpus, sync/transforms, header_page, formats, ftrace
# pages, Xen records, zstd streams) for a bounded time (FUZZ_SECONDS,
# default 45), seeded from every session in tests/samples.  0 crashes, 0
# hangs (-timeout), 0 leaks (LeakSanitizer; tests/fuzz/lsan.supp lists the
# leaks inside libtraceevent).  What it finds is kept under tests/samples
# (fuzz-*, README-fuzz.md).  Needs no root; skips without clang.
. "$(dirname "$0")/../host/lib.bash"
command -v clang >/dev/null || skip "clang not installed (libFuzzer)"
cd "$TV_ROOT" || exit 1
make -s build/fuzz/fuzz_session >"$TV_TMP/build.log" 2>&1 || { cat "$TV_TMP/build.log" >&2; fail "make fuzz failed"; }
F=build/fuzz/fuzz_session
mkdir -p "$TV_TMP/corpus" "$TV_TMP/seeds"
# plus the multi-domain sample synchronised, so sync/transforms (pieces,
# composition) is among the seeds
cp -r tests/samples/synced-multi "$TV_TMP/synced" && "$TV" sync "$TV_TMP/synced" >/dev/null 2>&1 ||
	fail "cannot synchronise tests/samples/synced-multi"
# and Xen sessions imported from the Xen samples: every record layout the
# decoder names (xen-classes), lost records, guest and TSC scale records
for x in xen-classes xen-two-cpus; do
	"$TV" import xentrace --cpu-khz 1000 "tests/samples/$x.xentrace" -o "$TV_TMP/$x" >/dev/null 2>&1 ||
		fail "cannot import tests/samples/$x.xentrace"
done
python3 tests/fuzz/session-seeds.py "$TV_TMP/seeds" "$TV_TMP/synced" "$TV_TMP/xen-classes" "$TV_TMP/xen-two-cpus" ||
	fail "cannot make the seeds"
LSAN_OPTIONS=suppressions=$TV_ROOT/tests/fuzz/lsan.supp \
	fuzz_run "$F" "${FUZZ_SECONDS:-45}" 262144 2048 "sessions read, no crash, hang or leak"
