// indexing.metal — gather_<u32|u16> and scatter_add_<dtype>, with in-kernel index checks.
//
// Algorithm: one thread per element of out (gather) or of source (scatterAdd), KILN_THREADS per
// threadgroup. Every index is checked (docs/kernel-semantics.md, "Out-of-range indices"): an index outside
// [0, rows) never reads or writes out of bounds — gather writes 0, scatterAdd skips the element —
// and the first offender (kernel, position, value, rows) wins the device error record by
// compare-and-swap; the host turns it into an InvalidArgumentError at the next synchronize or
// download. scatterAdd accumulates with atomics: i32 atomic_fetch_add (wraps), f32 a
// compare-and-swap loop on the word, f16/bf16 a compare-and-swap loop on the 32-bit word that
// holds the element (Metal has no 16-bit atomics), rounding each addition once.
// Layout: x/out [outer, rows, inner], indices i32 [count], out/source [outer, count, inner];
// KilnIndexArgs.total = outer · count · inner.
// Numerics: gather moves raw bits; scatterAdd float sums over duplicate indices depend on the
// order the atomics land in.
#include "kiln_metal_common.h"

inline void report_index_error(device KilnErrorRecord* record, uint kernel_id, uint position, int value, uint bound) {
  device atomic_uint* flag = (device atomic_uint*)&record->flag;
  uint expected = 0u;
  while (!atomic_compare_exchange_weak_explicit(flag, &expected, 1u, memory_order_relaxed, memory_order_relaxed)) {
    if (expected != 0u) return;
  }
  record->kernel_id = kernel_id;
  record->position = position;
  record->value = value;
  record->bound = bound;
}

template <typename W>
kernel void gather(device const W* x [[buffer(0)]], device const int* indices [[buffer(1)]], device W* out [[buffer(2)]],
                   constant KilnIndexArgs& args [[buffer(3)]], device KilnErrorRecord* errors [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.total) return;
  const uint block = gid / (args.count * args.inner);
  const uint position = (gid / args.inner) % args.count;
  const uint column = gid % args.inner;
  const int index = indices[position];
  if (index < 0 || uint(index) >= args.rows) {
    out[gid] = W(0);
    report_index_error(errors, KILN_INDEX_ERROR_GATHER, position, index, args.rows);
    return;
  }
  out[gid] = x[(block * args.rows + uint(index)) * args.inner + column];
}

template [[host_name("gather_u32")]] kernel decltype(gather<uint>) gather<uint>;
template [[host_name("gather_u16")]] kernel decltype(gather<ushort>) gather<ushort>;

/** Adds `value` to element `element` of a 16-bit float buffer (f16 or bf16) by CAS on its 32-bit word. */
template <typename S>
inline void atomic_add_16(device S* base, uint element, float value) {
  device atomic_uint* word = (device atomic_uint*)((device uchar*)base + (element & ~1u) * 2u);
  const uint shift = (element & 1u) * 16u;
  uint expected = atomic_load_explicit(word, memory_order_relaxed);
  for (;;) {
    const S current = Bits16<S>::from(ushort((expected >> shift) & 0xffffu));
    const S sum = Storage<S>::store(Storage<S>::load(current) + value);
    const uint desired = (expected & ~(0xffffu << shift)) | (uint(Bits16<S>::to(sum)) << shift);
    if (atomic_compare_exchange_weak_explicit(word, &expected, desired, memory_order_relaxed, memory_order_relaxed)) return;
  }
}

template <typename S>
inline void atomic_add_element(device S* out, uint element, S value);

template <>
inline void atomic_add_element<float>(device float* out, uint element, float value) {
  device atomic_uint* word = (device atomic_uint*)(out + element);
  uint expected = atomic_load_explicit(word, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(word, &expected, as_type<uint>(as_type<float>(expected) + value), memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}
template <>
inline void atomic_add_element<half>(device half* out, uint element, half value) {
  atomic_add_16(out, element, float(value));
}
template <>
inline void atomic_add_element<bf16>(device bf16* out, uint element, bf16 value) {
  atomic_add_16(out, element, bf16_to_float(value));
}
template <>
inline void atomic_add_element<int>(device int* out, uint element, int value) {
  atomic_fetch_add_explicit((device atomic_int*)(out + element), value, memory_order_relaxed);
}

template <typename S>
kernel void scatter_add(device const S* source [[buffer(0)]], device const int* indices [[buffer(1)]], device S* out [[buffer(2)]],
                        constant KilnIndexArgs& args [[buffer(3)]], device KilnErrorRecord* errors [[buffer(4)]],
                        uint gid [[thread_position_in_grid]]) {
  if (gid >= args.total) return;
  const uint block = gid / (args.count * args.inner);
  const uint position = (gid / args.inner) % args.count;
  const uint column = gid % args.inner;
  const int index = indices[position];
  if (index < 0 || uint(index) >= args.rows) {
    report_index_error(errors, KILN_INDEX_ERROR_SCATTER_ADD, position, index, args.rows);
    return;
  }
  atomic_add_element<S>(out, (block * args.rows + uint(index)) * args.inner + column, source[gid]);
}

template [[host_name("scatter_add_f32")]] kernel decltype(scatter_add<float>) scatter_add<float>;
template [[host_name("scatter_add_f16")]] kernel decltype(scatter_add<half>) scatter_add<half>;
template [[host_name("scatter_add_bf16")]] kernel decltype(scatter_add<bf16>) scatter_add<bf16>;
template [[host_name("scatter_add_i32")]] kernel decltype(scatter_add<int>) scatter_add<int>;
