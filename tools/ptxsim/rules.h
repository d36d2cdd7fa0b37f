/* tools/ptxsim/rules.h — the rules of PTX itself, as ptxas enforces them,
 * applied to the decoded form (isa.h). Internal to tools/ptxsim/.
 *
 * The parser (parse.c) already refuses what the interpreter does not
 * model. This is the other half: what PTX does not allow, even where the
 * interpreter could give it a meaning — an instruction newer than the
 * module's .version or .target, an instruction type the opcode does not
 * take (and.u32, setp.lt.b32), a register whose type does not fit
 * (add.f32 on a .b64 register, ld.global.v4.f32 into .b16 registers, a
 * .pred used as data), a missing rounding modifier. Without these a
 * kernel could pass every CPU test and then be refused by the driver's
 * JIT on the first real GPU. Each rule was checked against ptxas 13.0
 * (tests/ptx_broken/ holds one kernel per kind of refusal). */
#ifndef EO_PTXSIM_RULES_H
#define EO_PTXSIM_RULES_H

#include <stddef.h>
#include "tools/ptxsim/isa.h"

/* The newest target the interpreter models: the driver double's device
 * is an sm_80, and features of later targets are not implemented. */
#define EO_PX_SM_MAX 80

/* .target sm_<sm> under .version <ptx> (major * 10 + minor): EO_OK, or
 * EO_ERR_FORMAT (a target PTX does not define, or one the version
 * predates), or EO_ERR_UNSUPPORTED (newer than EO_PX_SM_MAX); the reason
 * goes to msg. */
eo_status px_rules_target(int ptx, int sm, char *msg, size_t cap);

/* One decoded instruction of kernel k (its registers' types and names)
 * in a module of that version and target: EO_OK, or EO_ERR_FORMAT with
 * the rule it breaks in msg (without the line, which the caller adds). */
eo_status px_rules_insn(const eo_px_kernel *k, const px_insn *in, int ptx, int sm, char *msg,
                        size_t cap);

#endif
