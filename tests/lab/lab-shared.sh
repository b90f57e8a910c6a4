# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared machines (tests/lab/README.md, "Shared machines"): sourced by
# tests/lab/lab when LAB_SHARED=DIR.  `lab TOPO SCRIPT OUTDIR` then runs
# SCRIPT as a job on the machine of DIR whose topology and boot
# configuration are this run's (booted by `lab serve` on first use, and
# again when the last one died, timed out or was left unclean), with the
# same contract as a machine of its own: SCRIPT's status, its /out in
# OUTDIR, OUTDIR/console.log (the machine's console while it ran), its
# output on stdout, 124 after LAB_TIMEOUT, 125 when the machine stopped.
# One more status: 123, the scenario left something on the machine (a
# tracefs instance, dynamic event, Xen domain or process): stderr names
# each, and the machine is rebooted before the next scenario.
#
# DIR holds one directory per machine, TOPO-KEY (KEY: a hash of `config`),
# and the tallies boots.log and reboots.log that `tests/lab/shared stop`
# prints.  A machine directory is the machine's 9p share: console.log,
# ready (its job loop runs), jobs/N/{script,env,name,out/,dirty,done},
# next (the job to run), stop (power off), dead and dead.msg (its QEMU
# ended: report's status and message).

# The boot configuration: machines are shared by runs that agree on all of it.
shared_config() {
	local xen=""
	[ -n "${LAB_XEN:-}" ] && xen="$(realpath "$LAB_XEN" 2>/dev/null) $(stat -c %s.%Y "$LAB_XEN" 2>/dev/null)"
	printf '%s\n' "topology=$TOPO" "LAB_XEN=$xen" "LAB_XEN_ARGS=${LAB_XEN_ARGS:-}" \
		"LAB_QEMU_ARGS=${LAB_QEMU_ARGS:-}" "LAB_MEM=${LAB_MEM:-}" "LAB_DOM0_MEM=${LAB_DOM0_MEM:-}" \
		"LAB_EXTRA=${LAB_EXTRA:-}" "LAB_KERNEL_ARGS=${LAB_KERNEL_ARGS:-}" "LAB_L1_CPUS=${LAB_L1_CPUS:-}" \
		"LAB_OPT_EXCLUDE=${LAB_OPT_EXCLUDE-(default)}" "LAB_GZIP=${LAB_GZIP:-}" \
		"LAB_LOCKUP_S=${LAB_LOCKUP_S:-}" "LAB_FROZEN_S=${LAB_FROZEN_S:-}" "LAB_CACHE=${LAB_CACHE:-}"
}

shared_pid_alive() { # MDIR: its `lab serve` runs
	local pid
	pid=$(cat "$1/serve.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# shared_end MDIR: power the machine off (its loop sees `stop`), killing it
# if it does not go within 30 s (or at once with FORCE=1).
shared_end() {
	local m=$1 pid w=0
	pid=$(cat "$m/serve.pid" 2>/dev/null) || return 0
	[ "${FORCE:-0}" = 1 ] || touch "$m/stop"
	while kill -0 "$pid" 2>/dev/null; do
		if [ "${FORCE:-0}" = 1 ] || [ $w -ge 300 ]; then
			kill "$pid" 2>/dev/null || true
			sleep 2
			pkill -KILL -P "$pid" 2>/dev/null || true
			kill -KILL "$pid" 2>/dev/null || true
		fi
		sleep 0.1
		w=$((w + 1))
		[ $w -le 400 ] || break
	done
	return 0
}

# shared_retire MDIR: the machine is gone or must go: power it off and keep
# its directory as MDIR.N (console, jobs) for the record.
shared_retire() {
	local m=$1 n=1
	shared_end "$m"
	while [ -e "$m.$n" ]; do n=$((n + 1)); done
	mv "$m" "$m.$n"
	return 0
}

shared_note_reboot() { # MDIR WHY: the next scenario on this configuration boots it again
	printf '%s %s: %s\n' "$(date +%T)" "${1##*/}" "$2" >>"$SDIR/reboots.log"
}

# shared_boot MDIR: start `lab serve` and wait for its job loop (ready) or
# its end (dead).  Returns 0 when ready.
shared_boot() {
	local m=$1 t0=$SECONDS limit=${LAB_BOOT_TIMEOUT:-300}
	mkdir -p "$m/jobs"
	shared_config >"$m/config"
	cp "$m/config" "$m.config"
	log "booting a shared $TOPO machine (${m##*/})…"
	# 7>&-: the machine must not hold the lock of the lab that started it
	setsid "$LAB_DIR/lab" serve "$TOPO" "$m" </dev/null >"$m/serve.log" 2>&1 7>&- &
	echo $! >"$m/serve.pid"
	while [ ! -e "$m/ready" ]; do
		if [ -e "$m/dead" ] || ! shared_pid_alive "$m"; then
			break
		fi
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			echo "lab: error: the shared $TOPO machine ${m##*/} was not ready after ${limit}s (LAB_BOOT_TIMEOUT)" >"$m/dead.msg"
			echo 124 >"$m/dead"
			FORCE=1 shared_end "$m"
			break
		fi
		sleep 0.3
	done
	printf '%s %s %s\n' "${m##*/}" "$((SECONDS - t0))" "$([ -e "$m/ready" ] && echo ready || echo failed)" >>"$SDIR/boots.log"
	[ -e "$m/ready" ] && [ ! -e "$m/dead" ] && log "shared $TOPO machine ${m##*/} ready in $((SECONDS - t0)) s"
	return 0
}

# Move the job's files into OUTDIR (same file system: renames).
shared_collect_out() {
	local j=$1
	find "$j/out" -mindepth 1 -maxdepth 1 -exec mv -f -t "$OUTDIR" {} + 2>/dev/null ||
		cp -a "$j/out/." "$OUTDIR/"
}

shared_submit() {
	local m key n j off t1 rc why
	SDIR=$(cd "$LAB_SHARED" 2>/dev/null && pwd) || die "LAB_SHARED=$LAB_SHARED: no such directory"
	case $SDIR in *,*) die "LAB_SHARED must not contain a comma (QEMU option syntax)" ;; esac
	TIMEOUT=${LAB_TIMEOUT:-300}
	key=$(shared_config | sha256sum | cut -c1-12)
	m=$SDIR/$TOPO-$key
	exec 7>"$m.lock"
	flock 7 # one scenario at a time per machine
	if [ -d "$m" ]; then
		why=""
		if [ -e "$m/dead" ] || ! shared_pid_alive "$m"; then
			why="it was down"
		elif [ -e "$m/stop" ]; then
			why="it was stopping"
		else
			n=$(cat "$m/seq" 2>/dev/null || echo 0)
			[ "$n" -gt 0 ] && [ ! -e "$m/jobs/$n/done" ] &&
				why="job $n ($(cat "$m/jobs/$n/name" 2>/dev/null)) was still running: its lab was killed"
		fi
		if [ -n "$why" ]; then
			shared_note_reboot "$m" "$why"
			shared_retire "$m"
		fi
	fi
	if [ ! -d "$m" ]; then
		mkdir -p "$m"
		shared_boot "$m"
	fi
	t1=$SECONDS
	if [ -e "$m/ready" ] && [ ! -e "$m/dead" ]; then
		n=$(($(cat "$m/seq" 2>/dev/null || echo 0) + 1))
		echo "$n" >"$m/seq"
		j=$m/jobs/$n
		mkdir -p "$j/out"
		install -m 755 "$SCRIPT" "$j/script"
		write_env "$j/env"
		echo "${LAB_SCENARIO:-$SCRIPT}" >"$j/name"
		off=$(stat -c %s "$m/console.log")
		echo "$n" >"$m/next.tmp" && mv "$m/next.tmp" "$m/next"
		log "running ${LAB_SCENARIO:-$SCRIPT} on the shared $TOPO machine ${m##*/} (job $n)"
		while [ ! -e "$j/done" ]; do
			if [ -e "$m/dead" ] || ! shared_pid_alive "$m"; then
				local w=0
				while shared_pid_alive "$m" && [ $w -lt 100 ]; do sleep 0.2; w=$((w + 1)); done
				break
			fi
			if [ $((SECONDS - t1)) -ge "$TIMEOUT" ]; then
				touch "$m/timed-out"
				FORCE=1 shared_end "$m"
				break
			fi
			sleep 0.3
		done
	else
		off=0 j=$m/jobs/none n=none
		mkdir -p "$j/out"
	fi
	tail -c +$((off + 1)) "$m/console.log" >"$OUTDIR/console.log" 2>/dev/null || true
	shared_collect_out "$j"
	[ -f "$m/machine-state.txt" ] && [ "$m/machine-state.txt" -nt "$j/name" ] &&
		cp "$m/machine-state.txt" "$OUTDIR/machine-state.txt"
	script_output || true
	if [ -e "$j/done" ]; then
		rc=$(tr -dc 0-9 <"$j/done")
		if [ -s "$j/dirty" ]; then
			echo "lab: error: ${LAB_SCENARIO:-$SCRIPT} (status $rc) left the shared $TOPO machine unclean; it is rebooted for the next scenario:" >&2
			sed 's/^/lab:   | /' "$j/dirty" >&2
			cp "$j/dirty" "$OUTDIR/leftovers.txt"
			shared_note_reboot "$m" "unclean after ${LAB_SCENARIO:-$SCRIPT}: $(head -n 1 "$j/dirty")"
			shared_retire "$m"
			exit 123
		fi
		log "$TOPO: script exited with status $rc after $((SECONDS - t1))s (console: $OUTDIR/console.log; shared machine ${m##*/}, job $n)"
		exit "${rc:-125}"
	fi
	if [ -e "$m/timed-out" ]; then
		echo "lab: error: $TOPO machine timed out after ${TIMEOUT}s (LAB_TIMEOUT) and was killed; console: $OUTDIR/console.log" >&2
		shared_note_reboot "$m" "${LAB_SCENARIO:-$SCRIPT} timed out (${TIMEOUT} s)"
		shared_retire "$m"
		exit 124
	fi
	# the machine ended: report's verdict, about this scenario's console
	rc=$(cat "$m/dead" 2>/dev/null) || rc=125
	if [ -s "$m/dead.msg" ]; then
		sed "s|$m/console.log|$OUTDIR/console.log|g" "$m/dead.msg" | { grep -v "^lab: $TOPO: script exited" || true; } >&2
	else
		echo "lab: error: $TOPO machine stopped without writing /out/.lab-status (its lab serve ended); console: $OUTDIR/console.log" >&2
	fi
	shared_note_reboot "$m" "it stopped during ${LAB_SCENARIO:-$SCRIPT}: $(head -n 1 "$m/dead.msg" 2>/dev/null)"
	shared_retire "$m"
	[ "${rc:-0}" = 0 ] && rc=125
	exit "$rc"
}
