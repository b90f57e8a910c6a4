# tracevisor — top-level build.  `make` builds build/tracevisor;
# `make demo`, `make check`, `make bench` install missing Debian packages first.

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   := build
CC      ?= cc

PKGS    := libtracefs libtraceevent libzstd xencontrol xenforeignmemory xenevtchn xentoollog xencall
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-format-truncation \
           -Iinclude -Ilib $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread
# libvirt domains as --guest SPECs: headers at build time, dlopen() at run
# time (host/guest_libvirt.c says why it is not linked).
ifeq ($(shell pkg-config --exists libvirt libvirt-qemu 2>/dev/null && echo yes),yes)
CFLAGS  += -DTV_HAVE_LIBVIRT $(shell pkg-config --cflags libvirt libvirt-qemu)
LDLIBS  += -ldl
endif

LIB_SRCS := $(wildcard lib/*.c) $(wildcard kvm/*.c) $(wildcard host/*.c) $(wildcard sync/*.c) \
            $(wildcard xen/*.c)
CLI_SRCS := $(wildcard tools/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

LIBTV    := $(BUILD)/libtracevisor.a
TRACEVISOR := $(BUILD)/tracevisor
TESTVMM  := $(BUILD)/tests/tv-testvmm
AGENT    := $(BUILD)/tracevisor-agent
FUZZ_GUEST := $(BUILD)/fuzz/fuzz_guest_stream
HELPERS  := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(wildcard tests/helpers/*.c))

.PHONY: all deps demo check e2e bench install clean fuzz
all: $(TRACEVISOR) $(TESTVMM) $(AGENT) $(HELPERS) $(UNIT_BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIBTV): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(TRACEVISOR): $(CLI_OBJS) $(LIBTV)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIBTV) $(LDLIBS)

# Static: it also runs inside the lab's minimal nested KVM host.
$(TESTVMM): tests/vmm/tv-testvmm.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -static -o $@ $<

# The guest agent: static, libc only (it runs in minimal guests).
$(AGENT): guest/agent.c lib/proto.c lib/proto.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
		-Wno-format-truncation -Ilib -static -pthread -o $@ guest/agent.c lib/proto.c

# libFuzzer target of the host's guest-stream parser (tests/root/fuzz-guest-stream.sh).
fuzz: $(FUZZ_GUEST)
$(FUZZ_GUEST): tests/fuzz/fuzz_guest_stream.c host/guest_stream.c host/guest_stream.h lib/proto.c lib/meta.c lib/log.c
	@mkdir -p $(dir $@)
	clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -Iinclude -Ilib -Ihost -o $@ \
		tests/fuzz/fuzz_guest_stream.c host/guest_stream.c lib/proto.c lib/meta.c lib/log.c

$(BUILD)/tests/tv-%: tests/helpers/tv-%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c tests/unit/tv_test.h $(LIBTV)
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
	@tests/run-tests --only e2e

bench: deps
	@$(MAKE) --no-print-directory all
	@for b in run-bench report-bench guest-bench sync-bench xen-bench; do \
		echo "== bench/$$b"; t0=$$(date +%s); bench/$$b; rc=$$?; \
		echo "== bench/$$b: status $$rc, $$(( $$(date +%s) - t0 )) s"; \
		[ $$rc = 0 ] || [ $$rc = 77 ] || exit $$rc; \
	done

install: $(TRACEVISOR) $(AGENT)
	install -D -m 0755 $(TRACEVISOR) $(DESTDIR)$(PREFIX)/bin/tracevisor
	install -D -m 0755 $(AGENT) $(DESTDIR)$(PREFIX)/bin/tracevisor-agent
	for m in doc/man/*.1; do install -D -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man1/$$(basename $$m); done

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d)
