/* tools/formats/durable.h — replacing a file so that a crash, a full disk
 * or an I/O error never leaves a half-written file under its name.
 *
 * The steps (the usual POSIX recipe for an atomic replacement):
 *
 *   1. open      PATH.tmp in the same directory (created, truncated;
 *                not through a symlink; a regular file only)
 *   2. write     the content, every byte (short writes are continued)
 *   3. fsync     the temporary, so its data is on disk before its name
 *   4. close     (an error that close reports is an error)
 *   5. rename    PATH.tmp over PATH: atomic; a reader sees the old file
 *                or the new one, never a mixture
 *   6. fsync the directory, so the rename itself survives a power cut
 *
 * A failure at steps 1-5 removes the temporary and leaves the previous
 * PATH untouched; a failure at step 6 is still reported (the new file is
 * in place and complete, but its name may not survive a power cut). A
 * crash between any two steps leaves PATH as it was (steps 1-4) or
 * complete and new (5-6); a temporary left behind by a crash is
 * truncated by the next write.
 *
 * Every step goes through an eo_durable_io table, so tests inject a short
 * write, ENOSPC, EIO, or a "crash" (every later call fails, nothing is
 * cleaned up) at any step without a special file system. Tools only (it
 * uses POSIX); not installed. */
#ifndef EO_TOOLS_DURABLE_H
#define EO_TOOLS_DURABLE_H

#include <stddef.h>
#include <sys/types.h>
#include "alloc/status.h"

/* The system calls the replacement makes, with their POSIX meaning:
 * -1 (or a negative count) and errno on failure. */
typedef struct eo_durable_io {
    int (*open)(const char *path, int flags, mode_t mode);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    int (*fsync)(int fd);
    int (*close)(int fd);
    int (*rename)(const char *from, const char *to);
    int (*unlink)(const char *path);
} eo_durable_io;

/* The table every durable write uses, and the POSIX one it starts as. */
extern const eo_durable_io eo_durable_posix;

/* Replaces the table (NULL: back to eo_durable_posix) and returns the one
 * it replaced. For tests: the table is process-wide, so swap it only
 * while no other thread writes a file. */
const eo_durable_io *eo_durable_set_io(const eo_durable_io *io);

/* A file being written: bytes go through a buffer to io->write. */
typedef struct eo_durable_file eo_durable_file;

/* Appends n bytes; 0 once a write has failed (the replacement then
 * fails with the write's message), 1 otherwise. */
int eo_durable_put(eo_durable_file *f, const void *buf, size_t n);

/* Writes the content: calls eo_durable_put, returns EO_OK, or a status
 * with its own message in err (the replacement then fails with it). */
typedef eo_status (*eo_durable_fill)(eo_durable_file *f, void *arg, char *err, size_t errlen);

/* Replaces path with what fill writes, by the steps above. path must be
 * absent or a regular file (tools/cli/files.h: eo_file_check_target), as
 * must PATH.tmp. EO_OK; EO_ERR_IO with "PATH: STEP failed: REASON ..."
 * (STEP is write, fsync, close, rename or "directory fsync"); EO_ERR_ARG
 * for a NULL or empty path or a NULL fill; EO_ERR_OOM; or fill's status. */
eo_status eo_durable_replace(const char *path, eo_durable_fill fill, void *arg, char *err,
                             size_t errlen);

#endif
