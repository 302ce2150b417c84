// rope.metal — rotary position embedding, half-split layout, forward and inverse (rope_<dtype>).
//
// Algorithm: one thread per rotated pair (row, t, i < D/2), KILN_FUSED_THREADS per threadgroup:
// it reads element i and element i + D/2 of x[row, t], and writes the pair rotated by the
// angle of (t, i). Consecutive threads take consecutive i, so loads coalesce.
// Layout: x, out dense [rows, T, D] (rows = B·H, D even), or tokens-major [B, T, H, D]
// (KilnRopeArgs.heads = H: the position of a row of D is (row / H) mod T instead of row mod T); cos
// and sin f32 tables [T, D/2] (KilnRopeArgs.pairs = B · H · T · D/2).
// Numerics: MSL has no f64, so the host computes the tables as docs/kernel-semantics.md defines
// the angle — f = theta^(−2i/D), a = p·f, cos and sin in f64 — rounded once to f32, with sin
// negated for the inverse (the backward); the rotation is f32, one rounding to the output dtype.
#include "kiln_metal_common.h"

template <typename S>
kernel void rope(device const S* x [[buffer(0)]], device const float* cos_table [[buffer(1)]],
                 device const float* sin_table [[buffer(2)]], device S* out [[buffer(3)]],
                 constant KilnRopeArgs& args [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.pairs) return;
  const uint i = gid % args.half_dim;
  const uint row_position = gid / args.half_dim;  // which row of D: (b·H + h)·T + t, or tokens-major (b·T + t)·H + h
  const uint t = row_position / args.heads % args.positions;
  const uint first = row_position * 2u * args.half_dim + i;
  const uint angle = t * args.half_dim + i;
  const float c = cos_table[angle];
  const float s = sin_table[angle];
  const float a = Storage<S>::load(x[first]);
  const float b = Storage<S>::load(x[first + args.half_dim]);
  out[first] = Storage<S>::store(a * c - b * s);
  out[first + args.half_dim] = Storage<S>::store(b * c + a * s);
}

template [[host_name("rope_f32")]] kernel decltype(rope<float>) rope<float>;
template [[host_name("rope_f16")]] kernel decltype(rope<half>) rope<half>;
template [[host_name("rope_bf16")]] kernel decltype(rope<bf16>) rope<bf16>;
