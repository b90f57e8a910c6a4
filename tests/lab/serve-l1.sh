# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
# Sourced by the L1 scripts of tests/e2e/serve-prometheus.sh and
# serve-alert-stall.sh (busybox sh),
# copied there with their LAB_EXTRA.

# wait_for URL PATTERN STATUS LOG...: until URL answers with PATTERN in its
# body (within 150 s); else the LOGs' last lines on stderr and exit STATUS.
wait_for() {
	url=$1 pat=$2 st=$3
	shift 3
	i=0
	until wget -q -O /tmp/wait_for.body "$url" 2>/dev/null && grep -q "$pat" /tmp/wait_for.body; do
		i=$((i + 1))
		[ $i -lt 300 ] || { for l in "$@"; do tail -20 "$l" >&2; done; exit "$st"; }
		sleep 0.5
	done
}
