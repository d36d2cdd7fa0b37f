/* tools/ptxsim/alu.h — per-thread arithmetic of the PTX interpreter
 * (ptxsim_alu.c), used by the executor. Internal to tools/ptxsim_*.c.
 *
 * Values travel as raw 64-bit register bits. A register holds its value
 * extended to 64 bits by its type (sign for .sN, zero otherwise), so any
 * narrower read only needs px_narrow(). */
#ifndef EO_PTXSIM_ALU_H
#define EO_PTXSIM_ALU_H

#include <stdint.h>
#include "tools/ptxsim/isa.h"

/* v cut to the type's width and extended back to 64 bits. */
static inline uint64_t px_narrow(uint64_t v, int type)
{
    switch (px_type_bytes(type)) {
    case 1: return px_type_is_signed(type) ? (uint64_t)(int64_t)(int8_t)v : (uint8_t)v;
    case 2: return px_type_is_signed(type) ? (uint64_t)(int64_t)(int16_t)v : (uint16_t)v;
    case 4: return px_type_is_signed(type) ? (uint64_t)(int64_t)(int32_t)v : (uint32_t)v;
    default: return type == PX_T_PRED ? (v != 0) : v;
    }
}
/* The type source operand i (1-based position in in->o) is read as. */
int px_src_type(const px_insn *in, int i);
/* The type the destination is written as (.wide doubles the width). */
int px_dst_type(const px_insn *in);
int px_wide_type(int t);
/* The result of a computing instruction from its sources a, b, c. */
uint64_t px_alu(const px_insn *in, uint64_t a, uint64_t b, uint64_t c);
/* setp's comparison (1 or 0). */
int px_compare(int cmp, int type, uint64_t a, uint64_t b);
/* 16-bit floats (cvt, mma). f32 -> f16/bf16 rounds by a PX_RND_ mode
 * (RN: to nearest, ties to even); NaN becomes PTX's canonical NaN 0x7fff;
 * f16 overflow goes to +-inf, or to the largest finite value where the
 * mode rounds toward zero; subnormal results are kept (no .ftz). The
 * widening conversions are exact. */
uint16_t px_f32_to_f16(float x, int rnd);
uint16_t px_f32_to_bf16(float x, int rnd);
float px_f16_to_f32(uint16_t h);
float px_bf16_to_f32(uint16_t h);

/* The new memory value of an atomic from the old one and operands b, c. */
uint64_t px_atom_apply(int sub, int type, uint64_t old, uint64_t b, uint64_t c);

#endif
