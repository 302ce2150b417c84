// kiln_metal_args.h — the argument structs of every Metal kernel, included by the host (C++:
// native/plan, native/host) and by every .metal file, so their layouts cannot drift apart
// (ggml-metal-impl.h's rule). Plain 4-byte fields only: the same bytes in MSL and C++.
//
// Layout: counts, shapes and offsets in elements; strides in elements as two's-complement
// int (offsets are computed modulo 2³², exact because every element index of a kiln tensor on
// Metal is below 2³²). A strided dispatch covers up to KILN_MAX_RANK dims after the host merged
// contiguous ones; the host splits anything beyond into several dispatches.
#pragma once

#if defined(__METAL_VERSION__)
typedef uint kiln_u32;
typedef int kiln_i32;
#else
#include <cstddef>
#include <cstdint>
typedef std::uint32_t kiln_u32;
typedef std::int32_t kiln_i32;
#endif

/** Most dims one strided dispatch takes. */
#define KILN_MAX_RANK 8
/** Operands a strided dispatch can address (binary: a, b, out; where: condition, a, b; copy: src, dst). */
#define KILN_MAX_OPERANDS 3

/** Threads per threadgroup of the elementwise, conversion and indexing kernels. */
#define KILN_THREADS 256

// Function constant indices (one table for every file).
#define KILN_FC_OP 0
#define KILN_FC_LAYOUT_A 1
#define KILN_FC_LAYOUT_B 2
#define KILN_FC_CONDITION_KIND 3
#define KILN_FC_TRANSPOSE_A 4
#define KILN_FC_TRANSPOSE_B 5

/** How a binary operand is addressed (KILN_FC_LAYOUT_*): offset + i, one element, or strided. */
#define KILN_LAYOUT_CONTIGUOUS 0
#define KILN_LAYOUT_BROADCAST 1
#define KILN_LAYOUT_STRIDED 2

/** How `where` tests its condition (KILN_FC_CONDITION_KIND). */
#define KILN_CONDITION_F32 0
#define KILN_CONDITION_I32 1
#define KILN_CONDITION_HALF_BITS 2

/** A count of elements (unary, cast, copy_bytes). */
struct KilnCountArgs {
  kiln_u32 count;
  kiln_u32 pad0;
  kiln_u32 pad1;
  kiln_u32 pad2;
};

/** Operands sharing one shape, each at its own strides and offset; the output is written at out_offset + i. */
struct KilnStridedArgs {
  kiln_u32 count;
  kiln_u32 rank;
  kiln_u32 out_offset;
  kiln_u32 pad;
  kiln_u32 shape[KILN_MAX_RANK];
  kiln_i32 strides[KILN_MAX_OPERANDS][KILN_MAX_RANK];
  kiln_u32 offsets[KILN_MAX_OPERANDS];
  kiln_u32 pad1;
};

/** x viewed [outer, size, inner] → out [outer, inner]. */
struct KilnReduceArgs {
  kiln_u32 outer;
  kiln_u32 size;
  kiln_u32 inner;
  kiln_u32 pad;
};

/** Two-pass reduce: x [outer, size, inner] cut into `chunks` chunks of `chunk_size` along size (the last may be shorter). */
struct KilnReduceChunkArgs {
  kiln_u32 outer;
  kiln_u32 size;
  kiln_u32 inner;
  kiln_u32 chunks;
  kiln_u32 chunk_size;
  kiln_u32 pad0;
  kiln_u32 pad1;
  kiln_u32 pad2;
};

/** Batched matmul; the transposes are function constants. */
struct KilnMatmulArgs {
  kiln_u32 m;
  kiln_u32 n;
  kiln_u32 k;
  kiln_u32 batch;
  kiln_u32 batch_stride_a;
  kiln_u32 batch_stride_b;
  kiln_u32 pad0;
  kiln_u32 pad1;
};

/** gather / scatterAdd over x (or out) viewed [outer, rows, inner] and `count` indices. */
struct KilnIndexArgs {
  kiln_u32 outer;
  kiln_u32 rows;
  kiln_u32 inner;
  kiln_u32 count;
  /** Threads with work: outer · count · inner (gather), outer · groups · inner (scatterAdd). */
  kiln_u32 total;
  /** scatterAdd: row ranges owned by separate threads (gather: 0). */
  kiln_u32 groups;
  /** scatterAdd: rows per range (the last range may be shorter). */
  kiln_u32 rows_per_group;
  kiln_u32 pad0;
};

/** fill: `bits` is the value already rounded to the dtype by the host (16-bit dtypes use the low half). */
struct KilnFillArgs {
  kiln_u32 count;
  kiln_u32 bits;
  kiln_u32 pad0;
  kiln_u32 pad1;
};

/** random: Philox key, the first element's counter offset, and two f64 parameters as raw IEEE bits (low word first). */
struct KilnRandomArgs {
  kiln_u32 count;
  kiln_u32 key0;
  kiln_u32 key1;
  kiln_u32 pad;
  kiln_u32 offset_low;
  kiln_u32 offset_high;
  /** uniform: low; normal: mean. */
  kiln_u32 first_low;
  kiln_u32 first_high;
  /** uniform: high − low (computed in f64 by the host, as core does); normal: std. */
  kiln_u32 second_low;
  kiln_u32 second_high;
  kiln_u32 pad1;
  kiln_u32 pad2;
};

/** The device error flag (docs/kernel-semantics.md, "Out-of-range indices"): the first offender wins the flag. */
struct KilnErrorRecord {
  kiln_u32 flag;
  kiln_u32 kernel_id;  // KILN_INDEX_ERROR_* (kiln/op_codes.h)
  kiln_u32 position;
  kiln_i32 value;
  kiln_u32 bound;
  kiln_u32 pad0;
  kiln_u32 pad1;
  kiln_u32 pad2;
};

static_assert(sizeof(struct KilnCountArgs) == 16, "KilnCountArgs layout");
static_assert(sizeof(struct KilnStridedArgs) == 16 + 4 * KILN_MAX_RANK * (1 + KILN_MAX_OPERANDS) + 16,
              "KilnStridedArgs layout");
static_assert(sizeof(struct KilnReduceArgs) == 16, "KilnReduceArgs layout");
static_assert(sizeof(struct KilnReduceChunkArgs) == 32, "KilnReduceChunkArgs layout");
static_assert(sizeof(struct KilnMatmulArgs) == 32, "KilnMatmulArgs layout");
static_assert(sizeof(struct KilnIndexArgs) == 32, "KilnIndexArgs layout");
static_assert(sizeof(struct KilnFillArgs) == 16, "KilnFillArgs layout");
static_assert(sizeof(struct KilnRandomArgs) == 48, "KilnRandomArgs layout");
static_assert(sizeof(struct KilnErrorRecord) == 32, "KilnErrorRecord layout");

#include "kiln_metal_args_attention.h"
#include "kiln_metal_args_fused.h"
