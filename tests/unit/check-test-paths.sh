#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every file of tests/ that the repo's files name (tests/host/lib.bash,
# tests/helpers/tv_fake_agent.py, ...) exists: a test that names a helper
# by a path that moved (tests/root became tests/host) would fail, or worse
# check nothing, far from the cause.  A name with a placeholder (NAME,
# SAMPLE, a glob or a prefix such as tests/unit/test_) is not a path;
# tests/helpers/tv-NAME names the program built from tv-NAME.c.
cd "$TV_ROOT" || exit 1
command -v git >/dev/null && [ -e .git ] || { echo "not a git checkout: nothing to check" >&2; exit 0; }
bad=0 n=0
while read -r p; do
	case $p in *NAME* | *SAMPLE* | *'*'* | *[-_] | */) continue ;; esac
	n=$((n + 1))
	[ -e "$p" ] || [ -e "$p.c" ] && continue
	echo "FAIL: $p does not exist; named in: $(git grep -lF -- "$p" -- . ':!tests/samples' ':!tests/golden' | tr '\n' ' ')"
	bad=$((bad + 1))
done < <(git ls-files -- . ':!tests/samples' ':!tests/golden' ':!tests/run-tests' |
	xargs grep -ohE 'tests/[a-z0-9_-]+(/([A-Za-z0-9_.*-]|\\-)+)+' 2>/dev/null | sed -e 's/\\-/-/g' -e 's/[.]$//' | sort -u)
echo "$n paths under tests/ named in the repo, $bad missing" >&2
[ $bad = 0 ]
