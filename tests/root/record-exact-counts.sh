# SPDX-License-Identifier: GPL-2.0
# record captures exactly the exits a known workload makes, with 0 lost,
# and stat shows them (issue 2: "a small test VMM ... exactly N, M, K").
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs; require_kvm
N=2000 M=1000 K=500
S=$TV_TMP/s
"$TV" record -q -o "$S" -- "$VMM" --outs $N --ins $M --cpuids $K --quiet || fail "record failed"
[ -z "$(our_instances)" ] || fail "tracefs instance left behind: $(our_instances)"
"$TV" report --json "$S" > "$TV_TMP/r.json" || fail "report --json failed"
vmm='e["comm"] == "tv-testvmm"'
expect_eq "pio writes" "$(json_count "$TV_TMP/r.json" "$vmm and e['event'] == 'kvm:kvm_pio' and e['fields']['rw'] == 1 and e['fields']['port'] == 0x1234")" $N
expect_eq "pio reads" "$(json_count "$TV_TMP/r.json" "$vmm and e['event'] == 'kvm:kvm_pio' and e['fields']['rw'] == 0 and e['fields']['port'] == 0x1235")" $M
expect_eq "cpuid" "$(json_count "$TV_TMP/r.json" "$vmm and e['event'] == 'kvm:kvm_cpuid'")" $K
expect_eq "io exits" "$(json_count "$TV_TMP/r.json" "$vmm and e['event'] == 'kvm:kvm_userspace_exit' and e['fields']['reason'] == 2")" $((N + M))
expect_eq "lost_total" "$(sed -n 's/^lost_total=//p' "$S/host/meta")" 0
expect_eq "lost markers" "$(json_count "$TV_TMP/r.json" "'lost_before' in e")" 0
events=$(wc -l < "$TV_TMP/r.json")
expect_eq "events_total matches decoded" "$(sed -n 's/^events_total=//p' "$S/host/meta")" "$events"
"$TV" stat --json "$S" > "$TV_TMP/stat.json" || fail "stat --json failed"
expect_eq "stat pio:write:0x1234" "$(stat_field "$TV_TMP/stat.json" pio:write:0x1234 count)" $N
expect_eq "stat pio:read:0x1235" "$(stat_field "$TV_TMP/stat.json" pio:read:0x1235 count)" $M
expect_eq "stat cpuid:0x0" "$(stat_field "$TV_TMP/stat.json" cpuid:0x0 count)" $K
expect_eq "stat userspace:IO" "$(stat_field "$TV_TMP/stat.json" userspace:IO count)" $((N + M))
expect_eq "stat userspace:HLT" "$(stat_field "$TV_TMP/stat.json" userspace:HLT count)" 1
python3 - "$TV_TMP/stat.json" <<'PY' || fail "stat row invariants"
import json, sys
for r in json.load(open(sys.argv[1])):
    for k in ("vm", "vcpu", "reason", "count", "min_ns", "p50_ns", "p99_ns", "max_ns", "total_ns"):
        assert k in r, (k, r)
    if r["min_ns"] is not None:
        assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"] <= r["total_ns"], r
    assert r["vm"].startswith("tv-testvmm["), r
    assert r["vcpu"] == "0", r
PY
"$TV" stat "$S" | grep -q "kvm_exit/kvm_entry did not fire" || fail "stat text lacks the PVM note"
echo "all counts exact"
