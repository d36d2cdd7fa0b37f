/* tools/cli/files.h — every file a program opens by name goes through here.
 *
 * Input files are untrusted names: a FIFO makes fopen block forever (it
 * waits for a writer), /dev/zero never ends, a directory opens and then
 * fails oddly. Output names are no better: renaming a finished file over
 * a symlink replaces the link, and as root over a device node replaces
 * the node. So:
 *
 *  - readers open with O_NONBLOCK (opening a FIFO returns at once), check
 *    with fstat that the name is a regular file before any read, then
 *    read at most a stated number of bytes;
 *  - writers accept a target that is absent or a regular file (lstat:
 *    a symlink is refused, not followed), create with O_NOFOLLOW and
 *    check again with fstat on what was opened;
 *  - closing reports a write error that stdio kept until then (ferror,
 *    fclose), and eo_args_program makes standard output do the same at
 *    exit (see eo_close_stdout_at_exit).
 *
 * Every call returns EO_OK, or EO_ERR_IO / EO_ERR_OOM / EO_ERR_ARG with a
 * message naming the file and, for a wrong kind of file, what it is ("a
 * FIFO", "a directory", "a symbolic link", "a character device"). */
#ifndef EO_TOOLS_FILES_H
#define EO_TOOLS_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "alloc/status.h"

/* What kind of file a stat mode names, for messages: "a directory". */
const char *eo_file_kind(unsigned mode);

/* Opens path for reading in binary mode. *fp is a blocking stream on a
 * regular file; *size (may be NULL) its length in bytes at open time. A
 * missing file, or a FIFO, device, directory or socket, is EO_ERR_IO
 * ("PATH: is a FIFO, expected a regular WHAT file"); what names the
 * expected content ("safetensors", "IDX", "text", "PTX") and may be NULL. */
eo_status eo_file_open_read(const char *path, const char *what, FILE **fp, uint64_t *size,
                            char *err, size_t errlen);

/* The whole of a regular file, at most max bytes, into malloc'd memory:
 * *buf holds *len bytes and one NUL after them (so text can be used as a
 * string). A file longer than max is refused before anything is read
 * ("PATH: 3000000000 bytes, more than the 268435456 this reads"); a file
 * that grows while being read is refused too. The caller frees *buf. */
eo_status eo_file_read_all(const char *path, const char *what, size_t max, char **buf,
                           size_t *len, char *err, size_t errlen);

/* Is path a name a program may create or replace? EO_OK when nothing is
 * there or a regular file is (lstat, so a symlink is refused, even one to
 * a regular file); EO_ERR_IO naming what is there otherwise. */
eo_status eo_file_check_target(const char *path, char *err, size_t errlen);

/* Before a long run: will path be writable at its end? The target is
 * checked (eo_file_check_target) and a file "PATH.tmp" — the name the
 * safetensors writer renames from — is created and removed again, so an
 * unwritable folder is found before an hour of training, not after. */
eo_status eo_file_probe_target(const char *path, char *err, size_t errlen);

/* Creates or truncates path for writing ("wb") after
 * eo_file_check_target; opened with O_NOFOLLOW and O_NONBLOCK and checked
 * again with fstat, so a name swapped for a link or a FIFO meanwhile is
 * refused, not followed or waited on. */
eo_status eo_file_create(const char *path, FILE **fp, char *err, size_t errlen);

/* Closes fp, written to path: a write error stdio kept (ferror) or one
 * that fclose finds while flushing is EO_ERR_IO ("PATH: write failed: No
 * space left on device"). fp may be NULL (EO_OK). */
eo_status eo_file_close(FILE *fp, const char *path, char *err, size_t errlen);

/* Registers, once per process, an exit handler that flushes and closes
 * standard output; if that fails (a full disk, a closed pipe, /dev/full)
 * it prints "PROGRAM: write error on standard output: REASON" and makes
 * the exit status 1, so no program reports success for output that was
 * lost. Called by eo_args_program. */
void eo_close_stdout_at_exit(const char *program);

#endif
