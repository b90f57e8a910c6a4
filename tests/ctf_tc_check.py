#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
Check a CTF 1.8 trace directory against the rules Trace Compass's CTF reader
enforces (or silently depends on), as read in its sources (doc/ctf-export.md
lists them with the file of each).  Trace Compass itself cannot run here, so
this re-implements those rules on the bytes tracevisor writes: the TSDL is
tokenised with the rules of CTFLexer.g, parsed for the constructs the
exporter emits, and every packet and event of every stream file is decoded
from the declared layouts.

usage: ctf_tc_check.py [-v] TRACE_DIR
Exit 0: no rule broken.  Exit 1: one line per broken rule on stdout.
Exit 2: the checker cannot decide (a TSDL construct it does not implement).
"""
import os
import re
import struct
import sys

# CTFLexer.g: these lex as keywords, so none can be a declarator (field name).
TC_KEYWORDS = {
    "align", "const", "char", "double", "enum", "event", "floating_point", "float",
    "integer", "int", "long", "short", "signed", "stream", "string", "struct", "trace",
    "typealias", "typedef", "unsigned", "variant", "void", "_Bool", "_Complex",
    "_Imaginary", "env", "clock", "callsite", "NaN",
}
CTF_MAGIC = 0xC1FC1FC1
INT32_MAX = (1 << 31) - 1


class Unsupported(Exception):
	"""A construct this checker does not implement: it cannot decide."""


class Violations:
	"""Broken rules; one that repeats in a file is shown once, with a count."""

	def __init__(self):
		self.lines = []
		self.repeats = {}

	def add(self, where, rule, source, key=None):
		if key is not None:
			if key in self.repeats:
				self.repeats[key][1] += 1
				return
			self.repeats[key] = [len(self.lines), 0]
		self.lines.append("%s: %s (Trace Compass %s)" % (where, rule, source))

	def done(self):
		for i, n in self.repeats.values():
			if n:
				self.lines[i] += " [and %d more like it in this file]" % n


# ---------------------------------------------------------------- lexer --

TOKEN_RE = re.compile(r"""
	(?P<ws>[ \t\r\n\f]+)
	| (?P<comment>/\*.*?\*/)
	| (?P<linecomment>//[^\n]*\n)
	| (?P<string>L?"(?:\\.|[^"\\])*")
	| (?P<char>L?'(?:\\.|[^'\\])+')
	| (?P<hex>0[xX][0-9a-fA-F]+[uUlL]*)
	| (?P<oct>0[0-7]+[uUlL]*)
	| (?P<dec>[0-9]+[uUlL]*)
	| (?P<inf>[+-]inf)
	| (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
	| (?P<sym>:=|\.\.\.|->|[,:=<>\[\](){};*+.-])
	""", re.X | re.S)


def tokenize(text):
	tokens, pos = [], 0
	while pos < len(text):
		m = TOKEN_RE.match(text, pos)
		if not m:
			raise SyntaxError("metadata offset %d: no CTFLexer.g token starts with %r"
					  % (pos, text[pos:pos + 20]))
		kind = m.lastgroup
		val = m.group(kind)
		pos = m.end()
		if kind in ("ws", "comment", "linecomment"):
			continue
		if kind == "ident":
			kind = "kw" if val in TC_KEYWORDS else "ident"
		tokens.append((kind, val))
	return tokens


# --------------------------------------------------------------- types --

class Int:
	def __init__(self, size, align, signed, encoding, clock, base):
		self.size, self.align, self.signed = size, align, signed
		self.encoding, self.clock, self.base = encoding, clock, base


class Str:
	align = 8


class Struct:
	def __init__(self, fields, align):
		self.fields = fields		# [(name, type)]
		self.align = max([align, 1] + [t.align for _, t in fields])

	def field(self, name):
		for n, t in self.fields:
			if n == name:
				return t
		return None


class Array:
	def __init__(self, elem, length):
		self.elem, self.length, self.align = elem, length, elem.align


class Seq:
	def __init__(self, elem, length_name):
		self.elem, self.length_name, self.align = elem, length_name, elem.align


# -------------------------------------------------------------- parser --

class Parser:
	"""Recursive descent over the TSDL subset tracevisor writes."""

	def __init__(self, tokens, v):
		self.t, self.i, self.v = tokens, 0, v
		self.aliases = {}		# typealias name -> type
		self.trace = {}
		self.trace_count = 0
		self.env = []			# [(key, kind, value)]
		self.clocks = []		# [dict]
		self.streams = []		# [dict]
		self.events = []		# [dict]

	def peek(self, k=0):
		return self.t[self.i + k] if self.i + k < len(self.t) else ("eof", "")

	def next(self):
		tok = self.peek()
		self.i += 1
		return tok

	def expect(self, val):
		tok = self.next()
		if tok[1] != val:
			raise SyntaxError("expected %r, found %r (token %d)" % (val, tok[1], self.i))
		return tok

	def parse(self):
		while self.peek()[0] != "eof":
			kind, val = self.next()
			if val == "typealias":
				self.typealias()
			elif val == "trace":
				self.trace_count += 1
				self.trace = self.block("trace")
			elif val == "env":
				self.env_block()
			elif val == "clock":
				self.clocks.append(self.block("clock"))
			elif val == "stream":
				self.streams.append(self.block("stream"))
			elif val == "event":
				self.events.append(self.block("event"))
			else:
				raise Unsupported("top-level %r" % val)

	def typealias(self):
		t = self.type_spec("typealias")
		self.expect(":=")
		kind, name = self.next()
		if kind != "ident":
			raise SyntaxError("typealias name %r is not an identifier" % name)
		self.aliases[name] = t
		self.expect(";")

	def lhs(self):
		parts = [self.next()[1]]
		while self.peek()[1] == ".":
			self.next()
			parts.append(self.next()[1])
		return ".".join(parts)

	def value(self):
		kind, val = self.next()
		sign = ""
		while val in ("+", "-"):
			sign += val
			kind, val = self.next()
		if kind in ("dec", "hex", "oct"):
			return (kind, sign, val)
		if kind == "string":
			return ("string", "", val)
		parts = [val]
		while self.peek()[1] == ".":
			self.next()
			parts.append(self.next()[1])
		return ("ident", sign, ".".join(parts))

	def block(self, what):
		attrs = {}
		self.expect("{")
		while self.peek()[1] != "}":
			key = self.lhs()
			op = self.next()[1]
			if op == ":=":
				label = what
				if "name" in attrs:
					label += " " + attrs["name"][2].strip('"')
				if "id" in attrs:
					label += " " + attrs["id"][2]
				val = ("type", "", self.type_spec("%s %s" % (label, key)))
			elif op == "=":
				val = self.value()
			else:
				raise SyntaxError("%s: expected = or := after %s" % (what, key))
			if key in attrs:
				attrs.setdefault("_dups", []).append(key)
			attrs[key] = val
			self.expect(";")
		self.expect("}")
		self.expect(";")
		return attrs

	def env_block(self):
		self.expect("{")
		while self.peek()[1] != "}":
			key = self.lhs()
			self.expect("=")
			self.env.append((key,) + self.value()[0::2])
			self.expect(";")
		self.expect("}")
		self.expect(";")

	def integer_attrs(self):
		attrs = {}
		self.expect("{")
		while self.peek()[1] != "}":
			key = self.lhs()
			self.expect("=")
			attrs[key] = self.value()
			self.expect(";")
		self.expect("}")
		return attrs

	def type_spec(self, where):
		kind, val = self.next()
		if val == "integer":
			a = self.integer_attrs()
			num = lambda k, d: int(a[k][2], 0) if k in a else d
			size = num("size", 0)
			align = num("align", 1)
			signed = a.get("signed", ("ident", "", "false"))[2] in ("true", "TRUE", "1")
			enc = a.get("encoding", ("ident", "", "none"))[2]
			clock = a["map"][2] if "map" in a else None
			if not 1 <= size <= 64:
				self.v.add(where, "integer size %d not in 1..64" % size,
					   "IntegerDeclarationParser.java")
			if align & (align - 1):
				self.v.add(where, "integer align %d not a power of two" % align,
					   "AlignmentParser.java")
			if size % 8:
				raise Unsupported("%s: integer of %d bits" % (where, size))
			return Int(size, align, signed, enc, clock, num("base", 10))
		if val == "string":
			if self.peek()[1] == "{":
				self.integer_attrs()
			return Str()
		if val == "struct":
			if self.peek()[0] == "ident":
				raise Unsupported("%s: named struct %s" % (where, self.peek()[1]))
			t = self.struct_body(where)
			if self.peek()[1] == "align":
				self.next()
				self.expect("(")
				t.align = max(t.align, int(self.next()[1], 0))
				self.expect(")")
			return t
		if kind == "ident" and val in self.aliases:
			return self.aliases[val]
		raise Unsupported("%s: type %r" % (where, val))

	def struct_body(self, where):
		fields, names = [], set()
		self.expect("{")
		while self.peek()[1] != "}":
			t = self.type_spec(where)
			kind, name = self.next()
			if kind == "kw":
				self.v.add(where, "field %r is a TSDL keyword: not an IDENTIFIER "
					   "declarator" % name, "CTFLexer.g, CTFParser.g")
			elif kind != "ident":
				self.v.add(where, "field name %r is not an identifier" % name,
					   "CTFParser.g directDeclarator")
			elif name in self.aliases:
				self.v.add(where, "field %r is a type name: parsed as a type "
					   "specifier" % name, "CTFParser.g typedefName")
			while self.peek()[1] == "[":
				self.next()
				lk, lv = self.next()
				if lk in ("dec", "hex", "oct"):
					n = int(lv.rstrip("uUlL"), 0)
					if n < 1:
						self.v.add(where, "array %s has length %d" % (name, n),
							   "TypeDeclaratorParser.java (length < 1)")
					t = Array(t, n)
				else:
					lt = dict(fields).get(lv)
					if not isinstance(lt, Int) or lt.signed:
						self.v.add(where, "sequence %s: length %r is not an "
							   "earlier unsigned integer field" % (name, lv),
							   "TypeDeclaratorParser.java isSignedIntegerField")
					t = Seq(t, lv)
				self.expect("]")
			if name in names:
				self.v.add(where, "duplicate field %r" % name,
					   "StructDeclarationParser.java")
			names.add(name)
			fields.append((name, t))
			self.expect(";")
		self.expect("}")
		return Struct(fields, 1)


# ------------------------------------------------------------- decoding --

class Reader:
	def __init__(self, data, bitpos, limit_bits):
		self.d, self.pos, self.limit = data, bitpos, limit_bits

	def align(self, bits):
		if bits > 1:
			self.pos = (self.pos + bits - 1) // bits * bits

	def read(self, t, scope):
		self.align(t.align)
		if isinstance(t, Int):
			if self.pos % 8:
				raise Unsupported("integer at bit %d" % self.pos)
			n = t.size // 8
			if self.pos + t.size > self.limit:
				raise EOFError("integer past the packet's content_size")
			b = self.d[self.pos // 8:self.pos // 8 + n]
			self.pos += t.size
			return int.from_bytes(b, "little", signed=t.signed)
		if isinstance(t, Str):
			start = self.pos // 8
			end = self.d.find(b"\0", start, self.limit // 8)
			if end < 0:
				raise EOFError("string without NUL before content_size")
			self.pos = (end + 1) * 8
			return self.d[start:end]
		if isinstance(t, Struct):
			vals = {}
			for name, ft in t.fields:
				vals[name] = self.read(ft, vals)
			return vals
		if isinstance(t, Array):
			return [self.read(t.elem, scope) for _ in range(t.length)]
		if isinstance(t, Seq):
			n = scope.get(t.length_name)
			if not isinstance(n, int):
				raise EOFError("sequence length %s not found" % t.length_name)
			if n * max(t.elem.size if isinstance(t.elem, Int) else 8, 1) > \
			   self.limit - self.pos:
				raise EOFError("sequence of %d past content_size" % n)
			return [self.read(t.elem, scope) for _ in range(n)]
		raise Unsupported(type(t).__name__)


# --------------------------------------------------------------- checks --

def num_value(val):
	"""(kind, sign, text) of an assignment -> int, or None."""
	if val[0] in ("dec", "hex", "oct"):
		return int(val[2].rstrip("uUlL"), 0) * (-1 if val[1].count("-") % 2 else 1)
	return None


def check_metadata(trace_dir, v):
	path = os.path.join(trace_dir, "metadata")
	if not os.path.isfile(path):
		v.add("metadata", "no metadata file", "Metadata.preValidate")
		return None
	data = open(path, "rb").read()
	if len(data) <= 8:
		v.add("metadata", "8 bytes or less", "Metadata.preValidate (PREVALIDATION_SIZE)")
	if data[:1] == b"\x1e":
		v.add("metadata", "starts with 0x1E: read as CTF 2 JSON",
		      "Metadata.checkCTFVersion")
	if data[:4] in (b"\x57\x1d\xd1\x75", b"\x75\xd1\x1d\x57"):
		raise Unsupported("packetised metadata")	# TC reads it; we never write it
	if not data.split(b"\n", 1)[0].startswith(b"/* CTF"):
		v.add("metadata", "first line does not start with \"/* CTF\": not recognised "
		      "as a CTF trace", "Metadata.preValidate (TEXT_ONLY_METADATA_HEADER_PREFIX)")
	try:
		text = data.decode("ascii")
	except UnicodeDecodeError as e:
		v.add("metadata", "non-ASCII byte at offset %d (read with the platform "
		      "charset)" % e.start, "Metadata.parseFile FileReader")
		text = data.decode("latin-1")
	p = Parser(tokenize(text), v)
	p.parse()

	tr = p.trace
	if p.trace_count != 1:
		v.add("metadata", "%d trace blocks" % p.trace_count,
		      "IOStructGen.parseRoot (\"Only one trace block\" / \"Missing trace block\")")
	if num_value(tr.get("major", ("", "", ""))) != 1 or \
	   num_value(tr.get("minor", ("", "", ""))) != 8:
		v.add("trace", "major.minor is not 1.8", "CtfTmfTrace.validate (majorIsSet), "
		      "CTFTrace.isCTF2")
	uuid = tr.get("uuid", ("", "", ""))[2].strip('"')
	if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", uuid):
		v.add("trace", "uuid %r is not a UUID string" % uuid, "UUIDParser.java")
		uuid = None
	bo = tr.get("byte_order", ("", "", ""))[2]
	if bo not in ("le", "be", "native", "network"):
		v.add("trace", "byte_order not set", "IOStructGen.parseTrace")
	elif bo != "le":
		raise Unsupported("byte_order %s" % bo)	# the decoder reads little endian
	ph = tr.get("packet.header", (None, None, None))[2]
	if not isinstance(ph, Struct):
		v.add("trace", "no packet.header struct", "CTFTrace.openStreamInput")
	else:
		for name, want in (("magic", 32), ("stream_id", None)):
			t = ph.field(name)
			if not isinstance(t, Int) or (want and t.size != want):
				v.add("trace.packet.header", "no integer %s" % name,
				      "CTFStreamInput.parseTracePacketHeader")
		u = ph.field("uuid")
		if not (isinstance(u, Array) and u.length == 16 and isinstance(u.elem, Int)
			and u.elem.size == 8):
			v.add("trace.packet.header", "uuid is not uint8_t[16]",
			      "Utils.getUUIDfromDefinition")

	keys = [k for k, _, _ in p.env]
	for k in set(keys):
		if keys.count(k) > 1:
			v.add("env", "key %s defined twice" % k,
			      "EnvironmentParser.java (ImmutableMap.Builder rejects duplicates)")
	env = {k: val for k, _, val in p.env}
	dom = env.get("domain", "").strip('"')
	if dom in ("kernel", "ust"):
		v.add("env", "domain = \"%s\": Trace Compass claims the trace as an LTTng %s "
		      "trace and runs LTTng-layout analyses on events that do not follow it"
		      % (dom, dom), "LttngKernelTrace.validate / LttngUstTrace.validate")
	if env.get("tracer_name", "").strip('"') in ("lttng-modules", "lttng-ust", "perf"):
		v.add("env", "tracer_name claims another tracer's event layout",
		      "LttngKernelTrace.getTracerFromEnv")

	if len(p.clocks) != 1:
		v.add("metadata", "%d clock blocks: CTFTrace.getClock() is null unless there is "
		      "exactly one, and timestamps are then not scaled" % len(p.clocks),
		      "CTFTrace.getClock")
	clock = p.clocks[0] if p.clocks else {}
	cname = clock.get("name", ("", "", ""))
	if cname[0] not in ("ident", "string"):
		v.add("clock", "name is not an identifier", "CTFClock.addAttribute (String cast)")
	for key in ("freq", "offset"):
		if key in clock and (clock[key][0] != "dec" or clock[key][1]):
			v.add("clock", "%s is not a non-negative decimal literal" % key,
			      "ClockParser.java (only DECIMAL_LITERAL becomes a Long; the sign "
			      "is dropped)")
	if num_value(clock.get("offset_s", ("dec", "", "0"))) != 0:
		v.add("clock", "offset_s is not 0: Trace Compass ignores it (only offset, in "
		      "cycles, is applied)", "CTFClock.addAttribute")
	freq = num_value(clock.get("freq", ("dec", "", "1000000000")))
	clock_ref = "clock.%s.value" % cname[2].strip('"')

	streams = {}
	for s in p.streams:
		sid = num_value(s.get("id", ("", "", "")))
		where = "stream %s" % sid
		if sid is None:
			v.add(where, "no id with several streams", "CTFTrace.addStream")
			continue
		if sid in streams:
			v.add(where, "id defined twice", "CTFTrace.addStream (\"Stream id already "
			      "exists\")")
		pc = s.get("packet.context", (None, None, None))[2]
		eh = s.get("event.header", (None, None, None))[2]
		ec = s.get("event.context", (None, None, None))[2]
		if not isinstance(pc, Struct):
			v.add(where, "no packet.context", "StreamInputPacketIndexEntry")
			pc = Struct([], 1)
		for f, clocked in (("timestamp_begin", True), ("timestamp_end", True),
				   ("content_size", False), ("packet_size", False),
				   ("events_discarded", False), ("cpu_id", False)):
			t = pc.field(f)
			if not isinstance(t, Int):
				v.add(where, "packet.context has no integer %s" % f,
				      "StreamInputPacketIndexEntry (%s)" % (
					      "CtfCpuAspect" if f == "cpu_id" else f))
			elif clocked and t.clock != clock_ref:
				v.add(where, "packet.context %s not mapped to %s" % (f, clock_ref),
				      "StreamInputPacketIndexEntry")
		if not isinstance(eh, Struct) or not isinstance(eh.field("id"), Int):
			v.add(where, "event.header has no integer id", "CTFPacketReader.readNextEvent")
		else:
			ts = eh.field("timestamp")
			if not isinstance(ts, Int) or ts.size != 64 or ts.clock != clock_ref:
				v.add(where, "event.header timestamp is not a 64-bit %s" % clock_ref,
				      "EventDeclaration.calculateTimestamp")
		streams[sid] = {"pc": pc, "eh": eh, "ec": ec, "events": {}}

	for e in p.events:
		kind, _, name = e.get("name", ("", "", ""))
		where = "event %s" % name
		if kind not in ("string", "ident"):
			v.add(where, "name is not a string", "EventParser (\"Event name not set\"), "
			      "EventNameParser")
		eid = num_value(e.get("id", ("", "", "")))
		if eid is None or not 0 <= eid <= INT32_MAX:
			v.add(where, "id %s not in 0..2^31-1" % eid, "EventDeclarationParser.java")
			continue
		sid = num_value(e.get("stream_id", ("", "", "")))
		if sid not in streams:
			v.add(where, "stream_id %s not declared" % sid, "EventDeclarationParser.java")
			continue
		if eid in streams[sid]["events"]:
			v.add(where, "id %d twice in stream %d" % (eid, sid),
			      "CTFStream.addEvent (\"Event id already exists\")")
		fields = e.get("fields", (None, None, None))[2]
		if "context" in e:
			raise Unsupported("event context of %s" % name)
		streams[sid]["events"][eid] = (name, fields)
	return {"uuid": uuid, "packet_header": ph, "streams": streams, "freq": freq}


def check_stream_file(path, meta, v, counts):
	name = os.path.basename(path)
	data = open(path, "rb").read()
	if not data:
		return			# TC skips empty files (CTFTrace.openStreamInput)
	ph = meta["packet_header"]
	pos = 0
	sid0 = None
	last_begin = last_ts = last_lost = None
	cpus = set()
	npackets = 0
	while pos < len(data) * 8:
		where = "%s packet %d (byte %d)" % (name, npackets, pos // 8)
		r = Reader(data, pos, len(data) * 8)
		try:
			h = r.read(ph, {})
		except EOFError as e:
			v.add(where, "packet header truncated: %s" % e, "CTFStreamInput")
			return
		if h.get("magic") != CTF_MAGIC:
			v.add(where, "magic 0x%08x: %s" % (h.get("magic", 0),
			      "the whole file is skipped" if npackets == 0 else "packet rejected"),
			      "CTFTrace.validateMagicNumber / CTFStreamInput.parseTracePacketHeader")
			return
		u = bytes(h.get("uuid", []))
		if meta["uuid"] and u.hex() != meta["uuid"].replace("-", ""):
			v.add(where, "packet uuid differs from the metadata's",
			      "CTFStreamInput.parseTracePacketHeader (UUID mismatch)",
			      key=(name, "uuid"))
		sid = h.get("stream_id")
		if sid not in meta["streams"]:
			v.add(where, "stream_id %s not declared in the metadata" % sid,
			      "CTFTrace.openStreamInput (\"Unexpected end of stream\")")
			return
		if sid0 is None:
			sid0 = sid
		elif sid != sid0:
			v.add(where, "stream_id changes within the file",
			      "CTFStreamInput.parseTracePacketHeader")
			return
		st = meta["streams"][sid]
		try:
			c = r.read(st["pc"], {})
		except EOFError as e:
			v.add(where, "packet context truncated: %s" % e, "CTFStreamInput")
			return
		payload = r.pos - pos
		psize, csize = c.get("packet_size"), c.get("content_size")
		if psize is None or csize is None or psize % 8 or psize <= 0:
			v.add(where, "packet_size %s is not a positive whole number of bytes" % psize,
			      "StreamInputPacketIndexEntry.computePacketSize")
			return
		if csize > psize:
			v.add(where, "content_size %d > packet_size %d" % (csize, psize),
			      "CTFStreamInput.createPacketIndexEntry")
			return
		if pos + psize > len(data) * 8:
			v.add(where, "packet_size runs past the end of the file",
			      "CTFStreamInput.createPacketIndexEntry")
			return
		if npackets and csize <= payload:
			v.add(where, "packet has no event (content_size %d <= header+context %d): "
			      "the index stops here" % (csize, payload),
			      "StreamInputPacketIndex.append")
		tb, te = c.get("timestamp_begin"), c.get("timestamp_end")
		if tb > te:
			v.add(where, "timestamp_begin %d > timestamp_end %d" % (tb, te),
			      "StreamInputPacketIndex.append", key=(name, "begin>end"))
		if last_begin is not None and tb < last_begin:
			v.add(where, "timestamp_begin %d before the previous packet's %d: the rest "
			      "of the file is not indexed" % (tb, last_begin),
			      "StreamInputPacketIndex.append")
		last_begin = tb
		lost = c.get("events_discarded")
		if last_lost is not None and lost < last_lost:
			v.add(where, "events_discarded %d below the previous packet's %d (it is a "
			      "running count)" % (lost, last_lost),
			      "StreamInputPacketIndexEntry.computeLostEvents")
		last_lost = lost
		cpus.add(c.get("cpu_id"))

		# Events, as CTFPacketReader reads them.
		r = Reader(data, r.pos, pos + csize)
		while r.pos < pos + csize:
			ewhere = "%s event at byte %d" % (name, r.pos // 8)
			try:
				eh = r.read(st["eh"], {})
				eid = eh.get("id")
				if eid not in st["events"]:
					v.add(ewhere, "event id %s not declared in stream %d" % (eid, sid),
					      "CTFPacketReader.readNextEvent (\"Invalid event id\")")
					return
				ts = eh.get("timestamp")
				if st["ec"] is not None:
					r.read(st["ec"], {})
				fields = st["events"][eid][1]
				if fields is not None:
					r.read(fields, {})
			except EOFError as e:
				v.add(ewhere, "event runs past content_size: %s" % e,
				      "CTFPacketReader / BitBuffer")
				return
			if not tb <= ts <= te:
				v.add(ewhere, "timestamp %d outside its packet's [%d, %d]" % (ts, tb, te),
				      "StreamInputPacketIndex.search / CTFStreamInputReader.seek",
				      key=(name, "outside"))
			if last_ts is not None and ts < last_ts:
				v.add(ewhere, "timestamp %d before the previous event's %d in the same "
				      "stream" % (ts, last_ts),
				      "CTFStreamInputReader.seek, CTFTraceReader (per-stream order)",
				      key=(name, "back"))
			last_ts = ts
			counts["events"] = counts.get("events", 0) + 1
		if r.pos != pos + csize:
			v.add(where, "events end at bit %d, content_size says %d" % (r.pos - pos, csize),
			      "CTFPacketReader.hasMoreEvents")
		pos += psize
		npackets += 1
	if len(cpus) > 1:
		v.add(name, "cpu_id changes within the file (%s): one stream is one CPU"
		      % sorted(cpus), "CtfCpuAspect / StreamInputPacketIndexEntry.lookupTarget")
	counts["packets"] = counts.get("packets", 0) + npackets
	counts["streams"] = counts.get("streams", 0) + 1


def check(trace_dir):
	v = Violations()
	meta = check_metadata(trace_dir, v)
	counts = {}
	if meta is None:
		return v, counts
	for fname in sorted(os.listdir(trace_dir)):
		path = os.path.join(trace_dir, fname)
		# CTFTrace's MetadataFileFilter: every visible regular file but
		# "metadata" is opened as a stream file.
		if fname == "metadata" or fname.startswith(".") or os.path.isdir(path):
			continue
		check_stream_file(path, meta, v, counts)
	v.done()
	return v, counts


def main(argv):
	args = [a for a in argv[1:] if a != "-v"]
	if len(args) != 1:
		print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
		return 2
	try:
		v, counts = check(args[0])
	except Unsupported as e:
		print("ctf_tc_check: %s: cannot check: %s" % (args[0], e), file=sys.stderr)
		return 2
	except SyntaxError as e:
		print("%s/metadata: TSDL does not parse: %s (Trace Compass CTFParser.g)"
		      % (args[0], e))
		return 1
	for line in v.lines:
		print("%s/%s" % (args[0], line))
	if "-v" in argv[1:] or v.lines:
		print("ctf_tc_check: %s: %d streams, %d packets, %d events, %d rules broken"
		      % (args[0], counts.get("streams", 0), counts.get("packets", 0),
			 counts.get("events", 0), len(v.lines)), file=sys.stderr)
	return 1 if v.lines else 0


if __name__ == "__main__":
	sys.exit(main(sys.argv))
