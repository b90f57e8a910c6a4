#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What contrib/ ships for tracevisor serve (doc/fleet.md) is valid for the
# real tools: contrib/prometheus/'s rules pass `promtool check rules`; the
# Grafana dashboard is JSON whose every PromQL expression (its variables
# given values) passes promtool as a recording rule, and names only
# metrics serve exports (host/serve_metrics.c) or the rules record.
. "$(dirname "$0")/../host/lib.bash"
command -v promtool >/dev/null || skip "promtool not installed (make deps: Debian prometheus)"
cd "$TV_ROOT" || exit 1
promtool check rules contrib/prometheus/tracevisor-rules.yml >"$TV_TMP/rules.out" 2>&1 ||
	fail "promtool check rules: $(cat "$TV_TMP/rules.out")"
python3 - contrib/grafana/tracevisor-vm-exits.json host/serve_metrics.c "$TV_TMP/dash.yml" <<'PY' || fail "the Grafana dashboard"
import json, re, sys
d = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read()
known = set(re.findall(r'"(tracevisor_[a-z_]+)"', src)) | {"tracevisor_vm_exits_total"}
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
assert exprs and d["uid"], "no panels"
with open(sys.argv[3], "w") as f:
    f.write("groups:\n  - name: dash\n    rules:\n")
    for i, e in enumerate(exprs):
        for name in re.findall(r"\btracevisor_[a-z_]+", e):
            base = re.sub(r"_(bucket|sum|count|total)$", "", name)
            assert name in known or base in known, "%s: not a metric serve exports" % name
        e = e.replace("$__rate_interval", "1m")
        e = re.sub(r"\$[a-z]+", ".*", e)
        f.write("      - record: dash_%d\n        expr: %s\n" % (i, json.dumps(e)))
print("dashboard: %d expressions" % len(exprs))
PY
promtool check rules "$TV_TMP/dash.yml" >"$TV_TMP/dash.out" 2>&1 || fail "dashboard PromQL: $(cat "$TV_TMP/dash.out")"
echo "PASS: contrib/prometheus rules and the Grafana dashboard's PromQL" >&2
