# SPDX-License-Identifier: BSD-3-Clause
# xkv: top-level build. `make help` lists the targets.

OUTPUT ?= .output
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
PYTHON ?= /usr/bin/python3

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.DEFAULT_GOAL := all

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -pthread $(WARN) -I$(OUTPUT)/include -Idaemon -Ishared \
	-I/usr/include/lua5.1
ifeq ($(DEBUG),1)
OPT := -O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer
else
OPT := -O2 -g
endif
CFLAGS ?= $(OPT)
# Lua 5.1 with bitop, linked statically (Debian ships the .a files); TRE
# for ARGREP's regular expressions (the engine Redis uses).
LIBS := -luring -lbpf -lxxhash -lcrypto -llzf -ltre -l:liblua5.1-bitop.a \
	-l:liblua5.1.a -ldl -lpthread -lm
# jemalloc replaces malloc, but AddressSanitizer must own malloc itself.
ifneq ($(DEBUG),1)
LIBS += -ljemalloc
BASE_CFLAGS += -DHAVE_JEMALLOC
endif

# ---- kernel side (Kbuild) -------------------------------------------------
include Kbuild
BPF_OBJS := $(addprefix $(OUTPUT)/bpf/,$(bpf-y))
BPF_SKELS := $(patsubst $(OUTPUT)/bpf/%.bpf.o,$(OUTPUT)/include/%.skel.h,$(BPF_OBJS))
# Off x86 the seqlock reader's barrier is a value-returning atomic (see
# seq_rmb() in bpf/xkv_xdp.bpf.c), which needs BPF ISA v3.
BPF_CPU := $(if $(filter x86,$(ARCH)),,-mcpu=v3)
BPF_CFLAGS := -g -O2 --target=bpf $(BPF_CPU) -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-I$(OUTPUT)/include -Ishared -Ibpf \
	$(shell $(CLANG) -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

$(OUTPUT)/include/vmlinux.h: | $(OUTPUT)/include
	$(call msg,GEN,$@)
	$(Q)$(if $(VMLINUX_H),cp $(VMLINUX_H) $@,$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@)

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(OUTPUT)/include/vmlinux.h $(wildcard shared/*.h bpf/lib/*.h) | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(CFLAGS_$(notdir $@)) -c $< -o $@.tmp.o
	$(Q)$(BPFTOOL) gen object $@ $@.tmp.o && rm -f $@.tmp.o

$(OUTPUT)/include/%.skel.h: $(OUTPUT)/bpf/%.bpf.o | $(OUTPUT)/include
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

bpf: $(OUTPUT)/include/vmlinux.h $(BPF_OBJS) $(BPF_SKELS)

# ---- daemon -----------------------------------------------------------------
DAEMON_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c daemon/cmd/*.c))
DAEMON_HDRS := $(wildcard daemon/*.h daemon/*.def daemon/cmd/*.def shared/*.h)

# objdir, cflags -> rules for one flavour of the daemon library.
define daemon_flavour
$(1)/%.o: %.c $(DAEMON_HDRS) $(BPF_SKELS)
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)$$(CC) $(2) -c $$< -o $$@
$(1)/libxkvd.a: $(patsubst %.c,$(1)/%.o,$(DAEMON_SRCS))
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
$(1)/xkvd: $(1)/daemon/main.o $(1)/libxkvd.a
	$$(call msg,LINK,$$@)
	$$(Q)$$(CC) $(2) -o $$@ $$^ $(3)
endef

$(eval $(call daemon_flavour,$(OUTPUT),$(BASE_CFLAGS) $(CFLAGS),$(LIBS)))
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
$(eval $(call daemon_flavour,$(OUTPUT)/asan,$(filter-out -DHAVE_JEMALLOC,$(BASE_CFLAGS)) $(ASAN_FLAGS),$(filter-out -ljemalloc,$(LIBS))))

daemon: $(OUTPUT)/xkvd
asan: $(OUTPUT)/asan/xkvd $(UNIT_ASAN_BINS)

# ---- tools --------------------------------------------------------------------
# tools/xkv-bench: the load generator; its code minus main.c is also a library
# that the unit tests link (histogram, scheduler).
BENCH_SRCS := $(filter-out tools/xkv-bench/main.c,$(wildcard tools/xkv-bench/*.c))
BENCH_HDRS := $(wildcard tools/xkv-bench/*.h)

# objdir, cflags -> rules for one flavour of the bench library.
define bench_flavour
$(1)/tools/%.o: tools/%.c $(BENCH_HDRS)
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)$$(CC) $(2) -Itools/xkv-bench -c $$< -o $$@
$(1)/libxkvbench.a: $(patsubst tools/%.c,$(1)/tools/%.o,$(BENCH_SRCS))
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(eval $(call bench_flavour,$(OUTPUT),$(BASE_CFLAGS) $(CFLAGS)))
$(eval $(call bench_flavour,$(OUTPUT)/asan,$(filter-out -DHAVE_JEMALLOC,$(BASE_CFLAGS)) $(ASAN_FLAGS)))
BENCH_LIB = $(if $(BENCH_SRCS),$(1)/libxkvbench.a)

$(OUTPUT)/xkv-bench: $(OUTPUT)/tools/xkv-bench/main.o $(call BENCH_LIB,$(OUTPUT))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $^ -lpthread -lm
tools: $(if $(wildcard tools/xkv-bench/main.c),$(OUTPUT)/xkv-bench)

# tools/xkv-vbench: the vector-set benchmark client and data generator (make bench-vectors).
VBENCH_SRCS := $(wildcard tools/xkv-vbench/*.c)
$(OUTPUT)/xkv-vbench: $(VBENCH_SRCS) $(wildcard tools/xkv-vbench/*.h)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itools/xkv-vbench -o $@ $(VBENCH_SRCS) -lpthread -lm
tools: $(OUTPUT)/xkv-vbench
# The HNSW insert in process (tools/bench/vset_insert.c): the engine's cost per insert and
# its parallelism, without the network. Not part of all.
$(OUTPUT)/vset-insert: tools/bench/vset_insert.c $(OUTPUT)/libxkvd.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(OUTPUT)/libxkvd.a $(LIBS)

# tools/xkvctl: the fast-path CLI and its client library libxkv (libc, and
# libcrypto for the SHA-256 that derives the UDP token from a password).
XKVCTL_SRCS := $(wildcard tools/xkvctl/*.c)
$(OUTPUT)/xkvctl: $(XKVCTL_SRCS) $(wildcard tools/xkvctl/*.h) shared/xkv_abi.h
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itools/xkvctl -o $@ $(XKVCTL_SRCS) -lcrypto
tools: $(OUTPUT)/xkvctl

# ---- tests ----------------------------------------------------------------------
KSFT := $(OUTPUT)/include/kselftest
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/unit/%,$(UNIT_SRCS))
UNIT_ASAN_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/asan/tests/unit/%,$(UNIT_SRCS))

$(OUTPUT)/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(OUTPUT)/libxkvd.a \
		$(call BENCH_LIB,$(OUTPUT)) $(KSFT)/kselftest_harness.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Wno-sign-compare -I$(KSFT) -Itools/xkv-bench -o $@ $< \
		$(OUTPUT)/libxkvd.a $(call BENCH_LIB,$(OUTPUT)) $(LIBS)

$(OUTPUT)/asan/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(OUTPUT)/asan/libxkvd.a \
		$(call BENCH_LIB,$(OUTPUT)/asan) $(KSFT)/kselftest_harness.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -DHAVE_JEMALLOC,$(BASE_CFLAGS)) $(ASAN_FLAGS) -Wno-sign-compare -I$(KSFT) \
		-Itools/xkv-bench -o $@ $< $(OUTPUT)/asan/libxkvd.a $(call BENCH_LIB,$(OUTPUT)/asan) \
		$(filter-out -ljemalloc,$(LIBS))

asan: $(OUTPUT)/asan/xkvd $(UNIT_ASAN_BINS)

# The kselftest harness comes from Debian's linux-source package (GPL-2.0),
# extracted at build time and never committed.
LINUX_SRC_TAR ?= $(firstword $(wildcard /usr/src/linux-source-*.tar.xz))
$(KSFT)/kselftest_harness.h:
	$(call msg,EXTRACT,$(KSFT))
	$(Q)test -n "$(LINUX_SRC_TAR)" || { echo "linux-source missing: run make deps" >&2; exit 1; }
	$(Q)mkdir -p $(KSFT)
	$(Q)tar -xJf $(LINUX_SRC_TAR) -C $(KSFT) --strip-components=4 --wildcards \
		'*/tools/testing/selftests/kselftest.h' '*/tools/testing/selftests/kselftest_harness.h'

# tests/bpf: the XDP program under BPF_PROG_TEST_RUN (needs root, like CI).
BPFTEST_SRCS := $(wildcard tests/bpf/*.c)
BPFTEST_BINS := $(patsubst tests/bpf/%.c,$(OUTPUT)/tests/bpf/%,$(BPFTEST_SRCS))
$(OUTPUT)/tests/bpf/%: tests/bpf/%.c $(OUTPUT)/libxkvd.a $(BPF_SKELS) $(KSFT)/kselftest_harness.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Wno-sign-compare -Wno-missing-field-initializers -I$(KSFT) \
		-o $@ $< $(OUTPUT)/libxkvd.a $(LIBS)

# tests/e2e: network namespaces and veth pairs; a pass-through program for
# the peer of a native-mode veth, and the coherence checker.
E2E_OBJS := $(OUTPUT)/tests/e2e/xdp_pass.bpf.o $(OUTPUT)/tests/e2e/coherence
$(OUTPUT)/tests/e2e/%.bpf.o: tests/e2e/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
# The benchmark's ceiling: a no-lookup XDP program (tools/bench/fastpath.sh).
$(OUTPUT)/tools/bench/%.bpf.o: tools/bench/%.bpf.c $(OUTPUT)/include/vmlinux.h shared/xkv_abi.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/tests/e2e/coherence: tests/e2e/coherence.c shared/xkv_abi.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -lpthread

test-unit: $(UNIT_BINS)
test-build: all asan $(UNIT_BINS) $(BPFTEST_BINS) $(E2E_OBJS)

test: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)tests/run.sh

# ---- benchmarks (not part of make test) -------------------------------------------
bench: all
	$(Q)tools/bench/redis-benchmark-compare.sh

# xkv-bench side by side with redis-server: throughput, per core, sweeps, plots.
bench-compare: all
	$(Q)tools/bench/compare.sh -o $(OUTPUT) $(BENCH_ARGS)

# Instructions per GET of xkvd and redis-server under callgrind, and system calls
# per GET from perf stat: stable on a busy machine. E.g. BENCH_ARGS='-n 200000 -a prof'.
bench-instructions: all
	$(Q)tools/bench/instructions.sh -o $(OUTPUT) $(BENCH_ARGS)

# xkvd's default worker threads against one, alternating (issue 5's threads rows).
bench-threads: all
	$(Q)tools/bench/threads.sh -o $(OUTPUT) $(BENCH_ARGS)

# The kernel fast path against the daemon, redis-server and a no-lookup XDP ceiling
# (needs root: it makes its own network namespace). E.g. BENCH_ARGS='-r 3'.
bench-fastpath: all $(OUTPUT)/tools/bench/xdp_ceiling.bpf.o
	$(Q)tools/bench/fastpath.sh -o $(OUTPUT) $(BENCH_ARGS)

# GETs per second of the client libraries (clients/) over UDP and over TCP, one
# Python and one Node process (needs root: its own network namespace).
bench-clients: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/bench/clients.sh -o $(OUTPUT) $(BENCH_ARGS)

# xkvd against Debian's redis-server and peers given by path, with redis-benchmark
# (--threads, pinned per core, or the whole machine), server CPU per request beside each
# rate. E.g. PEERS="redis8=/opt/redis/redis-server valkey=/opt/valkey/valkey-server"
# BENCH_ARGS='-T 5 -r 3 --md docs/benchmarks.md'.
bench-peers: all
	$(Q)PEERS="$(PEERS)" $(PYTHON) tools/bench/peers.py -o $(OUTPUT) $(BENCH_ARGS)

# Issue 13's AOF rows through the same harness: SET/INCR with appendonly yes, appendfsync
# everysec per core and appendfsync always over 50 connections (group commit).
bench-aof: all
	$(Q)PEERS="$(PEERS)" $(PYTHON) tools/bench/peers.py -o $(OUTPUT) -m aof-everysec,aof-always \
		--rows set256,incr $(BENCH_ARGS)

# Memory per key of xkvd, redis-server and peers given by path, for every type
# and size class. E.g. PEERS="redis8=/opt/redis/redis-server" BENCH_ARGS='-n 500000'.
bench-memory: all
	$(Q)PEERS="$(PEERS)" $(PYTHON) tools/bench/memory.py -o $(OUTPUT) $(BENCH_ARGS)

# Three-node clusters, xkvd against redis-server and PEERS="name=path ...", with
# redis-benchmark --cluster (issue 17). E.g. BENCH_ARGS='-r 3 --md docs/benchmarks.md'.
bench-cluster: all
	$(Q)PEERS="$(PEERS)" $(PYTHON) tools/bench/cluster.py -o $(OUTPUT) $(BENCH_ARGS)

# The FILTER expression fuzzer (tests/unit/test_vset_filter_fuzz.c) under ASan with
# VFILTER_FUZZ_ITERS runs (make test runs 20000). E.g. VFILTER_FUZZ_SEED=7.
VFILTER_FUZZ_ITERS ?= 1000000
fuzz-vfilter: $(OUTPUT)/asan/tests/unit/test_vset_filter_fuzz
	$(Q)VFILTER_FUZZ_ITERS=$(VFILTER_FUZZ_ITERS) $<

# Random VADD/VREM/VSIM/VLINKS/VSETATTR/VRANGE operations on one vector set under ASan,
# the graph's invariants checked every 997 steps (tests/unit/test_vset_ops_fuzz.c; make
# test runs 20000). E.g. VSET_OPS_FUZZ_SEED=7.
VSET_OPS_FUZZ_ITERS ?= 1000000
fuzz-vectors: $(OUTPUT)/asan/tests/unit/test_vset_ops_fuzz
	$(Q)VSET_OPS_FUZZ_ITERS=$(VSET_OPS_FUZZ_ITERS) $<

# The cluster bus fuzzer (tests/unit/test_cluster_bus.c) under ASan with
# XKV_FUZZ_ITERS mutations (make test runs 100000).
XKV_FUZZ_ITERS ?= 1000000
fuzz-cluster-bus: $(OUTPUT)/asan/tests/unit/test_cluster_bus
	$(Q)XKV_FUZZ_ITERS=$(XKV_FUZZ_ITERS) $<

# The same random vector-set steps sent to xkvd and to a live Redis 8.8 given by path
# (never built here), deterministic replies compared (tools/vset-diff-fuzz.py).
# E.g. make fuzz-vset-diff REDIS=/opt/redis/redis-server VSET_DIFF_SEED=7.
VSET_DIFF_STEPS ?= 20000
VSET_DIFF_SEED ?= 1
fuzz-vset-diff: $(OUTPUT)/xkvd
	$(Q)test -n "$(REDIS)" || { echo 'usage: make fuzz-vset-diff REDIS=/path/to/redis-server'; exit 2; }
	$(Q)$(PYTHON) tools/vset-diff-fuzz.py --redis "$(REDIS)" --xkvd $(OUTPUT)/xkvd \
		--steps $(VSET_DIFF_STEPS) --seed $(VSET_DIFF_SEED)

# Vector sets (VADD/VSIM) on dataset A (/work/shared/vectors) and on generated 1536-d data:
# xkvd (when it has VADD), peers by path and hnswlib in process, with tools/xkv-vbench
# (tools/bench/vectors.py). E.g. PEERS="redis8=/opt/redis/redis-server"
# BENCH_ARGS='--datasets kdoc --md docs/benchmarks.md'. Never builds a peer.
VECTOR_PACKAGES := python3-hnswlib python3-numpy
bench-vectors: all
	$(Q)missing=; for p in $(VECTOR_PACKAGES); do \
		dpkg-query -W -f='$${db:Status-Abbrev}' $$p 2>/dev/null | grep -q '^ii' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "  DEPS    installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi
	$(Q)PEERS="$(PEERS)" $(PYTHON) tools/bench/vectors.py -o $(OUTPUT) $(BENCH_ARGS)

# ---- other kernels (not part of make test) -----------------------------------------
# Debian 12's own kernel (6.1 LTS, linux-image-amd64 fetched into $(OUTPUT)/kernel) under
# qemu: test_xdp, xkvd loading and attaching the fast path, a kernel-answered GET; E2E=1
# adds the e2e tier (slow under TCG), KERNEL_ARGS=-r the TCP reproducer. Needs root
# (tests/kernel/run.sh).
test-kernel-6.1: test-build $(OUTPUT)/tests/tcp-fastpath/repro
	$(Q)tests/kernel/run.sh -o $(OUTPUT) $(if $(filter 1,$(E2E)),-e) $(KERNEL_ARGS)

# The TCP experiment of docs/fastpath.md ("TCP in the kernel: why not (yet)"): a sockmap
# program that answers GETs, on this kernel; every case it shows broken is a TAP TODO.
TCPFP := $(OUTPUT)/tests/tcp-fastpath
$(TCPFP)/tcp_get.bpf.o: tests/tcp-fastpath/tcp_get.bpf.c $(OUTPUT)/include/vmlinux.h bpf/lib/bound.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(TCPFP)/tcp_get.skel.h: $(TCPFP)/tcp_get.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name tcp_get > $@
$(TCPFP)/repro: tests/tcp-fastpath/repro.c $(TCPFP)/tcp_get.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -I$(TCPFP) -o $@ $< -lbpf
test-tcp-fastpath: $(TCPFP)/repro
	$(Q)$(TCPFP)/repro

# ---- soaks (not part of make test) -------------------------------------------------
# The differential fuzzer, the concurrency soak against the sanitizer build and the
# coherence checker at 20M+ operations, sharing SOAK_MINUTES (tests/soak/run.py).
SOAK_MINUTES ?= 25
soak: all $(OUTPUT)/asan/xkvd $(E2E_OBJS)
	$(Q)$(PYTHON) tests/soak/run.py --output $(OUTPUT) --redis $(REDIS_88) --minutes $(SOAK_MINUTES) \
		$(SOAK_ARGS)

# The script fuzzer at scale: FUZZ_SCRIPTS random Lua scripts from its grammar
# against the sanitizer build (tests/soak/script_fuzz.py; make test runs 3,000).
FUZZ_SCRIPTS ?= 1000000
FUZZ_SEED ?= 1
FUZZ_PORT ?= 7379
fuzz-scripts: $(OUTPUT)/asan/xkvd
	$(Q)$(PYTHON) tests/soak/script_fuzz.py --xkvd $(OUTPUT)/asan/xkvd --port $(FUZZ_PORT) \
		--scripts $(FUZZ_SCRIPTS) --seed $(FUZZ_SEED) --log $(OUTPUT)/script-fuzz-server.log

# ---- the rest -------------------------------------------------------------------
DEB_PACKAGES := clang llvm libbpf-dev bpftool liburing-dev libjemalloc-dev libxxhash-dev \
	libxdp-dev libhiredis-dev libssl-dev liblzf-dev liblua5.1-0-dev lua-bitop-dev libtre-dev \
	pkg-config iproute2 redis-tools redis-server python3-redis linux-source-6.1 clang-format \
	make gcc gnuplot-nox nodejs prometheus-redis-exporter python3-rq redis-sentinel
deps:
	$(Q)missing=; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${db:Status-Abbrev}' $$p 2>/dev/null | grep -q '^ii' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "  DEPS    installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi
	$(Q)$(MAKE) --no-print-directory $(KSFT)/kselftest_harness.h $(NODE_DEPS)

# clients/node's packages (ioredis), exactly as its lockfile says. npm writes
# the stamp; while it is newer than the lockfile nothing is fetched (offline).
NODE_DEPS := clients/node/node_modules/.package-lock.json
$(NODE_DEPS): clients/node/package.json clients/node/package-lock.json
	$(call msg,NPM,clients/node)
	$(Q)npm ci --prefix clients/node --no-audit --no-fund --ignore-scripts --loglevel=error
	$(Q)touch $@

all: bpf daemon tools

run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(OUTPUT)/xkvd --bind 127.0.0.1 --port 6379

# COMMAND DOCS come from the Redis version xkvd follows (tools/gen-command-docs.py).
REDIS_88 ?= /work/peers/redis-8.8.0/src/redis-server

docs: $(OUTPUT)/xkvd
	$(call msg,GEN,docs/commands.md)
	$(Q)$(PYTHON) tools/gen-commands-md.py $(OUTPUT)/xkvd > docs/commands.md
	$(call msg,GEN,daemon/cmd/meta_redis.def)
	$(Q)$(PYTHON) tools/gen-command-meta.py $(OUTPUT)/xkvd > daemon/cmd/meta_redis.def.tmp
	$(Q)mv daemon/cmd/meta_redis.def.tmp daemon/cmd/meta_redis.def
	$(call msg,GEN,daemon/cmd/docs_redis.def)
	$(Q)if [ -x $(REDIS_88) ]; then \
		$(PYTHON) tools/gen-command-docs.py $(OUTPUT)/xkvd $(REDIS_88) > daemon/cmd/docs_redis.def.tmp && \
		mv daemon/cmd/docs_redis.def.tmp daemon/cmd/docs_redis.def; \
	else echo "  (no Redis 8.8 at $(REDIS_88): daemon/cmd/docs_redis.def kept)"; fi
	$(call msg,GEN,docs/configuration.md)
	$(Q)$(OUTPUT)/xkvd --config-doc > docs/configuration.md

format:
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	$(Q)clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

$(OUTPUT)/include $(OUTPUT)/bpf:
	$(Q)mkdir -p $@

clean:
	$(Q)rm -rf $(OUTPUT)

help:
	@echo 'make [target] [V=1] [DEBUG=1] [OUTPUT=dir]'
	@echo '  all          build the BPF objects, xkvd and the tools (default)'
	@echo '  deps         install the Debian packages the build and tests need'
	@echo '  run          install, build and run xkvd on 127.0.0.1:6379'
	@echo '  test         install, build and run every test tier'
	@echo '  docs         regenerate docs/commands.md and docs/configuration.md from their tables'
	@echo '  bench        redis-benchmark side by side with redis-server (docs/benchmarks.md)'
	@echo '  bench-compare   xkv-bench side by side with redis-server, with plots in docs/img'
	@echo '  bench-fastpath  the kernel fast path vs the daemon, redis-server and the XDP ceiling'
	@echo '  bench-instructions  instructions and system calls per GET, xkvd and redis-server'
	@echo '  bench-threads   xkvd default threads against one thread, alternating'
	@echo '  bench-clients   the Python and Node client libraries, GETs/s over UDP and over TCP'
	@echo '  bench-peers     redis-benchmark rows against redis-server and PEERS="name=path ..."'
	@echo '  bench-aof       bench-peers with the AOF on (everysec per core, always over 50 conns)'
	@echo '  bench-memory    used_memory and RSS per key for every type, with PEERS="name=path ..."'
	@echo '  bench-cluster   3-node clusters: xkvd against redis-server and PEERS, redis-benchmark --cluster'
	@echo '  bench-vectors   vector sets: recall, queries/s, load rate, memory; PEERS="name=path ..." and hnswlib'
	@echo '  test-kernel-6.1  the fast path on Debian 12'"'"'s 6.1 kernel under qemu (E2E=1 adds e2e)'
	@echo '  test-tcp-fastpath  the sockmap TCP GET experiment on this kernel (docs/fastpath.md)'
	@echo '  fuzz-scripts  FUZZ_SCRIPTS=1000000 random Lua scripts against the ASan build'
	@echo '  soak         fuzz xkvd against redis-server, concurrency soak (ASan), coherence;'
	@echo '               SOAK_MINUTES=25 by default, SOAK_ARGS='"'"'--seed N --only fuzz'"'"''
	@echo '  fuzz-vfilter  the FILTER expression fuzzer, 1M runs under ASan (VFILTER_FUZZ_ITERS=N)'
	@echo '  fuzz-vectors  random vector-set operations + graph checks, 1M steps under ASan'
	@echo '  fuzz-cluster-bus  1M mutated cluster bus messages under ASan (XKV_FUZZ_ITERS=N)'
	@echo '  fuzz-vset-diff  vector-set replies against a live Redis 8.8: REDIS=/path/redis-server'
	@echo '  bpf daemon tools asan test-unit format format-check clean'

.PHONY: all bpf daemon tools asan test test-unit test-build deps run docs format format-check clean help \
	fuzz-vfilter fuzz-vectors fuzz-cluster-bus fuzz-vset-diff \
	bench bench-compare bench-peers bench-aof bench-cluster bench-fastpath bench-instructions bench-memory bench-threads bench-clients bench-vectors soak fuzz-scripts \
	test-kernel-6.1 test-tcp-fastpath
