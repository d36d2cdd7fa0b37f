/* tests/fuzz/fuzz.h — the fuzz harnesses' shared entry points and helpers.
 *
 * Each fuzz_<target>.c defines one function, eo_fuzz_<target>(data, size),
 * that feeds the bytes to one reader and checks what must hold for any
 * input (no crash, no leak, the documented status, all-or-nothing
 * effects). The same function serves twice:
 *   - under libFuzzer (`make fuzz`), through the LLVMFuzzerTestOneInput
 *     that EO_FUZZ_ENTRY defines when EO_FUZZ_LIBFUZZER is set (only the
 *     fuzz build sets it, so the test runner never sees a second one);
 *   - in `make test`, where tests/test_fuzz_replay.c replays every file of
 *     corpus/<target>/ and regressions/<target>/ through it.
 * A broken property calls eo_fuzz_fail, which aborts: libFuzzer keeps the
 * input as a crash, Check reports the signal. */
#ifndef EO_TESTS_FUZZ_H
#define EO_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "tools/cli/errbuf.h"

/* Every target, one line each (the replay suite walks this list). */
#define EO_FUZZ_TARGETS(X) X(idx) X(json) X(safetensors) X(weights) X(checkpoint) X(ptx) X(textlm) X(args) \
    X(gpt2) X(bpe) X(bpe_files) X(tokens)

#define EO_FUZZ_DECLARE(name) int eo_fuzz_##name(const uint8_t *data, size_t size);
EO_FUZZ_TARGETS(EO_FUZZ_DECLARE)
#undef EO_FUZZ_DECLARE

#ifdef EO_FUZZ_LIBFUZZER
#define EO_FUZZ_ENTRY(name)                                                                        \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                 \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                  \
    {                                                                                              \
        return eo_fuzz_##name(data, size);                                                         \
    }
#else
#define EO_FUZZ_ENTRY(name)
#endif

/* The input being replayed, for messages (set by the replay suite). */
extern const char *eo_fuzz_current;

/* Prints "fuzz: <input>: <message>" to stderr and aborts. */
void eo_fuzz_fail(const char *fmt, ...) EO_PRINTF_LIKE(1, 2);
#define EO_FUZZ_CHECK(cond, ...)                                                                   \
    do {                                                                                           \
        if (!(cond))                                                                               \
            eo_fuzz_fail(__VA_ARGS__);                                                             \
    } while (0)

/* A file of this process's own (created on first use, removed at exit)
 * holding exactly the given bytes; for readers that take a path. NULL if
 * it cannot be written. */
const char *eo_fuzz_file(const uint8_t *data, size_t size);

/* Silences stderr between begin and end (the argument parsers print a
 * line per refusal, which at 100k runs a second would drown everything).
 * EO_FUZZ_VERBOSE=1 in the environment keeps it, to study one input. */
void eo_fuzz_quiet_begin(void);
void eo_fuzz_quiet_end(void);

/* 1 if a NUL-terminated message mentions `name`. */
int eo_fuzz_mentions(const char *msg, const char *name);

#endif
