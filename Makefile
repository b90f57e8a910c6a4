# SPDX-License-Identifier: GPL-2.0
# tracevisor — top-level build.  `make` builds build/tracevisor;
# `make demo`, `make check`, `make bench` install missing Debian packages first.

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   := build
CC      ?= cc

LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include

# Xen recording (record --xen, xen-mark) talks to the hypervisor through
# libxenctrl and friends: built in when their pkg-config files are found,
# or as TV_WITH_XEN=0/1 says.  Without them xen/no_xen.c stands in for
# xen/xen_recorder.c, xen/inject.c and xen/xenstore.c (a clear error), nothing links libxen*,
# and Xen sessions still decode (doc/architecture.md says why not dlopen).
XEN_PKGS := xencontrol xenforeignmemory xenevtchn xentoollog xencall xenstore
TV_WITH_XEN ?= $(shell pkg-config --exists $(XEN_PKGS) 2>/dev/null && echo 1 || echo 0)
PKGS    := libtracefs libtraceevent libzstd liburcu-bp libbpf yaml-0.1 openssl libcrypt json-c
ifeq ($(TV_WITH_XEN),1)
PKGS    += $(XEN_PKGS)
XEN_DEFS := -DTV_HAVE_XEN
else
XEN_HV_SRCS := xen/xen_recorder.c xen/inject.c xen/xenstore.c
endif
CFLAGS  ?= -O2 -g
# lib/ by role: format (session files), util, xen (record decoding), reader, ust
# (the tracer's consumer); their headers are included by name.
LIB_INC := -Ilib -Ilib/util -Ilib/format -Ilib/xen -Ilib/reader -Ilib/ust
# Library objects are position independent (libtracevisor.so) and hidden
# but for what the public headers declare (their visibility pragma).
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-format-truncation \
           -fPIC -fvisibility=hidden -fno-semantic-interposition \
           -Iinclude $(LIB_INC) $(XEN_DEFS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# OpenSSL, libcrypt, libyaml, json-c (serve's web config and alerts,
# host/serve_dl.h), libbpf (when a BPF view or watchdog opens, kvm/bpf_dl.h)
# and libzstd (compressed streams, lib/format/compress.c): headers at build
# time, dlopen() at run time; linked, every command loaded them.
LDLIBS  += $(shell pkg-config --libs $(filter-out openssl libcrypt yaml-0.1 json-c libbpf libzstd,$(PKGS)) 2>/dev/null) -lpthread -ldl
# libvirt domains as --guest SPECs: headers at build time, dlopen() at run
# time (host/guest_libvirt.c says why it is not linked).
ifeq ($(shell pkg-config --exists libvirt libvirt-qemu 2>/dev/null && echo yes),yes)
CFLAGS  += -DTV_HAVE_LIBVIRT $(shell pkg-config --cflags libvirt libvirt-qemu)
LDLIBS  += -ldl
endif

# top's in-kernel aggregation: kvm/bpf/*.bpf.c compiled for BPF, then
# built into the library as bytes (build/gen/kvm/*_bpf.c, part of kvm/'s
# layer; loaded by libbpf).
BPF_GEN  := $(BUILD)/gen/kvm/top_exits_bpf.c $(BUILD)/gen/kvm/top_exits_btf_bpf.c $(BUILD)/gen/kvm/top_funcs_bpf.c \
            $(BUILD)/gen/kvm/flight_exits_bpf.c
# export --format html's page (export/html/page.html), built in as bytes
HTML_GEN := $(BUILD)/gen/export/html_template.c
LIB_SRCS := $(wildcard lib/*/*.c) $(wildcard kvm/*.c) $(wildcard host/*.c) $(wildcard sync/*.c) \
            $(wildcard analysis/*.c) $(wildcard export/*.c) $(filter-out $(XEN_HV_SRCS),$(wildcard xen/*.c)) $(BPF_GEN) $(HTML_GEN)
CLI_SRCS := $(wildcard tools/*.c)
# top's full-screen view (tools/top_screen.c); the library has no terminal code
# ncursesw: headers at build time, dlopen() when top's full-screen view
# starts (tools/top_screen.c says why it is not linked).
CLI_LIBS := -ldl
UNIT_SRCS := $(filter-out tests/unit/test_ust_%,$(wildcard tests/unit/test_*.c))
UST_UNIT_SRCS := $(wildcard tests/unit/test_ust_*.c)

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

# libtracevisor-ust: the user-space tracer linked into applications
# (guest/ust/, include/tracevisor/ust.h; outside the host layers: it uses
# lib/ust/ust_abi.h and liburcu-bp only).
UST_SRCS := $(wildcard guest/ust/*.c)
UST_OBJS := $(UST_SRCS:%.c=$(BUILD)/obj/%.o)
UST_MAP  := guest/ust/libtracevisor-ust.map
LIBUST   := $(BUILD)/libtracevisor-ust.a
LIBUST_SO := $(BUILD)/libtracevisor-ust.so.0
UST_LIBS := $(shell pkg-config --libs liburcu-bp 2>/dev/null || echo -lurcu-bp) -lpthread
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
UST_TEST_LIBS := $(patsubst tests/unit/ust_lib_%.c,$(BUILD)/tests/libust_%.so,$(wildcard tests/unit/ust_lib_*.c))
UST_UNIT_BINS := $(filter $(BUILD)/tests/test_ust_%,$(UST_UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%))

LIBTV    := $(BUILD)/libtracevisor.a
# The shared library: only the public headers' functions are exported
# (lib/libtracevisor.map, tests/unit/check-exports.sh); the CLI links it.
SOVERSION := 0
LIBTV_SO := $(BUILD)/libtracevisor.so.$(SOVERSION)
LIBTV_MAP := lib/libtracevisor.map
TRACEVISOR := $(BUILD)/tracevisor
TESTVMM  := $(BUILD)/tests/tv-testvmm
AGENT    := $(BUILD)/tracevisor-agent
FUZZ_GUEST := $(BUILD)/fuzz/fuzz_guest_stream
FUZZ_SESSION := $(BUILD)/fuzz/fuzz_session
FUZZ_UST := $(BUILD)/fuzz/fuzz_ust_buffer
FUZZ_GSESSION := $(BUILD)/fuzz/fuzz_guest_session
HELPERS  := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(wildcard tests/helpers/*.c))

.PHONY: all deps demo check e2e bench install clean fuzz
all: $(TRACEVISOR) $(LIBTV_SO) $(BUILD)/libtracevisor.pc $(TESTVMM) $(AGENT) $(HELPERS) $(UNIT_BINS) \
     $(LIBUST_SO) $(LIBUST) $(EXAMPLES) $(UST_UNIT_BINS) $(UST_TEST_LIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/bpf/%.bpf.o: kvm/bpf/%.bpf.c kvm/bpf/top_exits.h kvm/bpf/top_exits_prog.h kvm/bpf/top_funcs.h \
                      kvm/bpf/flight_exits.h
	@mkdir -p $(dir $@)
	clang -O2 -g -target bpf -I/usr/include/$(shell $(CC) -print-multiarch) -Ikvm/bpf -c -o $@ $<

# A file as a C array NAME[] and NAME_len: $(call bytes_c,NAME,SOURCE-SAID)
bytes_c = @mkdir -p $(dir $@); \
	{ echo '/* Generated from $(2) by the Makefile: do not edit. */'; \
	  echo '\#include <stddef.h>'; \
	  echo 'const unsigned char $(1)[] = {'; \
	  od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo "const size_t $(1)_len = $$(stat -c %s $<);"; } >$@

$(BUILD)/gen/kvm/%_bpf.c: $(BUILD)/bpf/%.bpf.o
	$(call bytes_c,tv_$*_bpf,kvm/bpf/$*.bpf.c)

$(HTML_GEN): export/html/page.html
	$(call bytes_c,tv_html_template,export/html/page.html)

# Rebuilt from scratch: a renamed source must not leave its old member.
$(LIBTV): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(LIBTV_SO): $(LIB_OBJS) $(LIBTV_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libtracevisor.so.$(SOVERSION) \
		-Wl,--version-script=$(LIBTV_MAP) -Wl,-Bsymbolic-functions -Wl,--no-undefined \
		-o $@ $(LIB_OBJS) $(LDLIBS)
	ln -sf libtracevisor.so.$(SOVERSION) $(BUILD)/libtracevisor.so

# The CLI sees the library only through its exported (public) symbols; it
# finds it beside itself (build/) or in ../lib once installed.
$(TRACEVISOR): $(CLI_OBJS) $(LIBTV_SO)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) -Wl,--as-needed $(LIBTV_SO) $(LDLIBS) $(CLI_LIBS) \
		-Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib'

$(LIBUST): $(UST_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(LIBUST_SO): $(UST_OBJS) $(UST_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libtracevisor-ust.so.0 \
		-Wl,--version-script=$(UST_MAP) -Wl,--no-undefined \
		-o $@ $(UST_OBJS) $(UST_LIBS)
	ln -sf libtracevisor-ust.so.0 $(BUILD)/libtracevisor-ust.so

# Programs instrumented with libtracevisor-ust, linked to the shared library.
$(BUILD)/examples/%: examples/%.c include/tracevisor/ust.h $(LIBUST_SO)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -Iinclude -o $@ $< $(LIBUST_SO) \
		-Wl,-rpath,'$$ORIGIN/..' -lpthread

# Unit tests of the tracer: the static library, and instrumented shared
# objects they dlopen (tests/unit/ust_lib_*.c -> build/tests/libust_*.so).
$(BUILD)/tests/libust_%.so: tests/unit/ust_lib_%.c include/tracevisor/ust.h $(LIBUST_SO)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -fPIC -shared -Iinclude -o $@ $< $(LIBUST_SO)

$(BUILD)/tests/test_ust_%: tests/unit/test_ust_%.c tests/unit/tv_test.h tests/unit/ust_consumer.h tests/unit/ust_test_common.h $(LIBUST_SO) $(EXAMPLES) $(UST_TEST_LIBS)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -Iinclude $(LIB_INC) -Itests/unit -o $@ $< \
		$(LIBUST_SO) -Wl,-rpath,'$$ORIGIN/..' -ldl -lpthread $(shell pkg-config --cflags --libs libtraceevent)

# pkg-config file for PREFIX (written again by install, whose PREFIX may differ).
define write_pc
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
		'Name: libtracevisor' 'Description: Tracing virtualised systems: host, hypervisor and guests' \
		'Version: 0.1' 'Requires.private: $(PKGS)' \
		'Libs: -L$${libdir} -ltracevisor' 'Cflags: -I$${includedir}' >$(1)
endef
$(BUILD)/libtracevisor.pc: Makefile
	@mkdir -p $(dir $@)
	$(call write_pc,$@)

# Static: it also runs inside the lab's minimal nested KVM host.
$(TESTVMM): tests/vmm/tv-testvmm.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -static -o $@ $<

# The guest agent: static, libc only (it runs in minimal guests).
AGENT_SRCS := $(wildcard guest/*.c)
$(AGENT): $(AGENT_SRCS) guest/agent.h lib/format/proto.c lib/format/proto.h lib/util/elf_sym.c lib/util/elf_sym.h \
	  lib/util/write_all.c lib/util/write_all.h \
	  lib/ust/ust_consumer.c lib/ust/ust_consumer.h lib/ust/ust_listen.c lib/ust/ust_listen.h lib/ust/ust_abi.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
		-Wno-format-truncation $(LIB_INC) -static -pthread -o $@ $(AGENT_SRCS) lib/format/proto.c lib/util/elf_sym.c lib/util/write_all.c \
		lib/ust/ust_consumer.c lib/ust/ust_listen.c

# libFuzzer targets: the host's guest-stream parser (tests/unit/fuzz-guest-stream.sh), and below.
fuzz: $(FUZZ_GUEST) $(FUZZ_SESSION) $(FUZZ_UST) $(FUZZ_GSESSION)
FUZZ_GUEST_SRCS := tests/fuzz/fuzz_guest_stream.c host/guest_stream.c host/guest_ust.c lib/format/proto.c \
	lib/format/meta.c lib/util/log.c lib/ust/ust_consumer.c lib/ust/ust_session.c lib/util/strbuf.c lib/util/write_mapped.c lib/util/write_all.c lib/format/session_file.c
$(FUZZ_GUEST): $(FUZZ_GUEST_SRCS) tests/fuzz/fuzz_dir.h host/guest_stream.h lib/ust/ust_consumer.h
	@mkdir -p $(dir $@)
	clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -Iinclude $(LIB_INC) -Ihost -o $@ \
		$(shell pkg-config --cflags libtraceevent) $(FUZZ_GUEST_SRCS) \
		$(shell pkg-config --libs libtraceevent)

# libFuzzer target of a guest's session on the host as a state machine
# (tests/unit/fuzz-guest-session.sh): host/guest_session.c over the parser.
FUZZ_GSESSION_SRCS := tests/fuzz/fuzz_guest_session.c host/guest_session.c host/probe_sched.c \
	host/guest_stream.c host/guest_ust.c lib/format/proto.c lib/format/meta.c lib/util/log.c lib/ust/ust_consumer.c \
	lib/ust/ust_session.c lib/util/strbuf.c lib/util/write_mapped.c lib/util/write_all.c lib/format/session_file.c
$(FUZZ_GSESSION): $(FUZZ_GSESSION_SRCS) tests/fuzz/fuzz_dir.h host/guest_session.h host/guest_stream.h host/probe_sched.h
	@mkdir -p $(dir $@)
	clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-Iinclude $(LIB_INC) -Ihost -o $@ $(shell pkg-config --cflags libtraceevent) \
		$(FUZZ_GSESSION_SRCS) $(shell pkg-config --libs libtraceevent)

# libFuzzer target of the user-space tracer's buffer consumer (tests/unit/fuzz-ust-buffer.sh).
$(FUZZ_UST): tests/fuzz/fuzz_ust_buffer.c lib/ust/ust_consumer.c lib/ust/ust_consumer.h lib/ust/ust_abi.h
	@mkdir -p $(dir $@)
	clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(LIB_INC) -o $@ tests/fuzz/fuzz_ust_buffer.c lib/ust/ust_consumer.c

# libFuzzer target of the whole session reader (tests/unit/fuzz-session.sh):
# the library's sources built again with the sanitizers.
$(FUZZ_SESSION): tests/fuzz/fuzz_session.c $(LIB_SRCS) $(wildcard lib/*.h lib/*/*.h include/tracevisor/*.h)
	@mkdir -p $(dir $@)
	clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(filter-out -O2 -g -std=gnu11 -Werror,$(CFLAGS)) -Wno-unknown-warning-option \
		-o $@ tests/fuzz/fuzz_session.c $(LIB_SRCS) $(LDLIBS) -lm

$(BUILD)/tests/tv-%: tests/helpers/tv-%.c tests/unit/ust_demo_meta.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c tests/unit/tv_test.h tests/unit/ust_demo_meta.h tests/unit/session_gen.h $(LIBTV)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -Ikvm -Ihost -o $@ $< $(LIBTV) $(LDLIBS) -lm

deps:
	@scripts/install-deps

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo

check: deps
	@$(MAKE) --no-print-directory all
	@tests/run-tests

e2e: deps
	@$(MAKE) --no-print-directory all
	@tests/run-tests --only lab-self --only lab

# Each bench's output also goes to build/bench/logs/NAME.log; at the end
# bench/summarize rewrites bench/README.md from their RESULT lines (a bench
# that failed stops the run, after the summary of those that ran).
BENCH_LOGS := $(BUILD)/bench/logs
bench: deps
	@$(MAKE) --no-print-directory all
	@rm -rf $(BENCH_LOGS); mkdir -p $(BENCH_LOGS); \
	for b in run-bench report-bench guest-bench sync-bench xen-bench ust-bench top-bench serve-bench flight-bench; do \
		echo "== bench/$$b"; t0=$$(date +%s); \
		{ PYTHONUNBUFFERED=1 bench/$$b; echo $$? >$(BENCH_LOGS)/$$b.status; } 2>&1 | tee $(BENCH_LOGS)/$$b.log; \
		rc=$$(cat $(BENCH_LOGS)/$$b.status); echo $$(( $$(date +%s) - t0 )) >$(BENCH_LOGS)/$$b.seconds; \
		echo "== bench/$$b: status $$rc, $$(cat $(BENCH_LOGS)/$$b.seconds) s"; \
		[ $$rc = 0 ] || [ $$rc = 77 ] || break; \
	done; \
	bench/summarize $(BENCH_LOGS) || exit 1; \
	[ $$rc = 0 ] || [ $$rc = 77 ] || exit $$rc

install: $(TRACEVISOR) $(LIBTV_SO) $(BUILD)/libtracevisor.pc $(AGENT) $(LIBUST_SO) $(LIBUST)
	install -D -m 0755 $(TRACEVISOR) $(DESTDIR)$(PREFIX)/bin/tracevisor
	install -D -m 0755 $(LIBTV_SO) $(DESTDIR)$(LIBDIR)/libtracevisor.so.$(SOVERSION)
	ln -sf libtracevisor.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libtracevisor.so
	# the umbrella header and the topic headers it includes (and ust.h)
	install -d $(DESTDIR)$(INCLUDEDIR)/tracevisor
	install -m 0644 include/tracevisor/*.h $(DESTDIR)$(INCLUDEDIR)/tracevisor/
	mkdir -p $(DESTDIR)$(LIBDIR)/pkgconfig
	$(call write_pc,$(DESTDIR)$(LIBDIR)/pkgconfig/libtracevisor.pc)
	install -D -m 0755 $(AGENT) $(DESTDIR)$(PREFIX)/bin/tracevisor-agent
	for m in doc/man/*.1; do install -D -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man1/$$(basename $$m); done
	for m in doc/man/*.8; do install -D -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man8/$$(basename $$m); done
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|/usr/local/bin/|$(PREFIX)/bin/|' contrib/systemd/tracevisor-serve.service \
		>$(DESTDIR)$(PREFIX)/lib/systemd/system/tracevisor-serve.service
	install -D -m 0755 $(LIBUST_SO) $(DESTDIR)$(LIBDIR)/libtracevisor-ust.so.0
	ln -sf libtracevisor-ust.so.0 $(DESTDIR)$(LIBDIR)/libtracevisor-ust.so
	install -D -m 0644 $(LIBUST) $(DESTDIR)$(LIBDIR)/libtracevisor-ust.a
	for m in doc/man/*.3; do install -D -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man3/$$(basename $$m); done

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(UST_OBJS:.o=.d)
