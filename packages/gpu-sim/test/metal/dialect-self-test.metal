// Kernels exercising gpu_sim's Metal dialect: SIMD-group functions with early-returning lanes,
// threadgroup memory and barriers, simdgroup matrices, atomics, function constants with a
// templated kernel, builtins, a divergent barrier that must fail naming this file's line, and a
// float4 store that must fail the same way when its address is not 16-byte aligned.
#include <metal_stdlib>
using namespace metal;

struct Sizes {
  uint count;
  uint pad;
};

constant int kScale [[function_constant(0)]];

// Threads past `count` return early: the SIMD-group functions then act on the active lanes.
kernel void simd_functions(device const float* input [[buffer(0)]], device float* output [[buffer(1)]],
                           constant Sizes& sizes [[buffer(2)]], uint gid [[thread_position_in_grid]],
                           uint lane [[thread_index_in_simdgroup]]) {
  if (gid >= sizes.count) return;
  const float value = input[gid];
  device float* row = output + gid * 8;
  row[0] = simd_sum(value);
  row[1] = simd_max(value);
  row[2] = simd_prefix_inclusive_sum(value);
  row[3] = simd_prefix_exclusive_sum(value);
  row[4] = simd_shuffle_xor(value, ushort(1));
  row[5] = simd_broadcast(value, ushort(2));
  row[6] = float(simd_sum(int(lane)));
  row[7] = simd_any(value > 20.0f) ? 1.0f : 0.0f;
}

// Rotates values through threadgroup memory; slot 0 is read before any write (must be 0xFF bytes).
kernel void rotate(device uint* output [[buffer(0)]], uint tid [[thread_index_in_threadgroup]],
                   uint group [[threadgroup_position_in_grid]], uint size [[threads_per_threadgroup]]) {
  threadgroup uint tile[64];
  threadgroup uint untouched[2];
  uint value = tid + 100u * group;
  const uint first = untouched[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int round = 0; round < 3; round++) {
    tile[tid] = value;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    value = tile[(tid + 1) % size];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  output[group * size + tid] = value;
  if (tid == 0) output[1000 + group] = first;
}

// One 8×8 product per simdgroup: c = a·b + 1.
kernel void matrix_product(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                           device float* c [[buffer(2)]]) {
  threadgroup float staged[64];
  simdgroup_float8x8 left;
  simdgroup_float8x8 right;
  simdgroup_load(left, a, 8);
  simdgroup_load(right, b, 8);
  simdgroup_float8x8 result = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_multiply_accumulate(result, left, right, result);
  simdgroup_store(result, staged, 8);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_store(result, c, 8);
  simdgroup_barrier(mem_flags::mem_none);
}

kernel void atomics(device atomic_int* counter [[buffer(0)]], device atomic_float* total [[buffer(1)]],
                    device atomic_uint* maximum [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(total, 0.5f, memory_order_relaxed);
  uint expected = atomic_load_explicit(maximum, memory_order_relaxed);
  while (expected < gid &&
         !atomic_compare_exchange_weak_explicit(maximum, &expected, gid, memory_order_relaxed, memory_order_relaxed)) {
  }
}

template <typename T>
kernel void scale(device const T* input [[buffer(0)]], device T* output [[buffer(1)]],
                  uint2 position [[thread_position_in_grid]], uint2 grid [[threads_per_grid]]) {
  const uint index = position.y * grid.x + position.x;
  output[index] = T(float(input[index]) * float(kScale));
}
template [[host_name("scale_f32")]] kernel decltype(scale<float>) scale<float>;
template [[host_name("scale_f16")]] kernel decltype(scale<half>) scale<half>;

kernel void builtins(device uint* output [[buffer(0)]], uint3 position [[thread_position_in_grid]],
                     uint3 local [[thread_position_in_threadgroup]], uint3 group [[threadgroup_position_in_grid]],
                     uint3 groups [[threadgroups_per_grid]], uint3 size [[threads_per_threadgroup]],
                     uint linear [[thread_index_in_threadgroup]], uint simdgroup [[simdgroup_index_in_threadgroup]],
                     uint width [[threads_per_simdgroup]], uint simdgroups [[simdgroups_per_threadgroup]]) {
  const uint flat = ((group.z * groups.y + group.y) * groups.x + group.x) * (size.x * size.y * size.z) + linear;
  device uint* row = output + flat * 8;
  row[0] = position.x;
  row[1] = position.y;
  row[2] = local.z;
  row[3] = linear;
  row[4] = simdgroup;
  row[5] = width;
  row[6] = simdgroups;
  row[7] = group.y;
}

// Wrong on purpose: threads past 16 return before the barrier.
kernel void divergent_barrier(device float* output [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  if (tid >= 16) return;
  output[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
}

// Wrong on purpose: each lane loads the matrix from its own address.
kernel void lane_dependent_load(device const float* a [[buffer(0)]], device float* c [[buffer(1)]],
                                uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 matrix;
  simdgroup_load(matrix, a + lane, 8);
  simdgroup_store(matrix, c, 8);
}

// Wrong on purpose: lanes 0-15 shuffle while 16-31 reduce.
kernel void divergent_simd(device float* output [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  float value = float(lane);
  if (lane < 16)
    value = simd_shuffle_down(value, ushort(1));
  else
    value = simd_sum(value);
  output[lane] = value;
}

// Wrong on purpose unless offset is a multiple of 4: a float4 store through output + offset.
kernel void vector_store(device float* output [[buffer(0)]], constant uint& offset [[buffer(1)]]) {
  device float4* vectors = (device float4*)(output + offset);
  vectors[0] = float4(1.0f, 2.0f, 3.0f, 4.0f);
}
