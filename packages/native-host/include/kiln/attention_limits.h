// kiln/attention_limits.h — what CUDA's and Metal's flash-attention kernels and their hosts share:
// the head-dim and length limits, the head-dim buckets the kernels are specialised for, and the
// log2 constants of the online softmax. Preprocessor only, so .cu, .metal and C++ include it.
//
// Numerics: scores are kept in log2 units, s₂ = (scale·q·k + mask)·log2(e), so every exponential
// is one exp2; the row log-sum-exp goes back to natural log (· ln 2) once per row.
#pragma once

/** Largest head dimension of the flash kernels (larger heads use core's composition). */
#define KILN_ATTENTION_MAX_HEAD_DIM 128
/** Longest Tq or Tk the kernels take, 2^30 (positions and causal shifts stay far from 32-bit overflow). */
#define KILN_ATTENTION_MAX_LENGTH (1u << 30)
/** The head-dim bucket (32, 64 or 128) whose kernels serve `head_dim` (at most KILN_ATTENTION_MAX_HEAD_DIM). */
#define KILN_ATTENTION_HEAD_DIM_BUCKET(head_dim) ((head_dim) <= 32 ? 32 : (head_dim) <= 64 ? 64 : 128)
/** log2(e): natural-log scores to log2 units. */
#define KILN_ATTENTION_LOG2E 1.4426950408889634f
/** ln(2): a log2 log-sum-exp back to natural log. */
#define KILN_ATTENTION_LN2 0.6931471805599453f
