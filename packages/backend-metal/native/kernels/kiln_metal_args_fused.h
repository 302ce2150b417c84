// kiln_metal_args_fused.h — the argument structs of the fused kernels (softmax family, norms,
// rope, swiglu, cross-entropy, AdamW, the multi-tensor kernels), included at the end of kiln_metal_args.h so host and
// shaders share one layout. Same rules: plain 4-byte fields, sizes asserted below.
#pragma once

/** Most threads per threadgroup of the row kernels (one threadgroup per row). */
#define KILN_ROW_THREADS_MAX 256
/** Threads per threadgroup of the elementwise fused kernels (swiglu, adamw, rope). */
#define KILN_FUSED_THREADS 256

/** What softmax_rows writes (KILN_FC_OP). */
#define KILN_SOFTMAX_PLAIN 0
#define KILN_SOFTMAX_LOG 1

/** Elements per threadgroup (chunk) of the multi-tensor kernels (sumOfSquaresMulti pass 1). */
#define KILN_MULTI_CHUNK 8192

/** The norms' backward column sums (dWeight, dBias): tiles of 32 columns × 8 row threads, chunks of rows. */
#define KILN_COLUMN_TILE 32
#define KILN_COLUMN_ROW_THREADS 8

/** Row kernels over x [rows, cols] (softmax family, the norms and their backwards); eps for the norms. */
struct KilnRowsArgs {
  kiln_u32 rows;
  kiln_u32 cols;
  float eps;
  kiln_u32 pad0;
};

/** The norms' backward column sums: rows split into `chunks` chunks of `rows_per_chunk` (the last may be shorter). */
struct KilnColumnSumArgs {
  kiln_u32 rows;
  kiln_u32 cols;
  kiln_u32 rows_per_chunk;
  kiln_u32 chunks;
};

/** rope over x [rows, positions, dim] (or tokens-major [B, positions, heads, dim]) with a host cos/sin table [positions, dim / 2] each. */
struct KilnRopeArgs {
  /** Rows of D between consecutive positions of one row: 1 heads-major, H tokens-major. */
  kiln_u32 heads;
  kiln_u32 positions;
  kiln_u32 half_dim;
  kiln_u32 pairs;
};

/** crossEntropy(Backward) over logits [rows, classes]; scale for the backward. */
struct KilnCrossEntropyArgs {
  kiln_u32 rows;
  kiln_u32 classes;
  kiln_i32 ignore_index;
  float scale;
};

/** One AdamW step: scalars computed in f64 by the host and rounded once to f32. */
struct KilnAdamWArgs {
  kiln_u32 count;
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  /** 1 − lr · weightDecay. */
  float decay;
  /** lr / (1 − β1^t). */
  float step_size;
  /** 1 / √(1 − β2^t). */
  float inverse_root_correction;
  float eps;
  kiln_u32 pad0;
  kiln_u32 pad1;
  kiln_u32 pad2;
};

/** sumOfSquaresMulti: pass 1 over one tensor of `count` elements, chunk sums written from partials[first_partial]; pass 2 folds `count` partials. */
struct KilnSumOfSquaresArgs {
  kiln_u32 count;
  kiln_u32 first_partial;
  kiln_u32 pad0;
  kiln_u32 pad1;
};

/**
 * adamwMulti's gradient scale (a number, or the one-element f32 buffer at [[buffer(5)]]), guard
 * ([[buffer(6)]]) and device scalars ([[buffer(8)]]: f32 [step size, 1/√(1−β2^t), one decay per param]).
 */
struct KilnAdamWMultiControl {
  float scale;
  /** 1: read the scale from the buffer; 0: use `scale`. */
  kiln_u32 scale_from_buffer;
  /** 1: a non-finite guard value makes the step write nothing; 0: no guard. */
  kiln_u32 guarded;
  /** 1: read step size, bias correction and decay from the scalars buffer; 0: use KilnAdamWArgs. */
  kiln_u32 scalars_from_buffer;
  /** This tensor's index in the param list: its decay is scalars[2 + decay_slot]. */
  kiln_u32 decay_slot;
  kiln_u32 pad0;
  kiln_u32 pad1;
  kiln_u32 pad2;
};

static_assert(sizeof(struct KilnRowsArgs) == 16, "KilnRowsArgs layout");
static_assert(sizeof(struct KilnColumnSumArgs) == 16, "KilnColumnSumArgs layout");
static_assert(sizeof(struct KilnRopeArgs) == 16, "KilnRopeArgs layout");
static_assert(sizeof(struct KilnCrossEntropyArgs) == 16, "KilnCrossEntropyArgs layout");
static_assert(sizeof(struct KilnAdamWArgs) == 48, "KilnAdamWArgs layout");
static_assert(sizeof(struct KilnSumOfSquaresArgs) == 16, "KilnSumOfSquaresArgs layout");
static_assert(sizeof(struct KilnAdamWMultiControl) == 32, "KilnAdamWMultiControl layout");
