/* tools/cli/args.h — what every program's command line shares: strict
 * numeric values, named choices, --version and the "try --help" line.
 *
 * atoi("abc") is 0 and strtof("1e-3x") is 0.001: a typo would silently
 * train for zero epochs. These accept a value only when the whole string
 * is a number written plainly — no leading space or sign where a count is
 * meant, nothing after it, no overflow ("4abc", " -1", "", "+5",
 * "99999999999999999999" are all refused). Otherwise they print
 * "PROGRAM: --opt: 'abc' is not ..." to stderr and return 0, so the caller
 * can exit with status 2; on success they store the value and return 1.
 * Options themselves are parsed with getopt_long in each program. */
#ifndef EO_TOOLS_ARGS_H
#define EO_TOOLS_ARGS_H

#include <stdint.h>
#include <stdio.h>

/* The program name used in messages ("eo-train"); also makes a failed
 * write to standard output an exit status of 1 (eo_close_stdout_at_exit,
 * tools/cli/files.h), since every program calls this first. */
void eo_args_program(const char *name);

int eo_arg_int(const char *opt, const char *v, int *out);                  /* >= 0 */
int eo_arg_u64(const char *opt, const char *v, unsigned long long *out);
int eo_arg_float(const char *opt, const char *v, float *out);              /* finite */

/* A whole number in [lo, hi] (lo may be negative: then one '-' may lead);
 * the message names the range. */
int eo_arg_i64_range(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out);
/* The same into an int; lo and hi must fit an int. */
int eo_arg_int_range(const char *opt, const char *v, int lo, int hi, int *out);

/* An arena size in MiB (--persist-mb, --step-mb): from 1 to what a size_t
 * can hold shifted by 20 (4095 on a 32-bit build, 2^20 on a 64-bit one). */
int eo_arg_arena_mb(const char *opt, const char *v, size_t *mb);

/* v is one of names[0..n): stores its index; else lists the choices. */
int eo_arg_choice(const char *opt, const char *v, const char *const *names, int n, int *out);

/* "PROGRAM (EveryO X.Y.Z)" on f, for --version. */
void eo_args_version(FILE *f);
/* After getopt_long has named the bad option: "Try 'PROGRAM --help'.";
 * returns 2, the exit status of a usage error. */
int eo_args_try_help(void);

/* After the option loop, for programs that take no operands: 1 when
 * argv[optind..] is empty, else names the first stray word ("unexpected
 * argument 'x'"), points to --help and returns 0. */
int eo_args_no_operands(int argc, char **argv);

/* The whole option loop of a program whose only options are -h/--help and
 * --version (the rest are operands): -1 to go on with argv[optind..], or
 * the exit status after printing usage(stdout), the version, or a bad
 * option's message. */
int eo_args_help_version(int argc, char **argv, void (*usage)(FILE *));

#endif
