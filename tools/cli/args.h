/* tools/cli/args.h — strict parsing of numeric command-line values.
 *
 * atoi("abc") is 0 and strtof("1e-3x") is 0.001: a typo would silently
 * train for zero epochs. These accept a value only when the whole string
 * is a number; otherwise they print "PROGRAM: --opt: 'abc' is not ..."
 * to stderr and return 0, so the caller can exit with status 2. */
#ifndef EO_TOOLS_ARGS_H
#define EO_TOOLS_ARGS_H

/* The program name used in messages ("eo-train"). */
void eo_args_program(const char *name);

int eo_arg_int(const char *opt, const char *v, int *out);                  /* >= 0 */
int eo_arg_u64(const char *opt, const char *v, unsigned long long *out);
int eo_arg_float(const char *opt, const char *v, float *out);              /* finite */

#endif
