// matmul.metal — batched out[b] = op(A[b])·op(B[b]) for f32, f16 and bf16, three kernels:
//
//  matmul_simdgroup_<dtype> (Apple7+ GPUs, m > 1): 32×32 output tile per threadgroup of 128
//    threads (4 simdgroups in a 2×2 grid, each owning a 16×16 quarter = 2×2 simdgroup_float8x8
//    accumulators). Per 16-deep slice of k, the threadgroup stages op(A) [32×16] and op(B)
//    [16×32] in threadgroup memory as f32 (converted once; elements outside m, n or k are 0, so
//    edges need no special case), then each simdgroup multiply-accumulates 8×8 blocks. The
//    accumulators go through threadgroup memory so every thread stores its own elements with
//    bounds checks and one rounding to the output dtype.
//  matmul_tiled_<dtype> (GPUs without simdgroup matrices: AMD, Intel): 16×16 threads, one
//    output each, 16-deep slices staged in threadgroup memory.
//  matmul_gemv_<dtype> (m = 1, B stored [k, n]): one thread per output column reads B along its
//    column (coalesced across threads). matmul_gemv_t_<dtype> (m = 1, B stored [n, k]): one
//    simdgroup per output column strides over k and reduces with simd_sum; each threadgroup owns
//    8 columns whatever the simdgroup width.
//
// Layout: a [m, k] (or [k, m] with KILN_FC_TRANSPOSE_A), b [k, n] (or [n, k] with
// KILN_FC_TRANSPOSE_B), per batch index at batch·batch_stride (0 broadcasts one matrix); out
// dense [batch, m, n]; threadgroup z is the batch index. k = 0 writes zeros.
// Numerics: f32 accumulation for every dtype; one rounding to the output dtype.
#include "kiln_metal_common.h"

constant bool kTransposeA [[function_constant(KILN_FC_TRANSPOSE_A)]];
constant bool kTransposeB [[function_constant(KILN_FC_TRANSPOSE_B)]];

/** Element (row, depth) of op(A) of one batch, or 0 outside the matrix. */
template <typename S>
inline float load_a(device const S* a, constant KilnMatmulArgs& args, uint row, uint depth) {
  if (row >= args.m || depth >= args.k) return 0.0f;
  return Storage<S>::load(kTransposeA ? a[depth * args.m + row] : a[row * args.k + depth]);
}

/** Element (depth, column) of op(B) of one batch, or 0 outside the matrix. */
template <typename S>
inline float load_b(device const S* b, constant KilnMatmulArgs& args, uint depth, uint column) {
  if (column >= args.n || depth >= args.k) return 0.0f;
  return Storage<S>::load(kTransposeB ? b[column * args.k + depth] : b[depth * args.n + column]);
}

template <typename S>
kernel void matmul_simdgroup(device const S* a [[buffer(0)]], device const S* b [[buffer(1)]],
                             device S* out [[buffer(2)]], constant KilnMatmulArgs& args [[buffer(3)]],
                             uint3 group [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                             uint simdgroup [[simdgroup_index_in_threadgroup]]) {
  threadgroup float tile_a[32 * 16];
  threadgroup float tile_b[16 * 32];
  threadgroup float tile_out[32 * 32];
  const uint row0 = group.y * 32u;
  const uint column0 = group.x * 32u;
  device const S* matrix_a = a + group.z * args.batch_stride_a;
  device const S* matrix_b = b + group.z * args.batch_stride_b;
  // Simdgroup s owns rows 16·(s / 2) … and columns 16·(s % 2) … of the tile.
  const uint sub_row = (simdgroup / 2u) * 16u;
  const uint sub_column = (simdgroup % 2u) * 16u;
  simdgroup_float8x8 accumulators[2][2];
  for (uint i = 0u; i < 2u; i++) {
    for (uint j = 0u; j < 2u; j++) accumulators[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  for (uint k0 = 0u; k0 < args.k; k0 += 16u) {
    for (uint slot = tid; slot < 32u * 16u; slot += 128u) {
      // A tile [32 rows][16 depths], B tile [16 depths][32 columns], both row-major.
      tile_a[slot] = load_a(matrix_a, args, row0 + slot / 16u, k0 + slot % 16u);
      tile_b[slot] = load_b(matrix_b, args, k0 + slot / 32u, column0 + slot % 32u);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint kk = 0u; kk < 16u; kk += 8u) {
      simdgroup_float8x8 left[2];
      simdgroup_float8x8 right[2];
      for (uint i = 0u; i < 2u; i++) simdgroup_load(left[i], tile_a + (sub_row + 8u * i) * 16u + kk, 16);
      for (uint j = 0u; j < 2u; j++) simdgroup_load(right[j], tile_b + kk * 32u + sub_column + 8u * j, 32);
      for (uint i = 0u; i < 2u; i++) {
        for (uint j = 0u; j < 2u; j++)
          simdgroup_multiply_accumulate(accumulators[i][j], left[i], right[j], accumulators[i][j]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (uint i = 0u; i < 2u; i++) {
    for (uint j = 0u; j < 2u; j++)
      simdgroup_store(accumulators[i][j], tile_out + (sub_row + 8u * i) * 32u + sub_column + 8u * j, 32);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  device S* matrix_out = out + group.z * args.m * args.n;
  for (uint slot = tid; slot < 32u * 32u; slot += 128u) {
    const uint row = row0 + slot / 32u;
    const uint column = column0 + slot % 32u;
    if (row < args.m && column < args.n) matrix_out[row * args.n + column] = Storage<S>::store(tile_out[slot]);
  }
}

template <typename S>
kernel void matmul_tiled(device const S* a [[buffer(0)]], device const S* b [[buffer(1)]], device S* out [[buffer(2)]],
                         constant KilnMatmulArgs& args [[buffer(3)]], uint3 group [[threadgroup_position_in_grid]],
                         uint3 local [[thread_position_in_threadgroup]]) {
  threadgroup float tile_a[16][17];
  threadgroup float tile_b[16][17];
  const uint row = group.y * 16u + local.y;
  const uint column = group.x * 16u + local.x;
  device const S* matrix_a = a + group.z * args.batch_stride_a;
  device const S* matrix_b = b + group.z * args.batch_stride_b;
  float sum = 0.0f;
  for (uint k0 = 0u; k0 < args.k; k0 += 16u) {
    tile_a[local.y][local.x] = load_a(matrix_a, args, row, k0 + local.x);
    tile_b[local.y][local.x] = load_b(matrix_b, args, k0 + local.y, column);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint kk = 0u; kk < 16u; kk++) sum = fma(tile_a[local.y][kk], tile_b[kk][local.x], sum);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (row < args.m && column < args.n) out[group.z * args.m * args.n + row * args.n + column] = Storage<S>::store(sum);
}

template <typename S>
kernel void matmul_gemv(device const S* a [[buffer(0)]], device const S* b [[buffer(1)]], device S* out [[buffer(2)]],
                        constant KilnMatmulArgs& args [[buffer(3)]], uint3 position [[thread_position_in_grid]]) {
  const uint column = position.x;
  if (column >= args.n) return;
  device const S* vector = a + position.z * args.batch_stride_a;
  device const S* matrix = b + position.z * args.batch_stride_b;
  float sum = 0.0f;
  for (uint depth = 0u; depth < args.k; depth++)
    sum = fma(Storage<S>::load(vector[depth]), Storage<S>::load(matrix[depth * args.n + column]), sum);
  out[position.z * args.n + column] = Storage<S>::store(sum);
}

template <typename S>
kernel void matmul_gemv_t(device const S* a [[buffer(0)]], device const S* b [[buffer(1)]], device S* out [[buffer(2)]],
                          constant KilnMatmulArgs& args [[buffer(3)]], uint3 group [[threadgroup_position_in_grid]],
                          uint lane [[thread_index_in_simdgroup]], uint simdgroup [[simdgroup_index_in_threadgroup]],
                          uint width [[threads_per_simdgroup]], uint simdgroups [[simdgroups_per_threadgroup]]) {
  device const S* vector = a + group.z * args.batch_stride_a;
  device const S* matrix = b + group.z * args.batch_stride_b;
  const uint first = group.x * 8u;
  const uint last = min(first + 8u, args.n);
  for (uint column = first + simdgroup; column < last; column += simdgroups) {
    float sum = 0.0f;
    for (uint depth = lane; depth < args.k; depth += width) {
      sum = fma(Storage<S>::load(vector[depth]), Storage<S>::load(matrix[column * args.k + depth]), sum);
    }
    sum = simd_sum(sum);
    if (lane == 0u) out[group.z * args.n + column] = Storage<S>::store(sum);
  }
}

template [[host_name("matmul_simdgroup_f32")]] kernel decltype(matmul_simdgroup<float>) matmul_simdgroup<float>;
template [[host_name("matmul_simdgroup_f16")]] kernel decltype(matmul_simdgroup<half>) matmul_simdgroup<half>;
template [[host_name("matmul_simdgroup_bf16")]] kernel decltype(matmul_simdgroup<bf16>) matmul_simdgroup<bf16>;
template [[host_name("matmul_tiled_f32")]] kernel decltype(matmul_tiled<float>) matmul_tiled<float>;
template [[host_name("matmul_tiled_f16")]] kernel decltype(matmul_tiled<half>) matmul_tiled<half>;
template [[host_name("matmul_tiled_bf16")]] kernel decltype(matmul_tiled<bf16>) matmul_tiled<bf16>;
template [[host_name("matmul_gemv_f32")]] kernel decltype(matmul_gemv<float>) matmul_gemv<float>;
template [[host_name("matmul_gemv_f16")]] kernel decltype(matmul_gemv<half>) matmul_gemv<half>;
template [[host_name("matmul_gemv_bf16")]] kernel decltype(matmul_gemv<bf16>) matmul_gemv<bf16>;
template [[host_name("matmul_gemv_t_f32")]] kernel decltype(matmul_gemv_t<float>) matmul_gemv_t<float>;
template [[host_name("matmul_gemv_t_f16")]] kernel decltype(matmul_gemv_t<half>) matmul_gemv_t<half>;
template [[host_name("matmul_gemv_t_bf16")]] kernel decltype(matmul_gemv_t<bf16>) matmul_gemv_t<bf16>;
