# EveryO — GNU Make build.
#
#   make                      library (build/libeveryo.a) and tools
#   make test                 the Check suite (installs check/zlib as root)
#   make test SANITIZE=1      the suite under AddressSanitizer + UBSan
#   make NATIVE=1             a local build for this CPU alone (-march=native, one
#                             kernel set); NATIVE=avx2: the same without AVX-512
#   make train                the main job: an MLP on Fashion-MNIST
#   make check-freestanding   the library references no libc beyond the allowed set
#                             and has no writable global (no mutable global state);
#                             with check-isa: no AVX instruction outside the variants
#   make test-qemu-cpu        the installed eo-train on CPUs without AVX / AVX-512
#   make CC=clang             any of the above with clang
#   make CUDA=0               CPU only: no CUDA host side, no embedded PTX
#   make install              library, headers, everyo.pc and tools under
#                             PREFIX (/usr/local); DESTDIR stages; make uninstall
#   make size                 text/data/bss of the default, CPU-only and -Os library
#
# Sources are found by wildcard: a new op file in ops/ or core/ needs no
# edit here. Each compiler/sanitizer combination builds in its own folder
# so switching between them never mixes objects.

CC ?= cc
SANITIZE ?= 0
NATIVE ?= 0
CUDA ?= 1

CCNAME := $(notdir $(firstword $(CC)))
ifeq ($(CUDA),0)
BUILD ?= build/$(CCNAME)-cpu$(if $(filter 1,$(SANITIZE)),-san)$(if $(filter-out 0,$(NATIVE)),-native$(NATIVE))
endif
ifneq ($(NATIVE),0)
BUILD ?= build/$(CCNAME)-native$(NATIVE)
endif
ifeq ($(SANITIZE)$(CCNAME),0cc)
BUILD ?= build
else ifeq ($(SANITIZE),1)
BUILD ?= build/$(CCNAME)-san
else
BUILD ?= build/$(CCNAME)
endif

# The library is built for the architecture's baseline (x86-64: SSE2), so
# one build runs on every CPU of its architecture; the CPU kernels are
# compiled once more per instruction set in CPU_ISAS (below, "CPU kernel
# variants") and the context picks the widest the CPU reports. NATIVE=1 is
# the opt-in for a local build: everything with -march=native and one
# kernel set, as the CPU's own; NATIVE=avx2 the same without AVX-512.
ifeq ($(NATIVE),1)
MARCH := -march=native
endif
ifeq ($(NATIVE),avx2)
MARCH := -march=native -mno-avx512f
endif
# CPU_ISAS: the kernel variants built beside the baseline one, for x86-64
# targets (aarch64's baseline already has NEON; its own variant is to come).
# EO_BUILT_<NAME> tells core/cpu.c which tables exist.
TARGET_MACHINE := $(shell $(CC) $(TARGET_CFLAGS) -dumpmachine 2>/dev/null)
ifeq ($(NATIVE),0)
CPU_ISAS := $(if $(filter x86_64-%,$(TARGET_MACHINE)),avx2 avx512)
endif
CPU_ISA_DEFS := $(if $(filter avx2,$(CPU_ISAS)),-DEO_BUILT_AVX2=1) \
	$(if $(filter avx512,$(CPU_ISAS)),-DEO_BUILT_AVX512=1) $(if $(MARCH),-DEO_BUILT_NATIVE=1)

WARN   := -Wall -Wextra -Wpedantic -Werror
OPT    := -O2 -g
# TARGET_CFLAGS: a cross target's own flags (make cortex-m4 sets them).
CFLAGS_BASE := -std=c11 $(OPT) $(MARCH) $(TARGET_CFLAGS) $(WARN) -I. -fno-math-errno $(strip $(CPU_ISA_DEFS))
# Sanitized builds keep OPT (-O2): ASan and UBSan check it as well as -O1,
# and the whole suite stays inside its time under them.
ifeq ($(SANITIZE),1)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
LIB_CFLAGS  := $(CFLAGS_BASE) $(SAN)
# _FILE_OFFSET_BITS=64: on a 32-bit target (make cross ARCH=armhf) stat and
# readdir otherwise fail with EOVERFLOW on a file system with 64-bit inodes.
HOST_CFLAGS := $(CFLAGS_BASE) $(SAN) -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64 -DEO_HAVE_CUDA=$(if $(filter 0,$(CUDA)),0,1)
LDFLAGS_ALL := $(SAN)

LIB_SRCS  := $(wildcard alloc/*.c core/*.c ops/*.c ops/*/*.c)
# CUDA=0: the CUDA host side (ops/cuda/, core/backend_cuda.c) and with it the
# embedded PTX stay out; core/cuda_off.c answers eo_cuda_attach instead. The
# tools' and tests' CUDA parts drop out too, and the CUDA suites are replaced
# by stubs that say why they did not run (tests/cuda-off-suites.sh).
ifeq ($(CUDA),0)
LIB_SRCS  := $(filter-out ops/cuda/%.c core/backend_cuda.c,$(LIB_SRCS))
CUDA_TOOL_SRCS := tools/bench/bench_gpu.c tools/bench/bench_sim.c
CUDA_TEST_SRCS := $(shell grep -l 'ops/cuda/' tests/*.c)
else
LIB_SRCS  := $(filter-out core/cuda_off.c,$(LIB_SRCS))
endif
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(CPU_ISAS:%=$(BUILD)/obj/isa-%.o)
PTX_SRCS  := $(wildcard ptx/*.ptx)
# The embedded PTX (rule under CUDA / PTX below). Defined here, before any
# rule names it: a rule's prerequisites are expanded where the rule is read,
# so a variable defined later expands to nothing there (the PIC ptx.o once
# lost this dependency, and `make install` on a fresh clone failed;
# tools/build/make-order.awk finds any such rule).
PTX_EMBED := $(BUILD)/gen/ptx_embed.inc
TOOL_MAIN := $(wildcard tools/*/eo-*.c)
# tools/examples/ are programs built against the installed headers (below),
# tools/embedded/ the Cortex-M4 example (make cortex-m4).
TOOL_SRCS := $(filter-out $(TOOL_MAIN) $(CUDA_TOOL_SRCS) tools/examples/% tools/embedded/%,$(wildcard tools/*/*.c))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
TOOLS     := $(addprefix $(BUILD)/,$(basename $(notdir $(TOOL_MAIN))))
TEST_SRCS := $(filter-out $(CUDA_TEST_SRCS),$(wildcard tests/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o) $(if $(CUDA_TEST_SRCS),$(BUILD)/obj/gen/cuda_off_suites.o)
LIB       := $(BUILD)/libeveryo.a
TOOLLIB   := $(BUILD)/libeotools.a

# zlib (tools only) and Check (tests only) come from pkg-config when it
# is there; the fallbacks are Debian's defaults.
ZLIB_LIBS  := $(shell pkg-config --libs zlib 2>/dev/null || echo -lz)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
HOST_LIBS  := $(ZLIB_LIBS) -lpthread -ldl -lm

.PHONY: all lib tools test test-cuda train train-gpt bench bench-train check-freestanding deps build-deps lines clean
# Plain `make` first makes sure the compiler and zlib's header are there
# (build-deps, below), then builds; a fresh machine gets the apt-get line
# instead of a compiler error on zlib.h.
all: build-deps
	@$(MAKE) --no-print-directory lib tools lines

lib: $(LIB)
tools: $(TOOLS)

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TOOLLIB): $(TOOL_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/alloc/%.o $(BUILD)/obj/core/%.o $(BUILD)/obj/ops/%.o: LANGFLAGS = $(LIB_CFLAGS)
# The CPU kernels' plain loops (elementwise ops, copies, accumulates, the
# row kernels' scalar parts) are written to be vectorised by the compiler.
# clang does so at -O2; gcc at -O2 uses its "very cheap" cost model, which
# refuses any loop that needs a run-time alias check or a scalar tail, so
# it left every one of them scalar. "cheap" allows both. Results do not
# change: without -ffast-math gcc vectorises no floating-point reduction
# and contracts nothing (-std=c11), so each element gets the same
# operations in the same order.
CC_IS_GCC  := $(shell $(CC) -v 2>&1 | grep -q '^gcc version' && echo 1)
VEC_CFLAGS := $(if $(CC_IS_GCC),-ftree-loop-vectorize -fvect-cost-model=cheap)
$(BUILD)/obj/ops/cpu/%.o: LANGFLAGS = $(LIB_CFLAGS) $(VEC_CFLAGS)
$(BUILD)/obj/tools/%.o $(BUILD)/obj/tests/%.o: LANGFLAGS = $(HOST_CFLAGS) $(CHECK_CFLAGS)

# tests/test_cli.c runs the programs of the build folder it belongs to.
$(BUILD)/obj/tests/test_cli.o: LANGFLAGS = $(HOST_CFLAGS) $(CHECK_CFLAGS) -DEO_BUILD_DIR='"$(BUILD)"'

$(BUILD)/obj/%.o: %.c $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(LANGFLAGS) -MMD -MP -c $< -o $@

# ---- CPU kernel variants ---------------------------------------------------
# The CPU kernels (ops/cpu/*.c) and their table (core/backend_cpu.c) are
# compiled once more per variant in CPU_ISAS, with that variant's target
# flags, into $(BUILD)/{obj,pic,fs}/isa-NAME/; tools/build/isa-link.sh
# joins each variant's objects into one (isa-NAME.o) and appends _NAME to
# every global symbol it defines, so eo_k_matmul compiled for AVX2 is
# eo_k_matmul_avx2 and its table eo_backend_cpu_avx2, calling only its own
# variant's functions. The kernel sources are written once: their
# #if __AVX2__ / __AVX512F__ paths are what each variant's flags select.
# Only these objects see the flags, so nothing shared can contain an AVX
# instruction (make check-isa, run by check-freestanding, proves it).
ISA_SRCS := $(wildcard ops/cpu/*.c) core/backend_cpu.c
ISA_FLAGS_avx2   := -mavx2 -mfma -mf16c
ISA_FLAGS_avx512 := $(ISA_FLAGS_avx2) -mavx512f -mavx512bw -mavx512vl -mavx512dq
define isa_rules
$$(BUILD)/obj/isa-$(1)/%.o: %.c $$(MAKEFILE_LIST)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LIB_CFLAGS) $$(VEC_CFLAGS) $$(ISA_FLAGS_$(1)) -MMD -MP -c $$< -o $$@
$$(BUILD)/pic/isa-$(1)/%.o: %.c $$(MAKEFILE_LIST)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS_BASE) $$(VEC_CFLAGS) $$(ISA_FLAGS_$(1)) -fPIC -MMD -MP -c $$< -o $$@
$$(BUILD)/fs/isa-$(1)/%.o: %.c $$(MAKEFILE_LIST)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS_BASE) $$(ISA_FLAGS_$(1)) -ffreestanding -DEO_FREESTANDING -c $$< -o $$@
$(foreach d,obj pic fs,$$(BUILD)/$(d)/isa-$(1).o: $$(ISA_SRCS:%.c=$$(BUILD)/$(d)/isa-$(1)/%.o) tools/build/isa-link.sh
	sh tools/build/isa-link.sh "$$(CC)" $(1) $$@ $$(ISA_SRCS:%.c=$$(BUILD)/$(d)/isa-$(1)/%.o)
)
endef
$(foreach v,$(CPU_ISAS),$(eval $(call isa_rules,$(v))))
# eo-bench measures the FMA peak with the widest vectors the CPU has, so
# its ceiling loops are compiled per variant too (tools/bench/ceilings.h).
$(BUILD)/obj/tools/bench/ceil_avx2.o: LANGFLAGS = $(HOST_CFLAGS) $(if $(filter avx2,$(CPU_ISAS)),$(ISA_FLAGS_avx2))
$(BUILD)/obj/tools/bench/ceil_avx512.o: LANGFLAGS = $(HOST_CFLAGS) $(if $(filter avx512,$(CPU_ISAS)),$(ISA_FLAGS_avx512))
# The vector helpers' own tests likewise (tests/simd_cases.h).
$(BUILD)/obj/tests/simd_avx2.o: LANGFLAGS = $(HOST_CFLAGS) $(CHECK_CFLAGS) $(if $(filter avx2,$(CPU_ISAS)),$(ISA_FLAGS_avx2))
$(BUILD)/obj/tests/simd_avx512.o: LANGFLAGS = $(HOST_CFLAGS) $(CHECK_CFLAGS) $(if $(filter avx512,$(CPU_ISAS)),$(ISA_FLAGS_avx512))

# Each program's main is tools/<subsystem>/eo-NAME.c; it links to build/eo-NAME.
define tool_rule
$$(BUILD)/$(basename $(notdir $(1))): $(1) $$(TOOLLIB) $$(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(HOST_CFLAGS) $$< $$(TOOLLIB) $$(LIB) $$(LDFLAGS_ALL) $$(HOST_LIBS) -o $$@
endef
$(foreach m,$(TOOL_MAIN),$(eval $(call tool_rule,$(m))))

$(BUILD)/eo-tests: $(TEST_OBJS) $(TOOLLIB) $(LIB)
	$(CC) $(TEST_OBJS) $(TOOLLIB) $(LIB) $(LDFLAGS_ALL) $(CHECK_LIBS) $(HOST_LIBS) -o $@


$(BUILD)/gen/cuda_off_suites.c: $(CUDA_TEST_SRCS) tools/build/cuda-off-suites.sh
	@mkdir -p $(dir $@)
	sh tools/build/cuda-off-suites.sh $(CUDA_TEST_SRCS) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/cuda_off_suites.o: $(BUILD)/gen/cuda_off_suites.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)

# ---- the installable library: shared and static, headers, pkg-config ----
# The version is written once, in core/everyo.h.
EO_VERSION := $(shell awk '/^\#define EO_VERSION_(MAJOR|MINOR|PATCH) / {printf "%s%s", s, $$3; s="."}' core/everyo.h)
EO_MAJOR   := $(firstword $(subst ., ,$(EO_VERSION)))
# What a user includes: installed flat under include/everyo/, with the
# in-tree "alloc/arena.h"-style includes rewritten to their neighbours'
# names, so `#include <everyo/everyo.h>` works with one -I (tests/install/
# compiles each one alone to prove it). ops/kernels.h stays private.
PUBLIC_HEADERS := core/everyo.h core/nn.h core/transformer.h core/safetensors.h core/tokenizer.h alloc/arena.h alloc/status.h \
	ops/exec.h ops/parallel.h
# $(BUILD)/include/everyo/ holds them as installed; the examples compile
# against that folder alone.
STAGE_INC := $(BUILD)/include
STAGED_HEADERS := $(addprefix $(STAGE_INC)/everyo/,$(notdir $(PUBLIC_HEADERS)))
# The companion library's headers (IO_HEADERS, below) are staged the same
# way; tools/formats/safetensors.h is installed as safetensors_file.h, as
# core/safetensors.h already holds the name.
STAGE_SED := sed -E -e 's,^\#include "tools/formats/safetensors\.h",\#include "safetensors_file.h",' \
	-e 's,^\#include "(alloc|core|ops|tools/formats|tools/threads)/([A-Za-z0-9_]+\.h)",\#include "\2",'
define stage_rule
$$(STAGE_INC)/everyo/$(2): $(1)
	@mkdir -p $$(dir $$@)
	$$(STAGE_SED) $$< > $$@.tmp && mv $$@.tmp $$@
endef
$(foreach h,$(PUBLIC_HEADERS),$(eval $(call stage_rule,$(h),$(notdir $(h)))))
# The host companion, libeveryo-io: what a program around the library needs
# and the freestanding library cannot hold (files, zlib, pthreads): the
# safetensors reader/writer and checkpoints, the IDX reader, the thread
# pool. Each entry is SOURCE-HEADER:INSTALLED-NAME.
IO_HEADER_MAP := tools/formats/safetensors.h:safetensors_file.h tools/formats/checkpoint.h:checkpoint.h \
	tools/formats/idx.h:idx.h tools/threads/pool.h:pool.h
IO_HEADERS := $(foreach m,$(IO_HEADER_MAP),$(firstword $(subst :, ,$(m))))
IO_STAGED  := $(foreach m,$(IO_HEADER_MAP),$(STAGE_INC)/everyo/$(lastword $(subst :, ,$(m))))
$(foreach m,$(IO_HEADER_MAP),$(eval $(call stage_rule,$(firstword $(subst :, ,$(m))),$(lastword $(subst :, ,$(m))))))
.PHONY: headers
headers: $(STAGED_HEADERS) $(IO_STAGED)

# Position-independent objects, in their own folder, never sanitized (they
# are what gets installed): libeveryo.so exports only what PUBLIC_HEADERS
# declare (tools/build/export-map.sh), and the installed libeveryo.a is
# built from the same objects so both carry the same code.
PIC_OBJS := $(LIB_SRCS:%.c=$(BUILD)/pic/%.o) $(CPU_ISAS:%=$(BUILD)/pic/isa-%.o)
SO_NAME  := libeveryo.so.$(EO_MAJOR)
SO       := $(BUILD)/pic/libeveryo.so.$(EO_VERSION)
PIC_LIB  := $(BUILD)/pic/libeveryo.a
SO_LIBS  := -lm $(if $(filter 0,$(CUDA)),,-ldl)

$(BUILD)/pic/%.o: %.c $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(PIC_VEC) -fPIC -MMD -MP -c $< -o $@
$(BUILD)/pic/ops/cpu/%.o: PIC_VEC = $(VEC_CFLAGS)
$(BUILD)/pic/ops/cuda/ptx.o: $(PTX_EMBED)
$(BUILD)/pic/ops/cuda/ptx.o: CFLAGS_BASE += -I$(BUILD)/gen

$(BUILD)/pic/everyo.map: $(PUBLIC_HEADERS) $(PIC_OBJS) tools/build/export-map.sh
	sh tools/build/export-map.sh nm $(PUBLIC_HEADERS) -- $(PIC_OBJS) > $@.tmp && mv $@.tmp $@
$(SO): $(PIC_OBJS) $(BUILD)/pic/everyo.map
	$(CC) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=$(BUILD)/pic/everyo.map \
	    -Wl,--no-undefined $(PIC_OBJS) $(SO_LIBS) -o $@
	ln -sf $(notdir $@) $(BUILD)/pic/$(SO_NAME)
	ln -sf $(SO_NAME) $(BUILD)/pic/libeveryo.so
$(PIC_LIB): $(PIC_OBJS)
	@rm -f $@
	ar rcs $@ $^
.PHONY: shared exports
shared: $(SO) $(PIC_LIB)
# What the shared library exports, and whether anything beyond eo_ slipped out.
exports: $(SO)
	@nm -D --defined-only $(SO) | awk '{print $$3}' | sort
	@printf 'exported: %s symbols\n' "$$(nm -D --defined-only $(SO) | wc -l)"

# libeveryo-io: the tools' file formats and thread pool as PIC objects,
# with the error-buffer helper; the shared library also links in
# privately the few library internals they call that libeveryo.so does
# not export (the JSON parser, the message formatter, the 16-bit
# roundings). Like libeveryo.so it exports exactly what its installed
# headers declare.
IO_SRCS := tools/formats/safetensors.c tools/formats/safetensors_read.c tools/formats/safetensors_write.c \
	tools/formats/checkpoint.c tools/formats/idx.c tools/formats/durable.c tools/threads/pool.c \
	tools/cli/errbuf.c tools/cli/files.c
IO_PRIVATE_SRCS := core/json.c core/format.c ops/cpu/half.c
IO_OBJS   := $(IO_SRCS:%.c=$(BUILD)/pic/%.o) $(IO_PRIVATE_SRCS:%.c=$(BUILD)/pic/%.o)
IO_SO_NAME := libeveryo-io.so.$(EO_MAJOR)
IO_SO     := $(BUILD)/pic/libeveryo-io.so.$(EO_VERSION)
IO_LIB    := $(BUILD)/pic/libeveryo-io.a
IO_LIBS_PRIVATE := $(ZLIB_LIBS) -lpthread
$(BUILD)/pic/tools/%.o: CFLAGS_BASE += -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64
$(BUILD)/pic/everyo-io.map: $(IO_HEADERS) $(IO_OBJS) tools/build/export-map.sh
	sh tools/build/export-map.sh nm $(IO_HEADERS) -- $(IO_SRCS:%.c=$(BUILD)/pic/%.o) > $@.tmp && mv $@.tmp $@
$(IO_SO): $(IO_OBJS) $(BUILD)/pic/everyo-io.map $(SO)
	$(CC) -shared -Wl,-soname,$(IO_SO_NAME) -Wl,--version-script=$(BUILD)/pic/everyo-io.map \
	    -Wl,--no-undefined $(IO_OBJS) -L$(BUILD)/pic -leveryo $(IO_LIBS_PRIVATE) -lm -o $@
	ln -sf $(notdir $@) $(BUILD)/pic/$(IO_SO_NAME)
	ln -sf $(IO_SO_NAME) $(BUILD)/pic/libeveryo-io.so
# The static archive holds the tools' objects only: a static link takes
# the library internals they call from libeveryo.a, which follows it.
$(IO_LIB): $(IO_SRCS:%.c=$(BUILD)/pic/%.o)
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/pic/everyo-io.pc: tools/build/everyo-io.pc.in $(MAKEFILE_LIST)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(EO_VERSION)|' -e 's|@LIBS_PRIVATE@|$(IO_LIBS_PRIVATE)|' $< > $@
.PHONY: shared-io
shared-io: $(IO_SO) $(IO_LIB)

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# Programs a user runs; the fixture writer is a development tool.
INSTALL_TOOLS := $(filter-out %/eo-transformer-fixture,$(TOOLS))

$(BUILD)/pic/everyo.pc: tools/build/everyo.pc.in $(MAKEFILE_LIST)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(EO_VERSION)|' -e 's|@LIBS_PRIVATE@|$(SO_LIBS)|' $< > $@

.PHONY: install uninstall
install: $(SO) $(PIC_LIB) $(BUILD)/pic/everyo.pc $(INSTALL_TOOLS) $(STAGED_HEADERS) \
	    $(IO_SO) $(IO_LIB) $(BUILD)/pic/everyo-io.pc $(IO_STAGED)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/everyo $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(BINDIR)
	install -m 644 $(PIC_LIB) $(DESTDIR)$(LIBDIR)/libeveryo.a
	install -m 755 $(SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SO)) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libeveryo.so
	install -m 644 $(IO_LIB) $(DESTDIR)$(LIBDIR)/libeveryo-io.a
	install -m 755 $(IO_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(IO_SO)) $(DESTDIR)$(LIBDIR)/$(IO_SO_NAME)
	ln -sf $(IO_SO_NAME) $(DESTDIR)$(LIBDIR)/libeveryo-io.so
	install -m 644 $(STAGED_HEADERS) $(IO_STAGED) $(DESTDIR)$(INCLUDEDIR)/everyo/
	install -m 644 $(BUILD)/pic/everyo.pc $(BUILD)/pic/everyo-io.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 755 $(INSTALL_TOOLS) $(DESTDIR)$(BINDIR)/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libeveryo.a $(DESTDIR)$(LIBDIR)/libeveryo.so \
	    $(DESTDIR)$(LIBDIR)/libeveryo.so.$(EO_MAJOR) $(DESTDIR)$(LIBDIR)/libeveryo.so.$(EO_VERSION) \
	    $(DESTDIR)$(LIBDIR)/libeveryo-io.a $(DESTDIR)$(LIBDIR)/libeveryo-io.so \
	    $(DESTDIR)$(LIBDIR)/$(IO_SO_NAME) $(DESTDIR)$(LIBDIR)/$(notdir $(IO_SO)) \
	    $(DESTDIR)$(PKGCONFIGDIR)/everyo.pc $(DESTDIR)$(PKGCONFIGDIR)/everyo-io.pc \
	    $(addprefix $(DESTDIR)$(INCLUDEDIR)/everyo/,$(notdir $(PUBLIC_HEADERS))) $(IO_STAGED:$(STAGE_INC)/%=$(DESTDIR)$(INCLUDEDIR)/%) \
	    $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(INSTALL_TOOLS)))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/everyo 2>/dev/null

# An install into a scratch DESTDIR, then a C and a C++ program built
# against it with pkg-config alone (tests/install/run.sh); part of make test.
.PHONY: test-install
test-install:
	@sh tests/install/run.sh "$(MAKE)" "$(CC)" "$(CXX)" "$(BUILD)"

# ---- examples (tools/examples/): built against the staged headers only ----
# train_xor: the shortest complete training program. infer_mlp: an MLP that
# eo-train trains here on a small subset, its checkpoint turned into a C
# header by eo-safetensors c-image (the file as one const array), bound in
# place and run with static buffers; its accuracy must equal the one
# eo-train reported. readme-check.sh keeps the READMEs'
# copies of the examples identical to the files.
EX_DIR    := $(BUILD)/examples
EX_CFLAGS := -std=c11 $(OPT) $(MARCH) $(WARN) $(SAN) -I$(STAGE_INC)
EX_MLP_ARGS := --subset 2048 --test-subset 1000 --epochs 1 --quiet
$(EX_DIR)/train_xor: tools/examples/train_xor.c $(LIB) $(STAGED_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) $< $(LIB) $(LDFLAGS_ALL) -lm -ldl -o $@
$(EX_DIR)/mlp.safetensors: $(BUILD)/eo-train
	@mkdir -p $(dir $@)
	./$(BUILD)/eo-train $(EX_MLP_ARGS) --save $@ --plot $(EX_DIR)/mlp.svg > $(EX_DIR)/mlp-train.txt
$(EX_DIR)/mlp_image.h: $(EX_DIR)/mlp.safetensors $(BUILD)/eo-safetensors
	./$(BUILD)/eo-safetensors c-image $< > $@.tmp && mv $@.tmp $@
$(EX_DIR)/infer_mlp: tools/examples/infer_mlp.c $(EX_DIR)/mlp_image.h $(LIB) $(STAGED_HEADERS)
	$(CC) $(EX_CFLAGS) -I$(EX_DIR) $< $(LIB) $(LDFLAGS_ALL) $(ZLIB_LIBS) -lm -ldl -o $@
.PHONY: examples test-examples
examples: $(EX_DIR)/train_xor $(EX_DIR)/infer_mlp
test-examples: examples
	@sh tools/examples/readme-check.sh README.md tools/examples/README.md
	./$(EX_DIR)/train_xor
	./$(EX_DIR)/infer_mlp $(FMNIST) 1000 | tee $(EX_DIR)/infer.txt | tail -1
	@want=$$(sed -n 's/^done: test accuracy \([0-9.]*\)%.*/\1/p' $(EX_DIR)/mlp-train.txt); \
	got=$$(sed -n 's/^accuracy \([0-9.]*\)%.*/\1/p' $(EX_DIR)/infer.txt); \
	if [ -n "$$want" ] && [ "$$want" = "$$got" ]; then echo "test-examples: infer_mlp agrees with eo-train ($$got %)"; \
	else echo "test-examples: infer_mlp says $$got %, eo-train said $$want %" >&2; exit 1; fi

# ---- how big the library is (size(1)) --------------------------------------
# text/data/bss of libeveryo.a for the default build, CPU-only (CUDA=0) and
# CPU-only at -Os; each is built in its own folder.
.PHONY: size
size:
	@$(MAKE) --no-print-directory lib >/dev/null
	@$(MAKE) --no-print-directory CUDA=0 lib >/dev/null
	@$(MAKE) --no-print-directory CUDA=0 OPT=-Os BUILD=build/$(CCNAME)-cpu-Os lib >/dev/null
	@$(MAKE) --no-print-directory OPT=-Os BUILD=build/$(CCNAME)-Os lib >/dev/null
	@printf '%-28s %10s %8s %8s %10s\n' build text data bss total
	@for v in "default:$(BUILD)" "default -Os:build/$(CCNAME)-Os" \
	          "CUDA=0:$$($(MAKE) --no-print-directory -s CUDA=0 print-build)" \
	          "CUDA=0 -Os:build/$(CCNAME)-cpu-Os"; do \
	    size -t $${v#*:}/libeveryo.a | awk -v n="$${v%%:*}" 'END {printf "%-28s %10s %8s %8s %10s\n", n, $$1, $$2, $$3, $$4}'; done
.PHONY: print-build
print-build:
	@echo $(BUILD)

# ---- dependencies on a fresh Debian machine ---------------------------
# tools/build/need-packages.sh installs them as root, else prints the
# apt-get line. Building needs the C compiler and zlib's header (the tools
# read .gz); the tests also need Check, pkg-config, a C++ compiler (the
# install test builds a C++ program) and the dataset.
CC_PKG  := $(if $(findstring clang,$(CCNAME)),clang,gcc)
CXX     ?= g++
CXX_PKG := $(if $(findstring clang,$(notdir $(firstword $(CXX)))),clang,g++)
APT_BUILD := $(CC_PKG) zlib1g-dev pkg-config
APT_TEST := $(APT_BUILD) check $(CXX_PKG) dataset-fashion-mnist
BUILD_DEPS_OK := command -v $(firstword $(CC)) && printf '\043include <zlib.h>\n' | $(CC) -E -x c - && command -v pkg-config
build-deps:
	@sh tools/build/need-packages.sh "$(BUILD_DEPS_OK)" $(APT_BUILD)
deps:
	@sh tools/build/need-packages.sh "$(BUILD_DEPS_OK) && command -v $(firstword $(CXX)) && pkg-config --exists check && pkg-config --exists zlib && test -f $(FMNIST)/train-images-idx3-ubyte.gz" $(APT_TEST)

# ---- tests -------------------------------------------------------------
# After the Check suite: the install test (tests/install/) and the examples
# (tools/examples/), each its own target so it can also run alone.
# The suite runs as two runners side by side (tests/main.c), one core each:
# TEST_SHARD's suites (about half of the time, mostly the PTX interpreter)
# in one, all the others in the other. The shard's output is kept in a log
# and printed after the main runner's; make test fails if either fails.
TEST_SHARD ?= cuda_kernels cuda_multi dist ptx_counters stream
test: deps
	@$(MAKE) --no-print-directory $(BUILD)/eo-tests $(TOOLS)
	@echo "./$(BUILD)/eo-tests $(TEST_SHARD)  (output after the other runner's)"
	@echo "./$(BUILD)/eo-tests --except $(TEST_SHARD)"
	@./$(BUILD)/eo-tests $(TEST_SHARD) > $(BUILD)/eo-tests-shard.log 2>&1 & pid=$$!; \
	    ./$(BUILD)/eo-tests --except $(TEST_SHARD); rest=$$?; \
	    wait $$pid; shard=$$?; cat $(BUILD)/eo-tests-shard.log; \
	    [ $$rest -eq 0 ] && [ $$shard -eq 0 ] || { echo "make test: a runner failed" \
	        "(--except: $$rest, shard: $$shard)" >&2; exit 1; }
	@$(MAKE) --no-print-directory test-cpu-variants
	@$(MAKE) --no-print-directory test-install
	@$(MAKE) --no-print-directory test-examples

# The runners above use the CPU kernel variant a context picks on this
# machine; the kernel suites run again under each other variant the
# build holds (EO_CPU, tests/main.c), so base and AVX2 are tested on a
# machine that has AVX-512 too. A variant this CPU cannot run says so
# and is skipped.
CPU_SUITES := cpu kernels kernels16 matmul half ops optim grad_scaler attention
.PHONY: test-cpu-variants
test-cpu-variants: $(BUILD)/eo-tests
	@best=$$(./$(BUILD)/eo-tests --cpu-variant); \
	for v in base $(CPU_ISAS); do \
	    [ "$$v" = "$$best" ] && continue; \
	    echo "EO_CPU=$$v ./$(BUILD)/eo-tests $(CPU_SUITES)"; \
	    EO_CPU=$$v ./$(BUILD)/eo-tests $(CPU_SUITES) || exit 1; \
	done

# make test-qemu-cpu: the installed eo-train on emulated CPUs without AVX
# (qemu-x86_64 -cpu Nehalem) and without AVX-512 (-cpu Haswell): no
# SIGILL, and the kernel variant each should pick (tools/build/qemu-cpu-check.sh).
.PHONY: test-qemu-cpu
test-qemu-cpu:
	@sh tools/build/need-packages.sh "command -v qemu-x86_64 && test -f $(FMNIST)/train-images-idx3-ubyte.gz" qemu-user dataset-fashion-mnist
	@sh tools/build/qemu-cpu-check.sh "$(MAKE)" "$(BUILD)" "$(FMNIST)"

# ---- small and foreign targets (tools/build/cross.sh) ------------------------
#   make cross ARCH=aarch64|armhf|s390x [CUDA=0]
# builds the library, tools and eo-tests with Debian's cross compiler (Check
# and zlib built for the target from their Debian sources, cached in
# build/cross-ARCH/sysroot) and runs the suite under qemu-user: armhf has a
# 32-bit size_t, s390x is big-endian. Installs what it lacks as root. Not
# part of make test (it takes many minutes under emulation).
.PHONY: cross
cross:
	@test -n "$(ARCH)" || { echo "make cross: say ARCH=aarch64, armhf or s390x" >&2; exit 2; }
	@sh tools/build/cross.sh $(ARCH) "$(MAKE)" $(CUDA)

# make cortex-m4: the CPU library freestanding for a Cortex-M4 (hard float),
# sizes with and without --gc-sections, and the inference example on a
# simulated MPS2 AN386 board in 256 KiB of RAM (tools/build/cortex-m4.sh).
.PHONY: cortex-m4
cortex-m4:
	@sh tools/build/cortex-m4.sh "$(MAKE)" "$(BUILD)" "$(FMNIST)"

# ---- the main job ---------------------------------------------------------
FMNIST ?= /usr/share/datasets/fashion-mnist
train:
	@sh tools/build/need-packages.sh "$(BUILD_DEPS_OK) && test -f $(FMNIST)/train-images-idx3-ubyte.gz" $(APT_BUILD) dataset-fashion-mnist
	@$(MAKE) --no-print-directory $(BUILD)/eo-train
	./$(BUILD)/eo-train --data $(FMNIST) --plot $(BUILD)/eo-train.svg $(ARGS)

# The character-level GPT on the fortunes corpus (Debian package `fortunes`),
# installed the same way as the Fashion-MNIST package.
FORTUNES ?= /usr/share/games/fortunes
train-gpt:
	@sh tools/build/need-packages.sh "$(BUILD_DEPS_OK) && test -d $(FORTUNES)" $(APT_BUILD) fortunes
	@$(MAKE) --no-print-directory $(BUILD)/eo-train $(BUILD)/eo-sample
	./$(BUILD)/eo-train --model gpt --fortunes $(FORTUNES) --plot $(BUILD)/eo-train-gpt.svg $(ARGS)

# ---- the library is freestanding --------------------------------------------
# Compile alloc/, core/ and ops/ with -ffreestanding and list what their
# objects need from outside: only memory primitives and libm's float
# functions may appear.
# It also checks the library has no mutable global state: no object of
# alloc/ core/ ops/ (freestanding or hosted build) may define a writable
# symbol, i.e. one nm classes D d B b (data, bss), C (common) or G g S s
# (small data/bss). Those found are listed with their object and section.
# Const tables that hold pointers sit in .data.rel.ro* in a position-
# independent build (written once by the loader, read-only afterwards):
# they are allowed.
FS_ALLOWED := memcpy memset memmove memcmp \
	expf logf sqrtf tanhf erff powf fabsf floorf ceilf expm1f log1pf sinf cosf
FS_OBJS := $(LIB_SRCS:%.c=$(BUILD)/fs/%.o) $(CPU_ISAS:%=$(BUILD)/fs/isa-%.o)
$(BUILD)/fs/%.o: %.c $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -ffreestanding -DEO_FREESTANDING -c $< -o $@
# The freestanding objects as a library, for a bare-metal program (make cortex-m4).
$(BUILD)/libeveryo-fs.a: $(FS_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^
# check-isa: no AVX instruction outside the variant objects. Every VEX or
# EVEX instruction's mnemonic starts with v (vaddps, vfmadd231ps,
# vzeroupper; SSE has none that does), so objdump's listing of the
# baseline objects must have none; it would SIGILL on a CPU without AVX
# before any variant was chosen. A NATIVE build is one machine's and is
# not checked.
.PHONY: check-isa
check-isa: $(LIB_OBJS)
	@if [ -z "$(CPU_ISAS)" ]; then echo "check-isa: skipped (no CPU kernel variants in this build: NATIVE=$(NATIVE), $(TARGET_MACHINE))"; exit 0; fi; \
	bad=$$(for o in $(filter-out $(BUILD)/obj/isa-%,$(LIB_OBJS)); do \
	    objdump -d --no-show-raw-insn $$o | grep -E '^[[:space:]]+[0-9a-f]+:[[:space:]]+v[a-z]' | head -n 3 | sed "s|^|  $$o: |"; done); \
	if [ -n "$$bad" ]; then echo "check-isa: FAILED, AVX instructions in baseline objects:"; echo "$$bad"; exit 1; \
	else echo "check-isa: OK, no AVX/AVX-512 instruction outside the variants ($(CPU_ISAS))"; fi
check-freestanding: check-isa
check-freestanding: $(FS_OBJS)
	@ld -r -o $(BUILD)/fs/all.o $(FS_OBJS)
	@nm -u $(BUILD)/fs/all.o | awk 'NF==2 {print $$2}' | sort -u > $(BUILD)/fs/undefined.txt
	@echo "undefined symbols of the library's objects:"; sed 's/^/  /' $(BUILD)/fs/undefined.txt
	@bad=$$(grep -vxF $(foreach s,$(FS_ALLOWED),-e $(s)) $(BUILD)/fs/undefined.txt | grep -v '^_GLOBAL_OFFSET_TABLE_$$' || true); \
	if [ -n "$$bad" ]; then echo "check-freestanding: FAILED, not allowed: $$bad"; exit 1; \
	else echo "check-freestanding: OK (only memory primitives and libm float functions)"; fi
	@# The ordinary (hosted) build too: an optimiser can turn a loop into a
	@# libc call (strlen); there only the CUDA loader's dlopen may be added.
	@$(MAKE) --no-print-directory $(LIB)
	@ld -r -o $(BUILD)/fs/hosted.o $(LIB_OBJS)
	@bad=$$(nm -u $(BUILD)/fs/hosted.o | awk 'NF==2 {print $$2}' | sort -u | \
	    grep -vxF $(foreach s,$(FS_ALLOWED) dlopen dlsym dlclose dlerror,-e $(s)) | grep -v '^_GLOBAL_OFFSET_TABLE_$$' || true); \
	if [ -n "$$bad" ]; then echo "check-freestanding: FAILED, the hosted library also needs: $$bad"; exit 1; \
	else echo "check-freestanding: OK for the hosted build too (plus dlopen/dlsym/dlclose/dlerror for the CUDA loader)"; fi
	@bad=$$(nm -f sysv $(FS_OBJS) $(LIB_OBJS) | awk -F'|' \
	    '/^Symbols from / { obj = $$0; sub(/^Symbols from /, "", obj); sub(/:$$/, "", obj); next } \
	     NF >= 7 { c = $$3; gsub(/ /, "", c); sec = $$7; gsub(/ /, "", sec); nm = $$1; gsub(/ /, "", nm); \
	       if (c ~ /^[DdBbCGgSs]$$/ && sec !~ /^\.data\.rel\.ro/) print "  " obj ": " nm " (" c ", " sec ")" }'); \
	if [ -n "$$bad" ]; then echo "check-freestanding: FAILED, writable global state in the library:"; echo "$$bad"; exit 1; \
	else echo "check-freestanding: OK, no writable .data/.bss/common symbol in alloc/ core/ ops/"; fi

# ---- how big is the part a reader must study -------------------------------
LAYERS := alloc core ops ops/cpu ops/cuda
lines:
	@for d in $(LAYERS); do printf '  %-9s %6s lines of C\n' "$$d/" "$$(cat $$d/*.[ch] 2>/dev/null | wc -l)"; done
	@printf 'lines of C in alloc/ + core/ + ops/ (the library): '; cat $(foreach d,$(LAYERS),$(d)/*.[ch]) 2>/dev/null | wc -l

clean:
	rm -rf build

# ---- kernel benchmark ---------------------------------------------------------
# Every kernel beside its references (naive C, OpenBLAS via dlopen, PyTorch
# via tools/bench/bench_torch.py), as a fraction of this machine's measured FMA
# peak or copy bandwidth. ARGS: --quick, --threads 1,2, --csv FILE, --svg FILE.
# The references come from Debian: PyTorch (python3-torch) and OpenBLAS,
# which is also the BLAS PyTorch's matmuls run in. Without libopenblas0 the
# libblas.so.3 alternative is the reference Fortran BLAS, some 20x slower,
# and every ratio against PyTorch or "OpenBLAS" would be against that.
BENCH_REFS := sh tools/build/need-packages.sh "ldconfig -p | grep -q libopenblas.so.0 && /usr/bin/python3 -c 'import torch'" libopenblas0-pthread python3-torch
bench:
	@$(MAKE) --no-print-directory $(BUILD)/eo-bench
	@$(BENCH_REFS)
	./$(BUILD)/eo-bench $(ARGS)

# ---- the main job beside PyTorch (tools/bench/bench-train.sh) -------------------------
BENCH_EPOCHS ?= 3
bench-train: $(BUILD)/eo-train
	@$(BENCH_REFS)
	sh tools/bench/bench-train.sh ./$(BUILD)/eo-train $(BENCH_EPOCHS)

# ---- GPT-2 124M training beside llm.c and PyTorch (tools/bench/bench-gpt2.sh) ----
# make bench-gpt2 [LLMC_DIR=llm.c checkout] [BENCH_T=1024] [BENCH_STEPS=3]
.PHONY: bench-gpt2
bench-gpt2: $(BUILD)/eo-train
	LLMC_DIR="$(LLMC_DIR)" BENCH_T="$(BENCH_T)" BENCH_STEPS="$(or $(BENCH_GPT2_STEPS),3)" sh tools/bench/bench-gpt2.sh ./$(BUILD)/eo-train

# ---- CUDA / PTX ----------------------------------------------------------------
# The CUDA backend's kernels are hand-written PTX in ptx/*.ptx. They are
# compiled into the library as data: tools/build/ptx-embed.awk turns them into
# character arrays in $(BUILD)/gen/ptx_embed.inc, which ops/cuda/ptx.c
# includes. Only awk is needed, no CUDA toolkit; the driver JIT-compiles the
# text at run time.
#
#   make ptx-check   assemble every ptx/*.ptx with ptxas for each target in
#                    PTX_ARCHS; fail on errors, warnings, spills or stack use;
#                    print registers and shared memory per kernel; check the
#                    driver table's types against the toolkit's cuda.h, and
#                    that ptx/*16.ptx and the generated region of
#                    ptx/layernorm.ptx are tools/build/gen-ptx16.py's output
#                    and ptx/attention_tc.ptx tools/build/gen-attention-tc.py's.
#                    Without ptxas it says it skipped and succeeds.
$(PTX_EMBED): $(PTX_SRCS) tools/build/ptx-embed.awk
	@mkdir -p $(dir $@)
	LC_ALL=C awk -f tools/build/ptx-embed.awk $(PTX_SRCS) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/ops/cuda/ptx.o $(BUILD)/fs/ops/cuda/ptx.o: $(PTX_EMBED)
$(BUILD)/obj/ops/cuda/ptx.o: LANGFLAGS = $(LIB_CFLAGS) -I$(BUILD)/gen
$(BUILD)/fs/ops/cuda/ptx.o: CFLAGS_BASE += -I$(BUILD)/gen

PTXAS ?= $(shell command -v ptxas 2>/dev/null || { test -x /usr/local/cuda/bin/ptxas && echo /usr/local/cuda/bin/ptxas; })
PTX_ARCHS ?= sm_80 sm_86 sm_89 sm_90 sm_120
CUDA_INCLUDE ?= $(if $(PTXAS),$(abspath $(dir $(PTXAS))../include))
.PHONY: ptx-check
ptx-check:
	@sh tools/build/ptx-check.sh "$(PTXAS)" "$(PTX_ARCHS)" $(PTX_SRCS)
	@if command -v python3 > /dev/null 2>&1; then \
	    for m in elementwise16 rows16 embedding16 optim16; do \
	        python3 tools/build/gen-ptx16.py $$m | cmp -s - ptx/$$m.ptx || { \
	            echo "ptx-check: ptx/$$m.ptx differs from tools/build/gen-ptx16.py's output:" \
	                 "run python3 tools/build/gen-ptx16.py all and commit both"; exit 1; }; \
	    done; \
	    python3 tools/build/gen-ptx16.py layernorm < ptx/layernorm.ptx | cmp -s - ptx/layernorm.ptx || { \
	        echo "ptx-check: the GENERATED region of ptx/layernorm.ptx differs from" \
	             "tools/build/gen-ptx16.py's output: run python3 tools/build/gen-ptx16.py all"; exit 1; }; \
	    echo "ptx-check: ptx/*16.ptx and ptx/layernorm.ptx's generated region are gen-ptx16.py's current output"; \
	    python3 tools/build/gen-attention-tc.py | cmp -s - ptx/attention_tc.ptx || { \
	        echo "ptx-check: ptx/attention_tc.ptx differs from tools/build/gen-attention-tc.py's" \
	             "output: run python3 tools/build/gen-attention-tc.py > ptx/attention_tc.ptx"; exit 1; }; \
	    echo "ptx-check: ptx/attention_tc.ptx is gen-attention-tc.py's current output"; \
	else echo "ptx-check: python3 not found, generated 16-bit PTX not compared"; fi
	@if [ -n "$(CUDA_INCLUDE)" ] && [ -f "$(CUDA_INCLUDE)/cuda.h" ]; then \
	    $(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -DEO_CHECK_CUDA_ABI -I. \
	        -I"$(CUDA_INCLUDE)" -fsyntax-only tests/cuda_abi.c && \
	    echo "ptx-check: ops/cuda/driver.h matches $(CUDA_INCLUDE)/cuda.h"; \
	else echo "ptx-check: cuda.h not found, driver ABI check skipped"; fi

# ---- transformer: PyTorch parity fixtures and benchmark ----------------------
# make fixtures           regenerate tests/fixtures/{gpt,vit}_parity.safetensors:
#                         eo-transformer-fixture writes a tiny model's weights and
#                         a batch, tools/reference/ref_transformer.py (PyTorch, float64)
#                         adds logits, loss and gradients. Needs REF_PYTHON with
#                         torch; not run by CI (the fixtures are committed).
#                         Also tests/fixtures/numerics.h: PyTorch's values for the
#                         ops' numerical edge cases (tools/reference/ref_numerics.py).
#                         And tests/fixtures/grad_scaler.h: torch's GradScaler on
#                         scripted inf/NaN sequences (ref_grad_scaler.py).
# make bench-transformer  EveryO and PyTorch side by side at 1 and 2 threads: ms
#                         per training step and loss/accuracy after BENCH_STEPS
#                         steps for the char-GPT and the ViT. ARGS: e.g.
#                         --models gpt --threads 2.
REF_PYTHON ?= /usr/bin/python3
BENCH_STEPS ?= 200
.PHONY: fixtures bench-transformer
fixtures: $(BUILD)/eo-transformer-fixture
	@mkdir -p $(BUILD)/fixtures tests/fixtures
	./$(BUILD)/eo-transformer-fixture gpt $(BUILD)/fixtures/gpt_init.safetensors
	./$(BUILD)/eo-transformer-fixture vit $(BUILD)/fixtures/vit_init.safetensors
	$(REF_PYTHON) tools/reference/ref_transformer.py gpt $(BUILD)/fixtures/gpt_init.safetensors tests/fixtures/gpt_parity.safetensors
	$(REF_PYTHON) tools/reference/ref_transformer.py vit $(BUILD)/fixtures/vit_init.safetensors tests/fixtures/vit_parity.safetensors
	$(REF_PYTHON) tools/reference/ref_numerics.py tests/fixtures/numerics.h
	$(REF_PYTHON) tools/reference/ref_grad_scaler.py tests/fixtures/grad_scaler.h
	$(REF_PYTHON) tools/reference/ref_half.py tests/fixtures/half.h

# make fixtures-gpt2      regenerate tests/fixtures/gpt2_*.safetensors: tiny random
#                         GPT2LMHeadModels that transformers makes and saves, with
#                         its float64 logits, loss and gradients
#                         (tools/reference/ref_gpt2_hf.py), and the greedy-generation
#                         fixture tests/fixtures/gpt2_gen/ + gpt2_generate.h
#                         (tools/reference/ref_gpt2_generate.py). Needs Debian's
#                         python3-torch (1.13); transformers (a version that
#                         runs on torch 1.13) goes into a venv under build/ on
#                         first use, from PyPI. No model hub is used. Not run by
#                         CI (the fixtures are committed).
GPT2_VENV ?= $(BUILD)/venv
GPT2_PIP ?= transformers==4.40.2 numpy<2
.PHONY: fixtures-gpt2
fixtures-gpt2:
	@test -x $(GPT2_VENV)/bin/python || { /usr/bin/python3 -m venv --system-site-packages $(GPT2_VENV) && $(GPT2_VENV)/bin/pip install $(foreach p,$(GPT2_PIP),'$(p)'); }
	$(GPT2_VENV)/bin/python tools/reference/ref_gpt2_hf.py tests/fixtures
	$(GPT2_VENV)/bin/python tools/reference/ref_gpt2_generate.py tests/fixtures

bench-transformer: $(BUILD)/eo-train
	@sh tools/build/need-packages.sh "test -d $(FORTUNES) && test -f $(FMNIST)/train-images-idx3-ubyte.gz" fortunes dataset-fashion-mnist
	@$(BENCH_REFS)
	$(REF_PYTHON) tools/bench/bench_transformer.py --eo-train ./$(BUILD)/eo-train --steps $(BENCH_STEPS) $(ARGS)

# ---- tokenizer: fixtures and benchmark (tools/text/README.md) ----------------
# make bpe-fixtures     regenerate tests/fixtures/bpe/ (tools/reference/ref_bpe.py):
#                       a vocabulary trained by Hugging Face's `tokenizers` on
#                       the fortunes corpus, the test corpus and GPT2Tokenizer's
#                       ids; with GPT2_TIKTOKEN present, tiktoken's ids with
#                       GPT-2's ranks too. Python packages (transformers<5,
#                       tokenizers, tiktoken, regex) go to a venv in
#                       $(BUILD)/bpe-venv, from PyPI the first time (the only
#                       step that needs the network); not run by CI.
# make bench-tokenizer  EveryO's encoder beside tiktoken, same text (fortunes),
#                       same run, GPT-2's ranks (GPT2_TIKTOKEN: openai-whisper's
#                       whisper/assets/gpt2.tiktoken, never committed).
GPT2_TIKTOKEN ?= $(BUILD)/gpt2.tiktoken
BPE_VENV := $(BUILD)/bpe-venv
.PHONY: bpe-fixtures bench-tokenizer
$(BPE_VENV)/bin/python:
	python3 -m venv $(BPE_VENV)
	$(BPE_VENV)/bin/pip install -q 'transformers<5' tokenizers tiktoken regex
bpe-fixtures: $(BPE_VENV)/bin/python
	@sh tools/build/need-packages.sh "test -d $(FORTUNES)" fortunes
	$(BPE_VENV)/bin/python tools/reference/ref_bpe.py $(if $(wildcard $(GPT2_TIKTOKEN)),--gpt2-tiktoken $(GPT2_TIKTOKEN))
bench-tokenizer: $(BPE_VENV)/bin/python $(BUILD)/eo-tokenize
	@sh tools/build/need-packages.sh "test -d $(FORTUNES)" fortunes
	@test -f $(GPT2_TIKTOKEN) || { echo "bench-tokenizer: no $(GPT2_TIKTOKEN): pip download openai-whisper --no-deps, take whisper/assets/gpt2.tiktoken from the archive, or set GPT2_TIKTOKEN=FILE"; exit 1; }
	$(BPE_VENV)/bin/python tools/bench/bench_tokenizer.py --tiktoken-file $(GPT2_TIKTOKEN) --eo-tokenize ./$(BUILD)/eo-tokenize

# ---- GPU speed: estimated without a GPU, measured with one -------------------
# make bench-sim    every PTX kernel at training shapes, its time on H200,
#                   A100 and RTX 4090 ESTIMATED from the PTX interpreter's
#                   counters (tools/bench/bench_sim.c, perfmodel.c); about a
#                   minute on one core. ARGS: --gpu NAME, --profile, --csv FILE.
# make gpu-report   on a machine with a GPU: the estimates, then every kernel
#                   timed beside cuBLAS and the estimate, make test-cuda, a
#                   short training run per model; CSV/SVG/logs in
#                   $(BUILD)/gpu-report (tools/bench/gpu-report.sh). Without a
#                   GPU it says so and succeeds.
.PHONY: bench-sim gpu-report
bench-sim: $(BUILD)/eo-bench
	./$(BUILD)/eo-bench --device sim $(ARGS)
gpu-report:
	@sh tools/bench/gpu-report.sh $(BUILD) $(BUILD)/gpu-report "$(MAKE)"

# ---- the CUDA suites on a real GPU ------------------------------------------
# `make test` runs them on the PTX interpreter; this runs the same suites
# through libcuda.so.1 when a driver is installed, and says why not if not.
CUDA_SUITES := cuda_load cuda_kernels cuda_ops
test-cuda: deps
	@$(MAKE) --no-print-directory $(BUILD)/eo-tests
	@if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then \
	    for s in $(CUDA_SUITES); do EO_TEST_CUDA=real CK_RUN_SUITE=$$s ./$(BUILD)/eo-tests || exit 1; done; \
	else echo "test-cuda: skipped: no CUDA driver on this machine (libcuda.so.1 not found); make test already ran these suites on the PTX interpreter"; fi

# ---- fuzzing (tests/fuzz/README.md) ------------------------------------------
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="idx ptx"]
# builds each libFuzzer harness tests/fuzz/fuzz_<target>.c with clang
# (-fsanitize=fuzzer,address,undefined; library and tools instrumented
# too) in build/fuzz/, then runs them one after another for FUZZ_SECONDS
# each, from the committed seeds tests/fuzz/corpus/<target>/ and every
# past crasher tests/fuzz/regressions/<target>/. New inputs collect in
# build/fuzz/corpus/<target>/, crashes in build/fuzz/crashes/<target>/.
# The harness bodies are also linked into eo-tests, without libFuzzer's
# entry point, where the fuzz_replay suite replays every committed input.
FUZZ_SECONDS ?= 60
FUZZ_SRCS    := $(wildcard tests/fuzz/*.c)
FUZZ_ALL     := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter tests/fuzz/fuzz_%.c,$(FUZZ_SRCS)))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_BUILD   := build/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# -malloc_limit_mb: no input of a few KiB has any business allocating
# this much (a header that claims gigabytes must be refused, not obeyed).
FUZZ_FLAGS   := -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256
TEST_OBJS += $(FUZZ_SRCS:%.c=$(BUILD)/obj/%.o)
$(BUILD)/eo-tests: $(FUZZ_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/fuzz-%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(BUILD)/obj/tests/fuzz/common.o $(TOOLLIB) $(LIB)
	$(CC) $(HOST_CFLAGS) -DEO_FUZZ_LIBFUZZER -fsanitize=fuzzer $< $(BUILD)/obj/tests/fuzz/common.o \
	    $(TOOLLIB) $(LIB) $(LDFLAGS_ALL) $(HOST_LIBS) -o $@

# Per-target extras: dictionaries of tokens, and seed folders shared with
# other suites (the interpreter's good and broken kernels).
FUZZ_DICT_ptx          := tests/fuzz/ptx.dict
FUZZ_DICT_json         := tests/fuzz/json.dict
FUZZ_DICT_safetensors  := tests/fuzz/json.dict
FUZZ_DICT_checkpoint   := tests/fuzz/json.dict
FUZZ_DICT_weights      := tests/fuzz/json.dict
FUZZ_DICT_gpt2         := tests/fuzz/json.dict
FUZZ_DICT_bpe_files    := tests/fuzz/json.dict
FUZZ_SEEDS_ptx         := tests/ptx_good tests/ptx_broken
define fuzz_run
	mkdir -p $(FUZZ_BUILD)/corpus/$(1) $(FUZZ_BUILD)/crashes/$(1); echo "fuzz: $(1) for $(FUZZ_SECONDS) s"; \
	./$(FUZZ_BUILD)/fuzz-$(1) -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
	    -artifact_prefix=$(FUZZ_BUILD)/crashes/$(1)/ $(if $(FUZZ_DICT_$(1)),-dict=$(FUZZ_DICT_$(1))) \
	    $(FUZZ_BUILD)/corpus/$(1) tests/fuzz/corpus/$(1) $(wildcard tests/fuzz/regressions/$(1)) \
	    $(FUZZ_SEEDS_$(1)) 2>$(FUZZ_BUILD)/$(1).log || { fail="$$fail $(1)"; tail -n 60 $(FUZZ_BUILD)/$(1).log; }; \
	grep -E '^(#[0-9]+.*DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb)' \
	    $(FUZZ_BUILD)/$(1).log | sed 's/^/  $(1): /';
endef

.PHONY: fuzz
fuzz:
	@sh tools/build/need-packages.sh "command -v clang && test -f \"\$$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)\"" clang libclang-rt-14-dev
	@$(MAKE) --no-print-directory CC=clang BUILD=$(FUZZ_BUILD) SANITIZE=1 \
	    SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(addprefix $(FUZZ_BUILD)/fuzz-,$(FUZZ_TARGETS))
	@fail=; $(foreach t,$(FUZZ_TARGETS),$(call fuzz_run,$(t))) \
	if [ -n "$$fail" ]; then echo "fuzz: FAILED:$$fail (inputs in $(FUZZ_BUILD)/crashes/; keep each, once fixed, in tests/fuzz/regressions/<target>/)"; exit 1; fi; \
	echo "fuzz: OK ($(FUZZ_TARGETS))"
# ---- data-parallel training (tools/dist/) ------------------------------------
# Open MPI is opened at run time (dlopen libmpi.so.40) and NCCL likewise, so
# nothing here links either and every program builds without them. `make
# test` installs Open MPI when run as root (openmpi-bin: mpirun;
# libopenmpi-dev: mpi.h, against which tests/mpi_abi.c checks the loader's
# table), and the suite's 2-rank tests run; without it they say they skipped.
#   make bench-dist   step time of 1 and 2 processes, all-reduce bandwidth
#                     against the ring model (tools/dist/bench-dist.sh)
MPICC ?= mpicc
.PHONY: deps-mpi bench-dist
test: deps-mpi
deps-mpi:
	@sh tools/build/need-packages.sh "command -v mpirun && command -v $(MPICC)" openmpi-bin libopenmpi-dev || \
	    echo "make test: no Open MPI, so the suite's 2-rank MPI tests will say they skipped"
	@if command -v $(MPICC) >/dev/null 2>&1; then \
	    $(CC) -std=c11 $(WARN) -I. -DEO_CHECK_MPI_ABI $$($(MPICC) --showme:compile) -fsyntax-only tests/mpi_abi.c && \
	    echo "mpi-abi: tools/dist/mpi.h matches Open MPI's mpi.h"; \
	else echo "mpi-abi: no mpi.h, the MPI table's ABI check skipped"; fi
bench-dist: $(BUILD)/eo-train $(BUILD)/eo-bench-dist
	sh tools/dist/bench-dist.sh $(BUILD)
