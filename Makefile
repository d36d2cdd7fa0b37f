# EveryO — GNU Make build.
#
#   make                      library (build/libeveryo.a) and tools
#   make test                 the Check suite (installs check/zlib as root)
#   make test SANITIZE=1      the suite under AddressSanitizer + UBSan
#   make test NATIVE=avx2     the suite on the AVX2 kernels only (NATIVE=0: portable)
#   make train                the main job: an MLP on Fashion-MNIST
#   make check-freestanding   the library references no libc beyond the allowed set
#   make CC=clang             any of the above with clang
#
# Sources are found by wildcard: a new op file in ops/ or core/ needs no
# edit here. Each compiler/sanitizer combination builds in its own folder
# so switching between them never mixes objects.

CC ?= cc
SANITIZE ?= 0
NATIVE ?= 1

CCNAME := $(notdir $(firstword $(CC)))
ifneq ($(NATIVE),1)
BUILD ?= build/$(CCNAME)-native$(NATIVE)
endif
ifeq ($(SANITIZE)$(CCNAME),0cc)
BUILD ?= build
else ifeq ($(SANITIZE),1)
BUILD ?= build/$(CCNAME)-san
else
BUILD ?= build/$(CCNAME)
endif

# AVX2/FMA kernels are chosen at compile time from what -march=native
# enables (and the one AVX-512 loop, where the CPU has it); NATIVE=avx2
# builds the AVX2 paths without AVX-512 (what an AVX2-only CPU runs, and
# how a machine with AVX-512 tests them), NATIVE=0 the portable paths only.
ifeq ($(NATIVE),1)
ARCH := -march=native
endif
ifeq ($(NATIVE),avx2)
ARCH := -march=native -mno-avx512f
endif

WARN   := -Wall -Wextra -Wpedantic -Werror
OPT    := -O2 -g
CFLAGS_BASE := -std=c11 $(OPT) $(ARCH) $(WARN) -I. -fno-math-errno
ifeq ($(SANITIZE),1)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1 -g
endif
LIB_CFLAGS  := $(CFLAGS_BASE) $(SAN)
HOST_CFLAGS := $(CFLAGS_BASE) $(SAN) -D_POSIX_C_SOURCE=200809L
LDFLAGS_ALL := $(SAN)

LIB_SRCS  := $(wildcard alloc/*.c core/*.c ops/*.c ops/*/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
PTX_SRCS  := $(wildcard ptx/*.ptx)
TOOL_MAIN := $(wildcard tools/*/eo-*.c)
TOOL_SRCS := $(filter-out $(TOOL_MAIN),$(wildcard tools/*/*.c))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
TOOLS     := $(addprefix $(BUILD)/,$(basename $(notdir $(TOOL_MAIN))))
TEST_SRCS := $(wildcard tests/*.c)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)
LIB       := $(BUILD)/libeveryo.a
TOOLLIB   := $(BUILD)/libeotools.a

# zlib (tools only) and Check (tests only) come from pkg-config when it
# is there; the fallbacks are Debian's defaults.
ZLIB_LIBS  := $(shell pkg-config --libs zlib 2>/dev/null || echo -lz)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
HOST_LIBS  := $(ZLIB_LIBS) -lpthread -ldl -lm

.PHONY: all lib tools test test-cuda train train-gpt bench bench-train check-freestanding deps lines clean
all: lib tools lines

lib: $(LIB)
tools: $(TOOLS)

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TOOLLIB): $(TOOL_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/alloc/%.o $(BUILD)/obj/core/%.o $(BUILD)/obj/ops/%.o: LANGFLAGS = $(LIB_CFLAGS)
$(BUILD)/obj/tools/%.o $(BUILD)/obj/tests/%.o: LANGFLAGS = $(HOST_CFLAGS) $(CHECK_CFLAGS)

$(BUILD)/obj/%.o: %.c $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(LANGFLAGS) -MMD -MP -c $< -o $@

# Each program's main is tools/<subsystem>/eo-NAME.c; it links to build/eo-NAME.
define tool_rule
$$(BUILD)/$(basename $(notdir $(1))): $(1) $$(TOOLLIB) $$(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(HOST_CFLAGS) $$< $$(TOOLLIB) $$(LIB) $$(LDFLAGS_ALL) $$(HOST_LIBS) -o $$@
endef
$(foreach m,$(TOOL_MAIN),$(eval $(call tool_rule,$(m))))

$(BUILD)/eo-tests: $(TEST_OBJS) $(TOOLLIB) $(LIB)
	$(CC) $(TEST_OBJS) $(TOOLLIB) $(LIB) $(LDFLAGS_ALL) $(CHECK_LIBS) $(HOST_LIBS) -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- dependencies on a fresh Debian machine ---------------------------
APT_TEST := check pkg-config zlib1g-dev dataset-fashion-mnist
deps:
	@sh tools/build/need-packages.sh "pkg-config --exists check && pkg-config --exists zlib && test -f $(FMNIST)/train-images-idx3-ubyte.gz" $(APT_TEST)

# ---- tests -------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory $(BUILD)/eo-tests $(TOOLS)
	./$(BUILD)/eo-tests

# ---- the main job ---------------------------------------------------------
FMNIST ?= /usr/share/datasets/fashion-mnist
train:
	@sh tools/build/need-packages.sh "pkg-config --exists zlib && test -f $(FMNIST)/train-images-idx3-ubyte.gz" pkg-config zlib1g-dev dataset-fashion-mnist
	@$(MAKE) --no-print-directory $(BUILD)/eo-train
	./$(BUILD)/eo-train --data $(FMNIST) --plot $(BUILD)/eo-train.svg $(ARGS)

# The character-level GPT on the fortunes corpus (Debian package `fortunes`),
# installed the same way as the Fashion-MNIST package.
FORTUNES ?= /usr/share/games/fortunes
train-gpt:
	@sh tools/build/need-packages.sh "pkg-config --exists zlib && test -d $(FORTUNES)" pkg-config zlib1g-dev fortunes
	@$(MAKE) --no-print-directory $(BUILD)/eo-train $(BUILD)/eo-sample
	./$(BUILD)/eo-train --model gpt --fortunes $(FORTUNES) $(ARGS)

# ---- the library is freestanding --------------------------------------------
# Compile alloc/, core/ and ops/ with -ffreestanding and list what their
# objects need from outside: only memory primitives and libm's float
# functions may appear.
FS_ALLOWED := memcpy memset memmove memcmp \
	expf logf sqrtf tanhf erff powf fabsf floorf ceilf expm1f log1pf sinf cosf
FS_OBJS := $(LIB_SRCS:%.c=$(BUILD)/fs/%.o)
$(BUILD)/fs/%.o: %.c $(MAKEFILE_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -ffreestanding -DEO_FREESTANDING -c $< -o $@
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
bench:
	@$(MAKE) --no-print-directory $(BUILD)/eo-bench
	./$(BUILD)/eo-bench $(ARGS)

# ---- the main job beside PyTorch (tools/bench/bench-train.sh) -------------------------
BENCH_EPOCHS ?= 3
bench-train: $(BUILD)/eo-train
	sh tools/bench/bench-train.sh ./$(BUILD)/eo-train $(BENCH_EPOCHS)

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
#                    driver table's types against the toolkit's cuda.h.
#                    Without ptxas it says it skipped and succeeds.
PTX_EMBED := $(BUILD)/gen/ptx_embed.inc
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

bench-transformer: $(BUILD)/eo-train
	$(REF_PYTHON) tools/bench/bench_transformer.py --eo-train ./$(BUILD)/eo-train --steps $(BENCH_STEPS) $(ARGS)

# ---- the CUDA suites on a real GPU ------------------------------------------
# `make test` runs them on the PTX interpreter; this runs the same suites
# through libcuda.so.1 when a driver is installed, and says why not if not.
CUDA_SUITES := cuda_load cuda_kernels cuda_ops
test-cuda: deps
	@$(MAKE) --no-print-directory $(BUILD)/eo-tests
	@if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then \
	    for s in $(CUDA_SUITES); do EO_TEST_CUDA=real CK_RUN_SUITE=$$s ./$(BUILD)/eo-tests || exit 1; done; \
	else echo "test-cuda: skipped: no CUDA driver on this machine (libcuda.so.1 not found); make test already ran these suites on the PTX interpreter"; fi
