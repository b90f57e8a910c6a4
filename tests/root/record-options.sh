# SPDX-License-Identifier: GPL-2.0
# -e globs, -f filter in the kernel, --clock, -b and --duration do what they say.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs; require_kvm
S=$TV_TMP/filter
"$TV" record -q -o "$S" -e 'kvm:kvm_p*o' -f 'port == 0x1235' -- "$VMM" --outs 50 --ins 20 --quiet ||
	fail "filtered record failed"
expect_eq "events recorded" "$(sed -n 's/^events=//p' "$S/host/meta")" "kvm:kvm_pio"
expect_eq "filtered reads" "$("$TV" report "$S" | grep -c 'pio_read at 0x1235')" 20
expect_eq "filtered writes" "$("$TV" report "$S" | grep -c 'pio_write')" 0
S=$TV_TMP/clock
"$TV" record -q -o "$S" -e kvm:kvm_pio -b 256 --clock mono -- "$VMM" --outs 5 --quiet || fail "clock record failed"
expect_eq "clock" "$(sed -n 's/^clock=//p' "$S/host/meta")" mono
expect_eq "buffer" "$(sed -n 's/^buffer_kb=//p' "$S/host/meta")" 256
S=$TV_TMP/dur
start=$(date +%s%N)
"$TV" record -q -o "$S" -e kvm --duration 0.5 || fail "duration record failed"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $ms -ge 450 ] && [ $ms -lt 5000 ] || fail "--duration 0.5 took ${ms} ms"
[ -e "$S/session.meta" ] || fail "duration session incomplete"
echo "options ok"
