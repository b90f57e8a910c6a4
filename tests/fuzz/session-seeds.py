#!/usr/bin/env python3
"""Seeds for fuzz_session from the committed sample sessions: each
tests/samples/NAME/ directory (and a synced multi-domain session, when
given as an argument) becomes one input of "PATH\\n" + u32 length + bytes
records (tests/fuzz/fuzz_session.c).  Usage: session-seeds.py OUTDIR [DIR...]"""
import os, struct, sys

def pack(root):
	out = b""
	for d, _, files in sorted(os.walk(root)):
		for f in sorted(files):
			p = os.path.join(d, f)
			rel = os.path.relpath(p, root)
			if rel.startswith("expected") or os.path.islink(p):
				continue
			data = open(p, "rb").read()
			out += rel.encode() + b"\n" + struct.pack("<I", len(data)) + data
	return out

def main():
	outdir = sys.argv[1]
	here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples")
	roots = [os.path.join(here, n) for n in sorted(os.listdir(here))
		 if os.path.isdir(os.path.join(here, n))] + sys.argv[2:]
	os.makedirs(outdir, exist_ok=True)
	for r in roots:
		data = pack(r)
		if data:
			open(os.path.join(outdir, os.path.basename(r.rstrip("/"))), "wb").write(data)

main()
