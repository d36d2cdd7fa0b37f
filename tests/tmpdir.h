/* tests/tmpdir.h — a scratch directory per test for suites that write files.
 *
 * Tests that exercise file readers need real files; each test gets a fresh
 * directory (mkdtemp under $TMPDIR) and everything in it is removed
 * afterwards, so runs never see each other's leftovers. */
#ifndef EO_TESTS_TMPDIR_H
#define EO_TESTS_TMPDIR_H

#include <stddef.h>

/* Creates the directory; returns its path (static storage) or NULL. */
const char *eo_tmpdir_make(void);

/* Writes dir/name with the given bytes; returns the full path (a static
 * slot that stays valid until eo_tmpdir_remove) or NULL. */
const char *eo_tmpdir_file(const char *name, const void *data, size_t n);

/* The same, gzip-compressed with zlib. */
const char *eo_tmpdir_gzfile(const char *name, const void *data, size_t n);

/* Just the full path for name inside the directory (static slot). */
const char *eo_tmpdir_path(const char *name);

/* Removes every file in the directory, then the directory. */
void eo_tmpdir_remove(void);

#endif
