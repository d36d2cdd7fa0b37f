/* tests/fuzz/fuzz_textlm.c — the GPT's text corpus (tools/train/textlm.c):
 * loading and cleaning a file, its vocabulary, the vocabulary read back
 * from a checkpoint's characters, and the validation windows.
 *
 * What must hold for any file: the cleaned text is no longer than the
 * file and holds only newline and printable lower-case ASCII; the
 * vocabulary is sorted, without repeats, and maps each of its characters
 * to its own index; rebuilding it from its characters gives the same
 * map; and every validation window lies inside the text. The input
 * doubles as a checkpoint's character string: eo_vocab_from_chars either
 * refuses a repeat or builds a consistent map. */
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"
#include "tools/train/textlm.h"

static void check_vocab(const eo_vocab *v)
{
    EO_FUZZ_CHECK(v->size >= 0 && v->size <= 256 && v->chars[v->size] == 0, "vocab size %d",
                  v->size);
    int seen = 0;
    for (int c = 0; c < 256; c++)
        if (v->id[c] >= 0) {
            EO_FUZZ_CHECK(v->id[c] < v->size && (unsigned char)v->chars[v->id[c]] == c,
                          "byte %d maps to %d", c, v->id[c]);
            seen++;
        }
    EO_FUZZ_CHECK(seen == v->size, "%d mapped bytes for %d tokens", seen, v->size);
}

int eo_fuzz_textlm(const uint8_t *data, size_t size)
{
    const char *path = eo_fuzz_file(data, size);
    if (!path)
        return 0;
    char *text = NULL, err[512] = "";
    size_t len = 0;
    eo_status st = eo_text_load_file(path, &text, &len, err, sizeof err);
    EO_FUZZ_CHECK(st == EO_OK, "a readable file was refused: %s", err);
    EO_FUZZ_CHECK(len <= size, "%zu bytes of text from %zu", len, size);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        EO_FUZZ_CHECK(c == '\n' || (c >= 32 && c < 127 && !(c >= 'A' && c <= 'Z')),
                      "byte 0x%02x at %zu survived cleaning", c, i);
    }
    eo_vocab v, w;
    eo_vocab_build(&v, text, len);
    check_vocab(&v);
    for (int i = 1; i < v.size; i++)
        EO_FUZZ_CHECK((unsigned char)v.chars[i - 1] < (unsigned char)v.chars[i],
                      "vocabulary not sorted at %d", i);
    EO_FUZZ_CHECK(eo_vocab_from_chars(&w, v.chars) == 0 && w.size == v.size &&
                      memcmp(w.id, v.id, sizeof v.id) == 0,
                  "the vocabulary does not survive its own characters");
    /* The validation windows of T + 1 characters, for a few T and K. */
    static const int64_t Ts[] = {1, 8, 64};
    static const int Ks[] = {1, 3, 64};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < Ks[b]; k++) {
                size_t s = eo_val_window_start(len, Ts[a], Ks[b], k);
                EO_FUZZ_CHECK(len <= (size_t)Ts[a] + 1 || s + (size_t)Ts[a] + 1 <= len,
                              "window %d of %d (T %lld) starts at %zu of %zu", k, Ks[b],
                              (long long)Ts[a], s, len);
            }
    free(text);
    /* The raw input as a checkpoint's "vocab" string. */
    char *chars = malloc(size + 1);
    if (chars) {
        memcpy(chars, data, size);
        chars[size] = 0;
        if (eo_vocab_from_chars(&w, chars) == 0) {
            check_vocab(&w);
            EO_FUZZ_CHECK(w.size == (int)strlen(chars) || w.size == 256,
                          "%d tokens from %zu characters", w.size, strlen(chars));
        }
        free(chars);
    }
    return 0;
}

EO_FUZZ_ENTRY(textlm)
