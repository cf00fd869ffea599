# Makefile - the only build entry: make, make run, make test, make test-asan, make bench, make rules, make deps.
CC      ?= cc
BUILD   ?= build
# Baseline of every file: x86-64-v2 (SSE4.2/POPCNT, every x86-64 CPU since ~2009), the same flags and
# warnings on every machine. Wider kernels are per-level files chosen at run time (kernels/isa.h):
# kernels/*_avx2.c get AVX2+FMA, kernels/*_avx512.c AVX-512 F/BW/VL/DQ+FMA. `make ARCH=-march=native`
# is an opt-in for a binary that only runs where it was built (the scalar level is then not scalar).
# Elsewhere (not x86): the compiler's default target, and only the scalar level.
ifneq ($(filter x86_64% i686% i386%,$(shell $(CC) -dumpmachine)),)
  ARCH       ?= -march=x86-64-v2
  ISA_AVX2   := -mavx2 -mfma
  ISA_AVX512 := -mavx2 -mfma -mavx512f -mavx512bw -mavx512vl -mavx512dq
endif
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
# Every object is position-independent with hidden symbols: the same objects make the executable,
# libsuperopt.a and libsuperopt.so, which exports only the API's superopt_* (SUPEROPT_API in api/superopt.h).
PICFLAGS := -fPIC -fvisibility=hidden
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
CPPFLAGS = -std=c11 -D_GNU_SOURCE -Isrc -I$(BUILD)/gen $(ARCH) -fopenmp $(PICFLAGS)
LDLIBS  := -lz3 -lxxhash -lopenblas -lprotobuf-c -lglpk -lm -lpthread -fopenmp
SAN     ?=
ifeq ($(SAN),1)
  BUILD   := build-asan
  CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif

# The Debian packages: one list, tools/debian-packages, which .ci/run installs too.
DEB_PKGS := $(shell sed 's/\#.*//' tools/debian-packages)
# OpenMPI (generate --mpi, rules/gen_mpi.c only): flags from its compiler wrapper, headers as system headers;
# before `make deps` has installed it (make run on a fresh machine), Debian's default locations.
MPI_CFLAGS := $(patsubst -I%,-isystem %,$(or $(shell mpicc --showme:compile 2>/dev/null),-I/usr/include/$(shell $(CC) -print-multiarch)/mpi))
MPI_LIBS   := $(or $(shell mpicc --showme:link 2>/dev/null),-lmpi)
LDLIBS     += $(MPI_LIBS)
PY := /usr/bin/python3

LIB_SRCS    := $(wildcard src/*.c rules/*.c verifier/*.c search/*.c kernels/*.c api/*.c)
CLI_SRCS    := $(filter-out cli/main.c,$(wildcard cli/*.c))
MODULE_SRCS := $(LIB_SRCS) $(CLI_SRCS)
GEN_SRCS    := $(BUILD)/gen/onnx.pb-c.c
LIB_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS)) $(BUILD)/gen/onnx.pb-c.o
CLI_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(CLI_SRCS))
OBJS        := $(LIB_OBJS) $(CLI_OBJS)
TEST_SRCS   := $(wildcard tests/test_*.c)
TEST_BINS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# The library: libsuperopt.a (every stage), libsuperopt.so.MAJOR.MINOR.PATCH with soname libsuperopt.so.MAJOR.
VERSION     := $(shell sed -n 's/^\#define SUPEROPT_VERSION_STRING "\(.*\)"/\1/p' api/superopt.h)
SOMAJOR     := $(firstword $(subst ., ,$(VERSION)))
LIB         := $(BUILD)/libsuperopt.a
SHLIB       := $(BUILD)/libsuperopt.so.$(VERSION)
# make install PREFIX=/usr/local DESTDIR=: bin/superopt, include/superopt.h, lib/libsuperopt.{a,so*},
# lib/pkgconfig/superopt.pc, share/superopt/default.rules (the rule set the optimizer finds next to
# the library or executable), lib/python3/dist-packages/superopt (the ctypes package).
PREFIX      ?= /usr/local
DESTDIR     ?=

.PHONY: all lib install uninstall deps run test-api test-bench bench-api test test-core test-unit test-integration test-onnx conformance test-valgrind test-asan bench bench-repro bench-standard bench-kernels bench-isa rules operators models clean
all: $(BUILD)/superopt $(LIB) $(SHLIB) $(BUILD)/proofs.stamp

# The shipped rule set is proved by the binary just built, at build time (~6 s on 2 cores): the build
# fails if one rule does not prove, and the proofs go to this build's proof store build/proofs (read beside
# the executable; installed as share/superopt/proofs; rules/RULES.md), so no first optimize pays them, whatever
# its HOME or --cache-dir.
$(BUILD)/proofs.stamp: $(BUILD)/superopt rules/default.rules
	@rm -rf $(BUILD)/proofs && \
	  $(BUILD)/superopt verify rules/default.rules --cache --cache-dir $(BUILD)/proofs --json >$(BUILD)/proofs.json 2>$(BUILD)/proofs.log || \
	  { echo "rules/default.rules: not every rule proves with this build (see $(BUILD)/proofs.log)"; exit 1; }
	@echo "rules/default.rules: $$(sed -n 's/.*"proved": \([0-9]*\).*"seconds": \([0-9.]*\).*/\1 rules proved in \2 s/p' $(BUILD)/proofs.json) (proof store build/proofs)"
	@touch $@
lib: $(LIB) $(SHLIB)

# Plain `make` on a machine without the build packages: one line saying what to do.
DEP_FILES := /usr/include/z3.h /usr/include/xxhash.h /usr/include/protobuf-c/protobuf-c.h /usr/include/onnx/onnx.proto \
             /usr/bin/protoc-c /usr/include/cmocka.h
$(BUILD)/.deps-ok:
	@for f in $(DEP_FILES); do [ -e $$f ] || { echo "superopt: build packages are missing ($$f not found): run 'sudo make deps' first"; exit 1; }; done
	@echo '#include <mpi.h>' | $(CC) $(MPI_CFLAGS) -E -x c - >/dev/null 2>&1 || \
	  { echo "superopt: build packages are missing (mpi.h not found): run 'sudo make deps' first"; exit 1; }
	@echo '#include <cblas.h>' | $(CC) -E -x c - >/dev/null 2>&1 || { echo "superopt: build packages are missing (cblas.h not found): run 'sudo make deps' first"; exit 1; }
	@mkdir -p $(BUILD) && touch $@

# Installs missing Debian packages when run as root; otherwise says what is missing.
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages:$$missing (run 'sudo make deps')"; exit 1; fi; fi

$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h: /usr/include/onnx/onnx.proto | $(BUILD)/.deps-ok
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -I/usr/include/onnx $<

$(BUILD)/gen/onnx.pb-c.o: $(BUILD)/gen/onnx.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -w -c $< -o $@

$(BUILD)/%.o: %.c $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(ISAFLAGS) $(WARN) -MMD -MP -c $< -o $@

# Per-level kernel files (run only after the cpuid dispatch chose their level).
$(BUILD)/kernels/%_avx2.o: ISAFLAGS = $(ISA_AVX2)
$(BUILD)/kernels/%_avx512.o: ISAFLAGS = $(ISA_AVX512)

$(BUILD)/rules/gen_mpi.o: CPPFLAGS += $(MPI_CFLAGS)

$(LIB): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

# Exports only what api/superopt.h marks SUPEROPT_API (every object is -fvisibility=hidden).
$(SHLIB): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libsuperopt.so.$(SOMAJOR) -Wl,--no-undefined $(LDFLAGS) $^ -o $@ $(LDLIBS)
	ln -sf libsuperopt.so.$(VERSION) $(BUILD)/libsuperopt.so.$(SOMAJOR)
	ln -sf libsuperopt.so.$(SOMAJOR) $(BUILD)/libsuperopt.so

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/share/superopt $(DESTDIR)$(PREFIX)/lib/python3/dist-packages/superopt
	install -m 755 $(BUILD)/superopt $(DESTDIR)$(PREFIX)/bin/superopt
	install -m 644 api/superopt.h $(DESTDIR)$(PREFIX)/include/superopt.h
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libsuperopt.a
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/libsuperopt.so.$(VERSION)
	ln -sf libsuperopt.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libsuperopt.so.$(SOMAJOR)
	ln -sf libsuperopt.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libsuperopt.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS_PRIVATE@|$(LDLIBS)|' api/superopt.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/superopt.pc
	install -m 644 rules/default.rules $(DESTDIR)$(PREFIX)/share/superopt/default.rules
	install -d $(DESTDIR)$(PREFIX)/share/superopt/proofs
	install -m 644 $(BUILD)/proofs/proofs-*.txt $(DESTDIR)$(PREFIX)/share/superopt/proofs/
	install -m 644 python/superopt/*.py $(DESTDIR)$(PREFIX)/lib/python3/dist-packages/superopt/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/superopt $(DESTDIR)$(PREFIX)/include/superopt.h $(DESTDIR)$(PREFIX)/lib/libsuperopt.a \
	  $(DESTDIR)$(PREFIX)/lib/libsuperopt.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libsuperopt.so.$(SOMAJOR) \
	  $(DESTDIR)$(PREFIX)/lib/libsuperopt.so $(DESTDIR)$(PREFIX)/lib/pkgconfig/superopt.pc \
	  $(DESTDIR)$(PREFIX)/share/superopt/default.rules
	rm -rf $(DESTDIR)$(PREFIX)/lib/python3/dist-packages/superopt $(DESTDIR)$(PREFIX)/share/superopt/proofs
	-rmdir $(DESTDIR)$(PREFIX)/share/superopt 2>/dev/null

# Linked from the objects (not the archive) so that every stage's entry point is present.
$(BUILD)/superopt: $(BUILD)/cli/main.o $(OBJS)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The whole archive: kernels/ref.c registers the core's node evaluator at load (src/nodeeval.h).
$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB) $(CLI_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< $(CLI_OBJS) -Wl,--whole-archive $(LIB) -Wl,--no-whole-archive -o $@ $(LDLIBS) -lcmocka

# First contact: the optimizer where the search pays (NASRNN: proven rewrites merge its matmuls; the report shows
# the rules applied, cost and measured latency before/after, then the optimized model is run and checked against
# the stored outputs), then the runtime on DeepAndWide, whose run takes about a microsecond.
run: deps all
	@echo "== 1/2 optimize data/nasrnn.onnx (5-cell NAS RNN): search over the proven rules, numeric check, latency before/after"
	$(BUILD)/superopt data/nasrnn.onnx -o $(BUILD)/nasrnn.opt.onnx --report $(BUILD)/nasrnn.report.json --time-limit 60
	$(BUILD)/superopt run $(BUILD)/nasrnn.opt.onnx --inputs data/nasrnn.in.bin --outputs $(BUILD)/nasrnn.opt.out --iters 200
	$(PY) data/compare_outputs.py $(BUILD)/nasrnn.opt.out data/nasrnn.out.bin
	@echo "== 2/2 the runtime on data/deepandwide.onnx (9 nodes): the per-run cost of the executor"
	$(BUILD)/superopt run data/deepandwide.onnx --inputs data/deepandwide.in.bin --iters 20000 --warmup 1000
	@echo "(the report: $(BUILD)/nasrnn.report.json; the same from C or Python: README.md, examples/)"

test-unit: $(TEST_BINS)
	@fail=0; for t in $(TEST_BINS); do echo "== $$t"; $$t || fail=1; done; exit $$fail

# ONNX Runtime (CPU library ships in the npm package; its install script only fetches GPU parts).
ORT := tools/ort/node_modules/onnxruntime-node/package.json
$(ORT): tools/ort/package.json
	cd tools/ort && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

test-integration: $(BUILD)/superopt $(ORT)
	@BUILD=$(BUILD) bash tests/integration.sh

# ONNX's backend tests (Debian libonnx-testdata) through `superopt run` with typed I/O; refusals
# must be listed with their reason in tests/onnx_expected_refusals.txt (tests/onnx_conformance.py).
test-onnx: $(BUILD)/superopt
	/usr/bin/python3 tests/onnx_conformance.py --superopt $(BUILD)/superopt

# docs/CONFORMANCE.md: the per-operator results of the same run
conformance: $(BUILD)/superopt
	/usr/bin/python3 tests/onnx_conformance.py --superopt $(BUILD)/superopt --markdown docs/CONFORMANCE.md

# The README's test command. Unit tests (cmocka, one binary per module) then integration tests.
test: deps
	$(MAKE) test-core
	$(MAKE) test-valgrind
	$(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)

# The builds inside `make test` use every core (JOBS, default nproc); the tests themselves run one after another.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test-core:
	bash tests/check_layers.sh
	$(MAKE) -j$(JOBS) all $(TEST_BINS)
	$(MAKE) test-unit
	$(MAKE) test-integration
	$(MAKE) test-onnx
	$(MAKE) test-api
	$(MAKE) test-bench

# The library as a user gets it (tests/api.sh): make install into a temporary prefix, the C example built with
# pkg-config runs every data/ model (valgrind; ASan under make test-asan), the installed Python package's tests,
# an optimized model from Python checked in ONNX Runtime.
test-api: all $(ORT)
	@BUILD=$(BUILD) SAN=$(SAN) bash tests/api.sh

# Memcheck over the fast unit tests and superopt run/optimize/inspect/generate on the small models
# (tests/valgrind.sh, suppressions in tests/valgrind.supp); part of `make test`.
test-valgrind: all $(TEST_BINS)
	@BUILD=$(BUILD) bash tests/valgrind.sh

# The fuzz smoke run inside `make test` (replays every saved finding, then fuzzes each target briefly).
TEST_FUZZ_SECONDS ?= 5

# `superopt bench` end to end on small models (tests/bench_smoke.sh, about a minute): report sections, JSON,
# SVG, ONNX Runtime on a blocked-layout CNN, two benches with one cost table giving the same costs, clean errors.
test-bench: all $(ORT)
	@BUILD=$(BUILD) bash tests/bench_smoke.sh

test-asan: deps
	$(MAKE) SAN=1 test-core

rules: all
	$(BUILD)/superopt generate --max-ops 3 --seed 1 --threads 2 -o rules/default.rules

# docs/OPERATORS.md: per operator, each stage's decision (generated from src/ops.def; test_ops checks it is current).
operators: $(BUILD)/tests/test_ops
	$(BUILD)/tests/test_ops --markdown > docs/OPERATORS.md.tmp && mv docs/OPERATORS.md.tmp docs/OPERATORS.md

models:
	$(PY) data/export_models.py --set full
	$(PY) data/export_models.py --set cnn

# The benchmark suite (data/full/, make models): table on stdout, JSON and SVG in $(BUILD). See docs/BENCHMARKS.md.
# The cost table the bench's measured runs share is kept as $(BUILD)/bench-cost-table.tsv (a new one each time);
# BENCH_TABLE=FILE reuses a saved table instead: the same costs again (bench/repro_costs.sh checks it).
bench: all $(ORT) bench-api
	@[ -n "$(BENCH_TABLE)" ] || rm -f $(BUILD)/bench-cost-table.tsv
	$(BUILD)/superopt bench --json $(BUILD)/bench.json --svg $(BUILD)/bench.svg --cost-table $(or $(BENCH_TABLE),$(BUILD)/bench-cost-table.tsv)

# Issue 18: the literature comparison twice with one saved cost table; every strategy's cost (measured and
# flops) must be the same (costs, not latencies). Long: two benches of the seven models.
bench-repro: all
	BUILD=$(BUILD) bash bench/repro_costs.sh

# Issue 15 item 6: the standard-ONNX form (--layout none) of the 13 CNNs under ONNX Runtime against the originals: same
# outputs, time ratio median of paired interleaved rounds (bench/standard_ort.sh; quiet machine for claims).
STD_MODELS ?= $(addprefix data/full/,$(addsuffix .onnx,resnet50 resnext50_32x4d inception_v3 mobilenet_v2 squeezenet1_1 densenet121 \
	efficientnet_b0 regnet_y_400mf mnasnet1_0 mobilenet_v3_large googlenet shufflenet_v2_x1_0 convnext_tiny))
bench-standard: all
	SO=$(BUILD)/superopt bash bench/standard_ort.sh $(STD_MODELS)

# What the API adds to a run of DeepAndWide: superopt_session_run over the executor (target <= 2 us) and
# Python's Session.run over the C call (target <= 20 us); one JSON line (bench/api_overhead.{c,py}).
$(BUILD)/bench/api_overhead: bench/api_overhead.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $< -Wl,--whole-archive $(LIB) -Wl,--no-whole-archive -o $@ $(LDLIBS)

bench-api: all $(BUILD)/bench/api_overhead
	PYTHONPATH=python $(PY) bench/api_overhead.py --bench $(BUILD)/bench/api_overhead

# Backend benchmark: superopt run vs ONNX Runtime (disabled/all) at 1 and 2 threads, GFLOP/s vs sgemm peak.
bench-kernels: all $(ORT)
	BUILD=$(BUILD) bash tests/bench_kernels.sh

# Kernels per ISA level (bench/isa_levels.sh): hot-kernel GFLOP/s and model latency at scalar/avx2/avx512 against
# the machine's best sgemm 2048^3 (docs/BENCHMARKS.md, "Kernel ISA levels"). Long: run it on a quiet machine.
bench-isa: all
	BUILD=$(BUILD) bash bench/isa_levels.sh

# Fuzzing (libFuzzer, clang; tests/fuzz/README.md): `make fuzz FUZZ_SECONDS=N` builds each target in
# build-fuzz/ with -fsanitize=fuzzer,address,undefined, replays its regressions, then fuzzes it N seconds
# from its seed corpus tests/fuzz/<target>/ (new inputs go to build-fuzz/corpus/<target>/).
FUZZ_SECONDS  ?= 10
FUZZ_SEED     ?= 1
FUZZ_TARGETS  ?= onnx onnx_dir rules inputs
FUZZ_DIR      := build-fuzz
COMMA         := ,
FUZZ_CFLAGS   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wno-pass-failed
FUZZ_DEB_PKGS := clang libclang-rt-14-dev libomp-dev
FUZZ_SRCS     := $(filter-out src/main.c src/bench.c,$(wildcard src/*.c kernels/*.c)) rules/rule.c rules/rule_shape.c
FUZZ_OBJS     := $(patsubst %.c,$(BUILD)/%.o,$(FUZZ_SRCS)) $(BUILD)/gen/onnx.pb-c.o
.PHONY: fuzz fuzz-build fuzz-deps fuzz-bins
fuzz-deps:
	@missing=""; for p in $(FUZZ_DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages:$$missing (run 'sudo make fuzz-deps')"; exit 1; fi; fi

fuzz-build: fuzz-deps
	$(MAKE) -j$(JOBS) BUILD=$(FUZZ_DIR) CC=clang CFLAGS="$(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link" fuzz-bins

fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

# Kernels keep ASan/UBSan but not coverage instrumentation: their loops do not steer the fuzzers,
# and uninstrumented they run ~10x faster (fuzz_inputs runs whole models per input).
$(FUZZ_DIR)/kernels/%.o: override CFLAGS := $(FUZZ_CFLAGS)
# The per-level kernel bodies (AVX2, AVX-512) get ASan without UBSan here: clang 14's UBSan instrumentation of their
# always-inlined register tiles took over 17 CPU minutes for kernels/nchwc_avx512.c alone (ASan only 2.3, no sanitizer
# 0.5; session 22, AMD Zen 3) and ~5.5 for kernels/nchwc_avx2.c, most of make test's time. make test-asan (gcc) still
# runs them under UBSan (the level the CPU has).
FUZZ_LEVEL_CFLAGS = $(filter-out -fsanitize=address$(COMMA)undefined -fno-sanitize-recover=undefined,$(FUZZ_CFLAGS)) -fsanitize=address
$(FUZZ_DIR)/kernels/%_avx2.o: override CFLAGS := $(FUZZ_LEVEL_CFLAGS)
$(FUZZ_DIR)/kernels/%_avx512.o: override CFLAGS := $(FUZZ_LEVEL_CFLAGS)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fsanitize=fuzzer -DSO_FUZZ_DATA='"$(CURDIR)/data"' $< $(FUZZ_OBJS) -o $@ $(LDLIBS)

fuzz: fuzz-build
	@pass=0; fail=0; for t in $(FUZZ_TARGETS); do \
	  if FUZZ_DIR=$(FUZZ_DIR) FUZZ_SEED=$(FUZZ_SEED) bash tests/fuzz/run_fuzz.sh $$t $(FUZZ_SECONDS); then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
	done; echo "fuzz: $$pass passed, $$fail failed"; [ $$fail -eq 0 ]

clean:
	rm -rf build build-asan build-fuzz

-include $(OBJS:.o=.d) $(BUILD)/cli/main.d $(TEST_BINS:=.d) $(FUZZ_OBJS:.o=.d)
