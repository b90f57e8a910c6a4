#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
Generate the committed sample sessions under tests/samples/NAME/ and their
expected output (tests/unit/test_decode.c checks the tool against them).

Every sample is a session directory (doc/session-format.md) whose
host/cpuN.raw files are hand-built ring-buffer sub-buffers in the kernel's
layout (kernel/trace/ring_buffer.c):

  sub-buffer: u64 timestamp, u64 commit (bytes of data | RB_MISSED_EVENTS
              bit 31 | RB_MISSED_STORED bit 30), data; when MISSED_STORED,
              an unsigned long count of lost events follows the data.
  record:     u32 header = type_len:5 | time_delta:27 << 5, then
              type_len 1..28  payload of type_len * 4 bytes
              type_len 0      u32 array[0] = payload + 4, then the payload
              type_len 29     padding: u32 array[0] = bytes after the header
                              (time_delta != 0: a discarded event)
              type_len 30     time extend: u32 array[0] = delta >> 27
              type_len 31     absolute time stamp, same split, 59 bits

The event formats, header_page and header_event are copies of a real
kernel's tracefs files, committed in tests/samples/formats/ (refresh them
with --from-tracefs; the kernel release is in formats/KERNEL_RELEASE).
Field offsets and event ids come from those files.

The expected files are written from the events as they were *meant*
(timestamps, fields, losses, the first corruption), never from running
tracevisor: expected.txt (report), expected.json (report --json),
expected-stat.json (stat --json) and expected.stderr (what a failing
session prints; absent = empty stderr and exit status 0).

usage: gen_samples.py [--from-tracefs [TRACEFS]]
"""
import json
import os
import re
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FORMATS = os.path.join(HERE, "formats")
EVENTS = ("kvm_exit", "kvm_entry", "kvm_pio", "kvm_userspace_exit")

SUBBUF = 4096
LONG = 8
HDR = 8 + LONG
DATA_MAX = SUBBUF - HDR
MISSED_EVENTS = 1 << 31
MISSED_STORED = 1 << 30
TS_BITS = 27
TS_MASK = (1 << TS_BITS) - 1
TS_MSB = 0xf8 << 56		# not stored by absolute time stamps
TYPE_PADDING, TYPE_EXTEND, TYPE_STAMP = 29, 30, 31
MAX_SMALL = 28 * 4

# Exit reason names as arch/x86/include/uapi/asm/{vmx,svm}.h spell them
# (what kvm_exit's print fmt shows), for the codes the samples use.
VMX_NAMES = {1: "EXTERNAL_INTERRUPT", 10: "CPUID", 12: "HLT", 30: "IO_INSTRUCTION",
	     33: "INVALID_STATE", 48: "EPT_VIOLATION"}
SVM_NAMES = {0x72: "cpuid", 0x78: "hlt", 0x7b: "io", 0x400: "npf"}
USERSPACE_NAMES = {2: "IO", 5: "HLT", 6: "MMIO", 9: "FAIL_ENTRY", 10: "INTR"}


# ----------------------------------------------------------------- formats

class Format:
	def __init__(self, path, system):
		text = open(path).read()
		self.system = system
		self.name = re.search(r"^name: (\S+)", text, re.M).group(1)
		self.id = int(re.search(r"^ID: (\d+)", text, re.M).group(1))
		self.fields = {}	# name -> (offset, size, signed)
		self.order = []		# non-common fields, in format order
		end = align = 1
		for decl, off, size, signed in re.findall(
				r"field:([^;]*);\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d+);", text):
			fname = re.sub(r"\[.*\]", "", decl).split()[-1]
			off, size = int(off), int(size)
			self.fields[fname] = (off, size, signed == "1")
			if not fname.startswith("common_"):
				self.order.append(fname)
			end = max(end, off + size)
			align = max(align, min(size, 8))
		# the kernel's struct trace_event_raw_NAME: padded to its alignment
		self.size = (end + align - 1) // align * align

	def payload(self, pid, values, flags=0, preempt=0, event_id=None):
		data = bytearray(self.size)

		def put(name, value):
			off, size, _ = self.fields[name]
			data[off:off + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
		put("common_type", self.id if event_id is None else event_id)
		put("common_flags", flags)
		put("common_preempt_count", preempt)
		put("common_pid", pid)
		for name, value in values.items():
			put(name, value)
		return bytes(data)


def load_formats():
	fmts = {}
	for ev in EVENTS:
		fmts[ev] = Format(os.path.join(FORMATS, "kvm", ev, "format"), "kvm")
	return fmts


def refresh_formats(tracefs):
	os.makedirs(FORMATS, exist_ok=True)
	for f in ("header_page", "header_event"):
		shutil.copyfile(os.path.join(tracefs, "events", f), os.path.join(FORMATS, f))
	for ev in EVENTS:
		os.makedirs(os.path.join(FORMATS, "kvm", ev), exist_ok=True)
		shutil.copyfile(os.path.join(tracefs, "events", "kvm", ev, "format"),
				os.path.join(FORMATS, "kvm", ev, "format"))
	with open(os.path.join(FORMATS, "KERNEL_RELEASE"), "w") as f:
		f.write(os.uname().release + "\n")


# ---------------------------------------------------------------- encoding

class Event:
	def __init__(self, ts, pid, name, **values):
		self.ts, self.pid, self.name, self.values = ts, pid, name, values
		self.cpu = None
		self.lost_before = 0
		self.event_id = None	# override common_type (corrupt samples)


def rec_header(type_len, delta):
	assert 0 <= type_len < 32 and 0 <= delta <= TS_MASK
	return struct.pack("<I", type_len | (delta << 5))


class Page:
	"""One sub-buffer, written record by record as the kernel's writer would."""

	def __init__(self, fmts, ts):
		self.fmts = fmts
		self.ts = ts		# the sub-buffer's time stamp
		self.cur = ts		# time of the last record, as a reader sees it
		self.data = bytearray()
		self.events = []	# the logical events, in order
		self.need_stamp = False	# after a discarded event
		self.flags = 0
		self.missed = 0		# >0 stored count, -1 flag only
		self.sign_extend = False	# RB_MISSED_EVENTS as an int, sign-extended into the word

	def offset(self):
		"""Offset in the sub-buffer of the next record."""
		return HDR + len(self.data)

	def extend(self, delta):
		"""Time extend; at index 0 the kernel writes a zero one."""
		assert 0 <= delta < 1 << 59
		self.data += rec_header(TYPE_EXTEND, delta & TS_MASK) + struct.pack("<I", delta >> TS_BITS)
		self.cur += delta

	def stamp(self, ts):
		"""Absolute time stamp: 59 bits stored, the top 5 come from the reader's clock."""
		low = ts & ~TS_MSB
		assert ts & TS_MSB == self.cur & TS_MSB, "absolute stamp across a 2^59 boundary"
		self.data += rec_header(TYPE_STAMP, low & TS_MASK) + struct.pack("<I", low >> TS_BITS)
		self.cur = ts
		self.need_stamp = False

	def raw_record(self, payload, delta, array=False):
		length = (len(payload) + 3) // 4 * 4
		payload = payload + bytes(length - len(payload))
		if length <= MAX_SMALL and not array:
			self.data += rec_header(length // 4, delta) + payload
		else:
			self.data += rec_header(0, delta) + struct.pack("<I", length + 4) + payload

	def add(self, ev, array=False, delta=None):
		"""An event at ev.ts: a time extend first when the delta needs more than 27 bits."""
		if delta is None:
			assert not self.need_stamp, "a discarded event must be followed by a time stamp"
			delta = ev.ts - self.cur
		assert delta >= 0, "time goes backwards: %d" % delta
		if delta > TS_MASK:
			self.extend(delta)
			delta = 0
		else:
			self.cur += delta
		assert self.cur == ev.ts
		fmt = self.fmts[ev.name]
		self.raw_record(fmt.payload(ev.pid, ev.values, event_id=ev.event_id), delta, array)
		self.events.append(ev)

	def discard(self, payload_len, delta):
		"""An event discarded after it was written (a filter said no): padding with
		its delta (never 0) and array[0] = its payload length.  Since 6.7 the
		kernel makes the next event carry an absolute time stamp."""
		assert payload_len % 4 == 0 and payload_len >= 4
		self.data += rec_header(TYPE_PADDING, delta or 1) + struct.pack("<I", payload_len)
		self.data += b"\xdd" * (payload_len - 4)
		self.need_stamp = True

	def pad_to_end(self):
		"""rb_reset_tail(): an event did not fit; the rest of the page is padding."""
		rest = DATA_MAX - len(self.data)
		assert rest >= 8
		self.data += rec_header(TYPE_PADDING, 1) + struct.pack("<I", rest - 4) + bytes(rest - 8)

	def lost(self, count):
		"""Events were lost before this page: count > 0 stored, -1 no room to store it."""
		self.missed = count

	def build(self, commit=None, tail=b""):
		"""The sub-buffer's bytes, as ring_buffer_read_page() leaves them."""
		data = bytes(self.data)
		c = len(data) if commit is None else commit
		if self.missed:
			c |= MISSED_EVENTS
			if self.missed > 0:
				assert len(data) + LONG <= DATA_MAX, "no room for the missed count"
				data += struct.pack("<Q", self.missed)
				c |= MISSED_STORED
			else:
				assert DATA_MAX - len(data) < LONG, "the kernel stores the count when it fits"
			if self.sign_extend:
				c |= 0xffffffff00000000
		if self.events:
			self.events[0].lost_before = self.missed
		data += tail
		assert len(data) <= DATA_MAX
		return struct.pack("<QQ", self.ts, c) + data + bytes(DATA_MAX - len(data))


# ------------------------------------------------------ expected printing

def comm_of(sample, pid):
	if pid == 0:
		return "<idle>"
	return sample.cmdlines.get(pid, "<...>")


def event_info(ev):
	"""TEP_PRINT_INFO of the event: its format's print fmt, by hand."""
	v = ev.values
	g = lambda k: v.get(k, 0)
	if ev.name == "kvm_exit":
		isa, reason = g("isa"), g("exit_reason")
		if isa == 1:
			code = reason & 0xffff
			name = VMX_NAMES.get(code, "0x%x" % code)
			flags = reason & ~0xffff
			name += (" " if flags else "") + ("FAILED_VMENTRY" if flags & 0x80000000 else "")
		else:
			name = SVM_NAMES.get(reason, "0x%x" % reason)
		return ("vcpu %u reason %s rip 0x%x info1 0x%016x info2 0x%016x intr_info 0x%08x "
			"error_code 0x%08x requests 0x%016x" % (g("vcpu_id"), name, g("guest_rip"),
			g("info1"), g("info2"), g("intr_info"), g("error_code"), g("requests")))
	if ev.name == "kvm_entry":
		return "vcpu %u, rip 0x%x intr_info 0x%08x error_code 0x%08x%s" % (
			g("vcpu_id"), g("rip"), g("intr_info"), g("error_code"),
			"[immediate exit]" if g("immediate_exit") else "")
	if ev.name == "kvm_pio":
		return "pio_%s at 0x%x size %d count %d val 0x%x %s" % (
			"write" if g("rw") else "read", g("port"), g("size"), g("count"), g("val"),
			"(...)" if g("count") > 1 else "")
	if ev.name == "kvm_userspace_exit":
		# The print fmt says: errno < 0 ? (errno == -4 ? "restart" : "error") (-errno)
		# : KVM_EXIT_<reason> (reason).  libtraceevent 1.7.1 reads errno as
		# unsigned there, so lib/reader/domain.c prints this event itself.
		err = g("errno")
		err = err - (1 << 32) if err >= 1 << 31 else err
		if err < 0:
			return "reason %s (%d)" % ("restart" if err == -4 else "error", -err)
		return "reason KVM_EXIT_%s (%d)" % (USERSPACE_NAMES[g("reason")], g("reason"))
	raise ValueError(ev.name)


def text_line(sample, ev):
	out = ""
	if ev.lost_before < 0:
		out += "CPU:%d [LOST EVENTS]\n" % ev.cpu
	elif ev.lost_before > 0:
		out += "CPU:%d [LOST %d EVENTS]\n" % (ev.cpu, ev.lost_before)
	out += "%16s-%-7d [%03d] %d.%09d: kvm:%s %s\n" % (
		comm_of(sample, ev.pid), ev.pid, ev.cpu, ev.ts // 10**9, ev.ts % 10**9, ev.name,
		event_info(ev))
	return out


def json_line(sample, fmts, ev):
	fmt = fmts[ev.name]
	fields = []
	for name in fmt.order:
		_, size, signed = fmt.fields[name]
		val = ev.values.get(name, 0) & ((1 << (8 * size)) - 1)
		if signed and val >= 1 << (8 * size - 1):
			val -= 1 << (8 * size)
		fields.append('"%s":%d' % (name, val))
	line = '{"ts":%d,"domain":"host","cpu":%d,"pid":%d,"comm":%s,"event":"kvm:%s"' % (
		ev.ts, ev.cpu, ev.pid, json.dumps(comm_of(sample, ev.pid)), ev.name)
	if ev.lost_before:
		line += ',"lost_before":%d' % ev.lost_before
	return line + ',"fields":{%s}}\n' % ",".join(fields)


def exit_reason_name(isa, code):
	if isa == 1:
		name = VMX_NAMES.get(code & 0xffff)
		return name if name else "vmx:0x%x" % code
	name = SVM_NAMES.get(code)
	return name if name else "svm:0x%x" % code


def stat_json(sample, events):
	"""kvm_exit paired with the next kvm_entry of the same thread."""
	rows, order, pending = {}, [], {}
	for ev in events:
		if ev.name == "kvm_entry":
			p = pending.pop(ev.pid, None)
			if p and ev.ts >= p[0]:
				p[1]["lat"].append(ev.ts - p[0])
		elif ev.name == "kvm_exit":
			tgid = sample.tgids.get(ev.pid) or sample.vcpus.get(ev.pid, (ev.pid, 0, ""))[0]
			vm = sample.vcpus[ev.pid][2] if ev.pid in sample.vcpus else comm_of(sample, tgid)
			vm = "pid" if vm == "<...>" else vm
			key = ("%s[%d]" % (vm, tgid), str(ev.values["vcpu_id"]),
			       exit_reason_name(ev.values["isa"], ev.values["exit_reason"]))
			if key not in rows:
				rows[key] = {"count": 0, "lat": []}
				order.append(key)
			rows[key]["count"] += 1
			pending[ev.pid] = (ev.ts, rows[key])
	out = []
	for key in order:
		r = rows[key]
		lat = sorted(r["lat"])
		total = sum(lat)
		out.append((-total, -r["count"], key[2], key, r, lat))
	out.sort(key=lambda x: x[:3])
	for a, b in zip(out, out[1:]):
		assert a[:3] != b[:3], "rows tie: the tool's order would be undefined"
	text = "["
	for i, (_, _, _, key, r, lat) in enumerate(out):
		text += ("," if i else "") + '\n{"vm":%s,"vcpu":%s,"reason":%s,"count":%d' % (
			json.dumps(key[0]), json.dumps(key[1]), json.dumps(key[2]), r["count"])
		if lat:
			n = len(lat)
			p = lambda pct: lat[max((n * pct + 99) // 100, 1) - 1]
			text += ',"min_ns":%d,"p50_ns":%d,"p99_ns":%d,"max_ns":%d,"total_ns":%d' % (
				lat[0], p(50), p(99), lat[-1], sum(lat))
		else:
			text += ',"min_ns":null,"p50_ns":null,"p99_ns":null,"max_ns":null,"total_ns":null'
		text += ',"mode":"exits"}'
	return text + "\n]\n"


# ---------------------------------------------------------------- samples

class Sample:
	def __init__(self, name, fmts, ncpus=2, session_meta=True):
		self.name, self.fmts, self.ncpus = name, fmts, ncpus
		self.session_meta = session_meta
		self.domain_meta = True
		self.cpus = {c: [] for c in range(ncpus)}	# cpu -> [page bytes]
		self.events = {c: [] for c in range(ncpus)}	# cpu -> [Event], file order
		self.cmdlines, self.tgids, self.vcpus = {}, {}, {}	# vcpus: tid -> (vm_pid, vcpu, name)
		self.stat = False
		self.lost = {}
		self.errors = []	# (cpu, events_before, message)
		self.warnings = []	# at open time
		self.tail = {}		# cpu -> bytes appended after the pages

	def page(self, cpu, page, **kw):
		for ev in page.events:
			ev.cpu = cpu
		self.cpus[cpu].append(page.build(**kw))
		self.events[cpu].extend(page.events)
		return len(self.cpus[cpu]) - 1

	def raw_path(self, cpu):
		return "tests/samples/%s/host/cpu%d.raw" % (self.name, cpu)

	def corrupt(self, cpu, offset, why):
		"""The reader must stop at @offset of cpuN.raw, after the events so far."""
		self.errors.append((cpu, len(self.events[cpu]), 'Corrupt stream file: path="%s", '
				    "offset=%d: %s" % (self.raw_path(cpu), offset, why)))

	def merged(self):
		"""The events a reader delivers: in (ts, cpu) order, up to the first
		corruption.  Streams are read one record ahead, so a bad record
		stops the reader once the event before it (on its CPU) is out."""
		allev = sorted((ev for c in self.events for ev in self.events[c]),
			       key=lambda e: (e.ts, e.cpu))
		if not self.errors:
			return allev, None
		cut, msg = None, None
		for cpu, before, m in self.errors:
			if before == 0:
				return [], m	# found while opening
			last = self.events[cpu][before - 1]
			i = allev.index(last) + 1
			if cut is None or i < cut:
				cut, msg = i, m
		return allev[:cut], msg

	def write(self):
		d = os.path.join(HERE, self.name)
		if os.path.isdir(d):
			shutil.rmtree(d)
		h = os.path.join(d, "host")
		os.makedirs(h)
		for f in ("header_page", "header_event"):
			shutil.copyfile(os.path.join(FORMATS, f), os.path.join(h, f))
		for ev in EVENTS:
			os.makedirs(os.path.join(h, "events", "kvm", ev))
			shutil.copyfile(os.path.join(FORMATS, "kvm", ev, "format"),
					os.path.join(h, "events", "kvm", ev, "format"))
		release = open(os.path.join(FORMATS, "KERNEL_RELEASE")).read().strip()
		nevents = {c: len(self.events[c]) for c in self.events}
		meta = [("domain", "host"), ("kind", "linux-ftrace"), ("clock", "local"),
			("ncpus", self.ncpus), ("kernel_release", release), ("hostname", "sample"),
			("machine", "x86_64"), ("long_size", LONG), ("endian", "little"),
			("subbuf_size", SUBBUF), ("buffer_kb", 4096)]
		for c in range(self.ncpus):
			meta += [("cpu%d.bytes" % c, sum(len(p) for p in self.cpus[c])),
				 ("cpu%d.events" % c, nevents[c]), ("cpu%d.lost" % c, self.lost.get(c, 0))]
		meta += [("events_total", sum(nevents.values())), ("lost_total", sum(self.lost.values())),
			 ("bytes_total", sum(len(p) for c in self.cpus for p in self.cpus[c])),
			 ("events", ",".join("kvm:" + e for e in EVENTS))]
		if self.domain_meta:
			with open(os.path.join(h, "meta"), "w") as f:
				f.writelines("%s=%s\n" % kv for kv in meta)
		with open(os.path.join(h, "saved_cmdlines"), "w") as f:
			f.writelines("%d %s\n" % kv for kv in sorted(self.cmdlines.items()))
		with open(os.path.join(h, "saved_tgids"), "w") as f:
			f.writelines("%d %d\n" % kv for kv in sorted(self.tgids.items()))
		if self.vcpus:
			with open(os.path.join(h, "vcpus"), "w") as f:
				f.write("# tid vm_pid vcpu vm_name\n")
				for tid, (vm_pid, vcpu, name) in sorted(self.vcpus.items()):
					f.write("%d %d %d %s\n" % (tid, vm_pid, vcpu, name))
		for c in range(self.ncpus):
			if self.cpus[c] or c in self.tail:
				with open(os.path.join(h, "cpu%d.raw" % c), "wb") as f:
					f.write(b"".join(self.cpus[c]) + self.tail.get(c, b""))
		if self.session_meta:
			with open(os.path.join(d, "session.meta"), "w") as f:
				f.write("format=tracevisor-session\nversion=1\ncreated=2026-11-22T12:00:00Z\n"
					"domains=host\nreference_domain=host\n")

		events, error = self.merged()
		with open(os.path.join(d, "expected.txt"), "w") as f:
			f.write("".join(text_line(self, ev) for ev in events))
		with open(os.path.join(d, "expected.json"), "w") as f:
			f.write("".join(json_line(self, self.fmts, ev) for ev in events))
		if self.stat:
			assert not error
			with open(os.path.join(d, "expected-stat.json"), "w") as f:
				f.write(stat_json(self, events))
		stderr = ["warning: " + w for w in self.warnings]
		if not self.session_meta:
			stderr = ['warning: Incomplete session: path="tests/samples/%s" has no session.meta '
				  "(the recording did not finish): showing what reached the disk" % self.name] + stderr
		if error:
			stderr.append(error)
		if stderr:
			with open(os.path.join(d, "expected.stderr"), "w") as f:
				f.writelines("tracevisor report: %s\n" % s for s in stderr)


SEC = 10**9
RIP_SVM = 0xffffffff81a3c5d2
RIP_VMX = 0xffffffff8107e1b4


def svm_exits(fmts):
	"""(a) SVM kvm_exit reasons io, cpuid, hlt, npf and an unknown code, each
	followed by kvm_entry on the same thread; vCPU 0 on CPU 0, vCPU 1 on CPU 1.
	VM named by the vcpus file (vm1, pid 1000)."""
	s = Sample("svm-exits", fmts)
	s.stat = True
	s.cmdlines = {1000: "qemu-system-x86", 1001: "CPU 0/KVM", 1002: "CPU 1/KVM"}
	s.tgids = {1001: 1000, 1002: 1000}
	s.vcpus = {1001: (1000, 0, "vm1"), 1002: (1000, 1, "vm1")}

	def run(cpu, pid, vcpu, t0, plan):
		"""plan: (gap before the exit, reason, info1, info2, exit->entry ns, extras)"""
		p = Page(fmts, t0)
		t = t0
		for gap, reason, info1, info2, lat, extra in plan:
			t += gap
			p.add(Event(t, pid, "kvm_exit", exit_reason=reason, guest_rip=RIP_SVM + reason,
				    isa=2, info1=info1, info2=info2, vcpu_id=vcpu))
			for dt, name, vals in extra:
				p.add(Event(t + dt, pid, name, **vals))
			p.add(Event(t + lat, pid, "kvm_entry", vcpu_id=vcpu, rip=RIP_SVM + reason + 2))
			t += lat
		s.page(cpu, p)

	io_out = [(400, "kvm_pio", dict(rw=1, port=0x3f8, size=1, count=1, val=0x41)),
		  (900, "kvm_userspace_exit", dict(reason=2, errno=0))]
	run(0, 1001, 0, 1234 * SEC + 1000, [
		(0, 0x7b, 0x3f80210, 0xffffffff81a3c5d4, 12000, io_out),	# io: out to COM1
		(3000, 0x72, 0, 0, 810, []),					# cpuid
		(5000, 0x78, 0, 0, 150000, []),					# hlt
		(2000, 0x400, 0x100000004, 0xfee00030, 2100, []),		# npf (MMIO gpa)
		(700, 0x3ff, 0x11, 0x22, 640, []),				# unknown code
		(900, 0x7b, 0x3f80210, 0xffffffff81a3c5d4, 11000, io_out),	# io again
	])
	run(1, 1002, 1, 1234 * SEC + 1500, [
		(0, 0x400, 0x100000006, 0x7ff000, 3300, []),			# npf
		(1000, 0x400, 0x100000006, 0x7fe000, 3700, []),			# npf
		(2500, 0x72, 0, 0, 900, []),					# cpuid
		(4000, 0x78, 0, 0, 420000, []),					# hlt
	])
	return s


def vmx_exits(fmts):
	"""(b) VMX reasons EPT_VIOLATION, IO_INSTRUCTION, HLT, CPUID,
	EXTERNAL_INTERRUPT and a failed VM entry (0x80000021: INVALID_STATE with
	the FAILED_VMENTRY bit), an unknown code, and a last exit with no entry
	(the recording ended).  No vcpus file: the VM is named from saved_tgids
	and saved_cmdlines."""
	s = Sample("vmx-exits", fmts)
	s.stat = True
	s.cmdlines = {2000: "qemu-system-x86", 2001: "CPU 0/KVM", 2002: "CPU 1/KVM"}
	s.tgids = {2001: 2000, 2002: 2000}
	t0 = 77 * SEC + 123456789

	p = Page(fmts, t0)
	t = t0
	for gap, reason, qual, lat, intr in [
			(0, 48, 0x181, 5200, 0),		# EPT_VIOLATION
			(1500, 48, 0x182, 4800, 0),		# EPT_VIOLATION
			(800, 30, 0x3f80008, 9000, 0),		# IO_INSTRUCTION
			(600, 10, 0, 700, 0),			# CPUID
			(2000, 1, 0, 1300, 0x800000ef),		# EXTERNAL_INTERRUPT
			(3000, 12, 0, 250000, 0),		# HLT
			(1000, 0x23, 0, 1900, 0)]:		# 35: not an exit reason
		t += gap
		p.add(Event(t, 2001, "kvm_exit", exit_reason=reason, guest_rip=RIP_VMX + gap, isa=1,
			    info1=qual, info2=0, intr_info=intr, vcpu_id=0))
		if reason == 30:
			p.add(Event(t + 500, 2001, "kvm_pio", rw=0, port=0x3f8 + 5, size=1, count=1, val=0x60))
			p.add(Event(t + 1100, 2001, "kvm_userspace_exit", reason=2, errno=0))
		p.add(Event(t + lat, 2001, "kvm_entry", vcpu_id=0, rip=RIP_VMX + gap,
			    immediate_exit=1 if reason == 1 else 0))
		t += lat
	s.page(0, p)

	t1 = t0 + 333
	p = Page(fmts, t1)
	p.add(Event(t1, 2002, "kvm_exit", exit_reason=10, guest_rip=RIP_VMX, isa=1, vcpu_id=1))
	p.add(Event(t1 + 650, 2002, "kvm_entry", vcpu_id=1, rip=RIP_VMX + 2))
	# a failed VM entry: KVM_EXIT_FAIL_ENTRY to user space, entered again later
	t = t1 + 10000
	p.add(Event(t, 2002, "kvm_exit", exit_reason=0x80000021, guest_rip=0xfff0, isa=1,
		    info1=0, info2=0, vcpu_id=1))
	p.add(Event(t + 2000, 2002, "kvm_userspace_exit", reason=9, errno=0))
	p.add(Event(t + 88000, 2002, "kvm_entry", vcpu_id=1, rip=0xfff0))
	# interrupted ioctl: KVM_RUN returned -EINTR (errno -4 prints "restart")
	t += 100000
	p.add(Event(t, 2002, "kvm_exit", exit_reason=1, guest_rip=RIP_VMX, isa=1,
		    intr_info=0x800000ec, vcpu_id=1))
	p.add(Event(t + 1200, 2002, "kvm_userspace_exit", reason=10, errno=-4))
	p.add(Event(t + 4000, 2002, "kvm_entry", vcpu_id=1, rip=RIP_VMX))
	# the last exit: no entry before the end of the recording
	p.add(Event(t + 9000, 2002, "kvm_exit", exit_reason=12, guest_rip=RIP_VMX + 7, isa=1,
		    vcpu_id=1))
	s.page(1, p)
	return s


def time_extend(fmts):
	"""(c) Deltas of 2^27 - 1 ns (the largest that fits a record header),
	2^27 ns and more (time extends), seconds, 2^40 ns, and a page whose
	first record is the zero time extend the kernel writes at index 0.
	pid 3001 has no saved_cmdlines entry ("<...>")."""
	s = Sample("time-extend", fmts, ncpus=1)
	s.cmdlines = {3000: "tv-testvmm"}
	s.tgids = {3000: 3000}
	t0 = 10 * SEC
	pio = lambda ts, pid=3000, val=0: Event(ts, pid, "kvm_pio", rw=1, port=0x80, size=1,
						count=1, val=val)
	p = Page(fmts, t0)
	t = t0
	for i, delta in enumerate([0, (1 << 27) - 1, 1 << 27, (1 << 27) + 1, 200 * 10**6, 3 * SEC,
				   5, 1 << 40, (1 << 32) + 12345]):
		t += delta
		p.add(pio(t, val=i))
	p.add(Event(t + 70, 3001, "kvm_userspace_exit", reason=2, errno=0))
	s.page(0, p)
	t += 70 + 5 * SEC
	p = Page(fmts, t)
	p.extend(0)			# needed an extend, but first on the page: zeroed
	p.add(pio(t, val=100))
	p.add(Event(t + (1 << 28) + 17, 3000, "kvm_userspace_exit", reason=5, errno=0))
	s.page(0, p)
	return s


def abs_ts(fmts):
	"""(d) Absolute time stamps: after an interrupted write (also as the
	first record of a page, which then keeps its delta), going forwards
	by less and more than 2^27; on CPU 1 a clock past 2^59 whose absolute
	stamps store only 59 bits (the top 5 come from the page)."""
	s = Sample("abs-ts", fmts)
	s.cmdlines = {4000: "vmm", 4001: "vcpu0", 4002: "vcpu1"}
	s.tgids = {4001: 4000, 4002: 4000}
	ue = lambda ts, pid, reason=2: Event(ts, pid, "kvm_userspace_exit", reason=reason, errno=0)
	t0 = 500 * SEC + 42
	p = Page(fmts, t0)
	p.add(ue(t0, 4001))
	p.stamp(t0 + 1000)
	p.add(ue(t0 + 1000, 4001))		# delta 0 after the stamp
	p.add(ue(t0 + 1250, 4001, 5))
	p.stamp(t0 + 3 * SEC + 7)
	p.add(ue(t0 + 3 * SEC + 7 + 30, 4001), delta=30)	# a delta after the stamp
	p.add(ue(t0 + 3 * SEC + 7 + 30 + (1 << 29), 4001, 6))	# then an extend
	s.page(0, p)
	t1 = t0 + 10 * SEC
	p = Page(fmts, t1)
	p.stamp(t1)				# interrupted first write: stamp at index 0
	p.add(ue(t1, 4001))
	p.stamp(t1 + 999)
	p.add(ue(t1 + 999, 4001))
	s.page(0, p)

	big = (1 << 59) + 7 * SEC + 5		# e.g. x86-tsc after years of uptime
	p = Page(fmts, big)
	p.add(ue(big, 4002))
	p.stamp(big + 2 * SEC)
	p.add(ue(big + 2 * SEC, 4002))
	p.stamp(big + 2 * SEC + 64)
	p.add(ue(big + 2 * SEC + 64 + 3, 4002, 9), delta=3)
	s.page(1, p)
	return s


def padding(fmts):
	"""(e) Padding: a discarded event in mid page (then the absolute time
	stamp the kernel forces), a discarded first event, a record with its
	length in array[0] (type_len 0, as 8-byte-aligned architectures write
	every event), end-of-page padding (commit = whole page) and a page whose
	last bytes are a null padding header beyond the commit."""
	s = Sample("padding", fmts, ncpus=1)
	s.cmdlines = {5000: "qemu", 5001: "CPU 0/KVM"}
	s.tgids = {5001: 5000}
	exit_ = lambda ts, reason: Event(ts, 5001, "kvm_exit", exit_reason=reason, guest_rip=0x1000,
					 isa=2, vcpu_id=0)
	entry = lambda ts: Event(ts, 5001, "kvm_entry", vcpu_id=0, rip=0x1002)
	t0 = 2000 * SEC
	p = Page(fmts, t0)
	p.add(exit_(t0, 0x7b))
	p.discard(72, 300)			# a discarded kvm_exit, 300 ns later
	p.stamp(t0 + 800)
	p.add(entry(t0 + 800))
	p.add(exit_(t0 + 2000, 0x72), array=True)
	p.add(entry(t0 + 2600))
	p.pad_to_end()
	s.page(0, p)
	t1 = t0 + SEC
	p = Page(fmts, t1)
	p.discard(28, 0)			# discarded first event: its delta 0 becomes 1
	p.stamp(t1 + 40)
	p.add(exit_(t1 + 40, 0x78))
	p.add(entry(t1 + 90040))
	s.page(0, p)
	t2 = t1 + 2 * SEC
	p = Page(fmts, t2)
	p.add(exit_(t2, 0x400))
	# discarded events and their stamps, leaving 4 bytes after the entry
	fill = DATA_MAX - len(p.data) - 4 - (4 + fmts["kvm_entry"].size)
	for i in range(fill // 84):
		p.discard(72 + (fill % 84 if i == fill // 84 - 1 else 0), 10)
		p.stamp(t2 + 1)
	p.add(entry(t2 + 500))
	# fewer than 8 bytes left: a null padding header, not counted in commit
	rest = DATA_MAX - len(p.data)
	assert 4 <= rest < 8, rest
	s.page(0, p, tail=rec_header(TYPE_PADDING, 0))
	return s


def missed(fmts):
	"""(f) Lost events: a page with RB_MISSED_EVENTS and the count stored
	after the data; a full page (ends in padding) with the flag and no room
	for the count, also with the flag sign-extended into the commit word's
	high half (kernels whose RB_MISSED_EVENTS is an int); and a page with a
	stored count whose first record is an absolute time stamp (an
	interrupted first write)."""
	s = Sample("missed", fmts)
	s.cmdlines = {6000: "qemu", 6001: "CPU 0/KVM", 6002: "CPU 1/KVM"}
	s.tgids = {6001: 6000, 6002: 6000}
	s.lost = {0: 17 + 5, 1: 3}
	pio = lambda ts, pid, val: Event(ts, pid, "kvm_pio", rw=1, port=0x510, size=2, count=1, val=val)
	t = 3 * SEC
	p = Page(fmts, t)
	p.add(pio(t, 6001, 1))
	p.add(pio(t + 10, 6001, 2))
	s.page(0, p)
	t += 100000
	p = Page(fmts, t)
	p.lost(17)
	p.add(pio(t, 6001, 3))
	p.add(pio(t + 10, 6001, 4))
	s.page(0, p)
	t += 100000
	p = Page(fmts, t)
	p.lost(-1)
	p.add(pio(t, 6001, 5))
	p.pad_to_end()
	s.page(0, p)
	# the same from a kernel whose RB_MISSED_EVENTS is an int: its commit word
	# sign-extended (0xffffffff80000ff0), as an overwriting ring gives it
	t += 100000
	p = Page(fmts, t)
	p.lost(-1)
	p.sign_extend = True
	p.add(pio(t, 6001, 50))
	p.pad_to_end()
	s.page(0, p)
	t += 100000
	p = Page(fmts, t)
	p.lost(5)
	p.stamp(t)
	p.add(pio(t, 6001, 6))
	p.add(pio(t + 20, 6001, 7))
	s.page(0, p)

	t = 3 * SEC + 5
	p = Page(fmts, t)
	p.add(pio(t, 6002, 8))
	s.page(1, p)
	t += 150000
	p = Page(fmts, t)
	p.lost(3)
	p.discard(28, 0)		# a discarded first event, then the stamp
	p.stamp(t + 4)
	p.add(pio(t + 4, 6002, 9))
	s.page(1, p)
	return s


def simple_page(fmts, t, pid, n, step=1000, val0=0):
	p = Page(fmts, t)
	for i in range(n):
		p.add(Event(t + i * step, pid, "kvm_pio", rw=0, port=0x60, size=1, count=1, val=val0 + i))
	return p


def truncated(fmts):
	"""(g) cpu0.raw ends 1000 bytes into its second sub-buffer."""
	s = Sample("truncated", fmts, ncpus=1)
	s.cmdlines = {7000: "vmm"}
	s.page(0, simple_page(fmts, 9 * SEC, 7000, 3))
	s.tail[0] = simple_page(fmts, 9 * SEC + 10000, 7000, 3, val0=3).build()[:1000]
	s.warnings.append('Stream file is not a whole number of sub-buffers: path="%s", size=%d, '
			  "subbuf_size=%d" % (s.raw_path(0), SUBBUF + 1000, SUBBUF))
	s.corrupt(0, SUBBUF, "truncated sub-buffer")
	return s


def corrupt_commit(fmts):
	"""(h) The second sub-buffer of CPU 0 claims 5000 bytes of data; CPU 1's
	events before that point are still delivered, the later ones are not."""
	s = Sample("corrupt-commit", fmts)
	s.cmdlines = {7100: "vmm"}
	s.page(0, simple_page(fmts, 9 * SEC, 7100, 3, step=1000))
	s.page(1, simple_page(fmts, 9 * SEC + 500, 7100, 5, step=1000, val0=10))
	bad = simple_page(fmts, 9 * SEC + 3000, 7100, 2, val0=3)
	s.corrupt(0, SUBBUF, "sub-buffer commit exceeds its size")
	s.cpus[0].append(bad.build(commit=5000))
	return s


def corrupt_record(fmts):
	"""(i) The third record of CPU 0's page says 72 bytes of payload but the
	commit ends 20 bytes into it: the reader names the record's offset."""
	s = Sample("corrupt-record", fmts, ncpus=1)
	s.cmdlines = {7200: "vmm"}
	t = 9 * SEC
	p = simple_page(fmts, t, 7200, 2)
	off = p.offset()
	p.add(Event(t + 5000, 7200, "kvm_exit", exit_reason=0x7b, isa=2, vcpu_id=0))
	bad_events = p.events[2:]
	p.events = p.events[:2]
	s.page(0, p, commit=off - HDR + 4 + 20)
	s.corrupt(0, off, "record outside its sub-buffer")
	del bad_events
	return s


def corrupt_event_id(fmts):
	"""(i) A record whose common_type is no event of the session (999)."""
	s = Sample("corrupt-event-id", fmts, ncpus=1)
	s.cmdlines = {7300: "vmm"}
	t = 9 * SEC
	p = simple_page(fmts, t, 7300, 2)
	off = p.offset()
	ev = Event(t + 5000, 7300, "kvm_pio", rw=0, port=0x61, size=1, count=1, val=1)
	ev.event_id = 999
	p.add(ev)
	p.add(Event(t + 6000, 7300, "kvm_pio", rw=0, port=0x61, size=1, count=1, val=2))
	p.events = p.events[:2]
	s.page(0, p)
	s.corrupt(0, off, "unknown event id")
	return s


def corrupt_padding(fmts):
	"""A padding record whose length does not move forwards (array[0] =
	-4 would make kbuffer read the same record for ever)."""
	s = Sample("corrupt-padding", fmts, ncpus=1)
	s.cmdlines = {7400: "vmm"}
	t = 9 * SEC
	p = simple_page(fmts, t, 7400, 2)
	off = p.offset()
	p.data += rec_header(TYPE_PADDING, 5) + struct.pack("<I", 0xfffffffc)
	p.stamp(t + 4000)
	p.add(Event(t + 4000, 7400, "kvm_pio", rw=0, port=0x61, size=1, count=1, val=2))
	p.events = p.events[:2]
	s.page(0, p)
	s.corrupt(0, off, "padding record does not advance")
	return s


def no_session_meta(fmts):
	"""(j) A complete host/ but no session.meta: an interrupted recording.
	What reached the disk decodes, with one warning (issue #11, item 9)."""
	s = Sample("no-session-meta", fmts, ncpus=1, session_meta=False)
	s.cmdlines = {7500: "vmm"}
	s.page(0, simple_page(fmts, SEC, 7500, 2))
	return s


def killed_recorder(fmts):
	"""(k) A recorder killed by SIGKILL: formats and stream files, but neither
	session.meta nor host/meta (written at the end), and a partial last
	write.  The CPU count comes from the stream files, the sizes from
	header_page; whole sub-buffers decode, the partial tail is dropped."""
	s = Sample("killed-recorder", fmts, ncpus=2, session_meta=False)
	s.domain_meta = False
	s.cmdlines = {7500: "vmm", 7501: "vmm"}
	s.page(0, simple_page(fmts, SEC, 7500, 3))
	s.page(1, simple_page(fmts, SEC + 500, 7501, 2))
	s.tail[1] = b"\x01" * 1000
	return s


SAMPLES = [svm_exits, vmx_exits, time_extend, abs_ts, padding, missed, truncated,
	   corrupt_commit, corrupt_record, corrupt_event_id, corrupt_padding, no_session_meta,
	   killed_recorder]


def main(argv):
	if len(argv) > 1 and argv[1] == "--from-tracefs":
		refresh_formats(argv[2] if len(argv) > 2 else "/sys/kernel/tracing")
	elif len(argv) > 1:
		sys.exit(__doc__)
	fmts = load_formats()
	for make in SAMPLES:
		make(fmts).write()


if __name__ == "__main__":
	main(sys.argv)
