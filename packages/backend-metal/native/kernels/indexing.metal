// indexing.metal — gather_<u32|u16> and scatter_add_<dtype>, with in-kernel index checks.
//
// Algorithm: gather: one thread per element of out, KILN_THREADS per threadgroup. scatterAdd:
// per-row ownership, no atomics — the rows of out are split into `groups` ranges of
// `rows_per_group` consecutive rows; thread (o, group, column) owns out[o, rows of its range,
// column] and walks every position in order, adding source[o, position, column] when the index
// falls in its range (the host picks groups so about 65 536 threads run; each reads all `count`
// indices, which a simdgroup shares). Every index is checked (docs/kernel-semantics.md, "Out-of-range indices"): an index outside
// [0, rows) never reads or writes out of bounds — gather writes 0, scatterAdd skips the element —
// and the first offender (kernel, position, value, rows) wins the device error record by
// compare-and-swap; the host turns it into an InvalidArgumentError at the next synchronize or
// download (scatterAdd: the owner of group 0, column 0 of block 0 reports, in position order).
// Layout: x/out [outer, rows, inner], indices i32 [count], out/source [outer, count, inner];
// KilnIndexArgs.total = outer · count · inner (gather) or outer · groups · inner (scatterAdd).
// Numerics: gather moves raw bits; scatterAdd adds in the dtype (f32, f16/bf16 rounded once per
// addition, i32 wrapping) in position order — duplicates accumulate in the same order on every
// run, so the result is deterministic (the same bits as a sequential loop).
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
kernel void gather(device const W* x [[buffer(0)]], device const int* indices [[buffer(1)]],
                   device W* out [[buffer(2)]], constant KilnIndexArgs& args [[buffer(3)]],
                   device KilnErrorRecord* errors [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
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

/** a + b in S's own precision: f32, f16/bf16 rounded once per addition, i32 wrapping. */
template <typename S>
inline S add_in_dtype(S a, S b) {
  return Storage<S>::store(Storage<S>::load(a) + Storage<S>::load(b));
}
template <>
inline int add_in_dtype<int>(int a, int b) {
  return wrap_add(a, b);
}

template <typename S>
kernel void scatter_add(device const S* source [[buffer(0)]], device const int* indices [[buffer(1)]],
                        device S* out [[buffer(2)]], constant KilnIndexArgs& args [[buffer(3)]],
                        device KilnErrorRecord* errors [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.total) return;
  const uint column = gid % args.inner;
  const uint group = (gid / args.inner) % args.groups;
  const uint block = gid / (args.inner * args.groups);
  const uint first_row = group * args.rows_per_group;
  const uint end_row = min(first_row + args.rows_per_group, args.rows);
  const bool reporter = block == 0u && group == 0u && column == 0u;
  for (uint position = 0u; position < args.count; position++) {
    const int index = indices[position];
    if (index < 0 || uint(index) >= args.rows) {
      if (reporter) report_index_error(errors, KILN_INDEX_ERROR_SCATTER_ADD, position, index, args.rows);
      continue;
    }
    if (uint(index) < first_row || uint(index) >= end_row) continue;
    const uint target = (block * args.rows + uint(index)) * args.inner + column;
    out[target] = add_in_dtype<S>(out[target], source[(block * args.count + position) * args.inner + column]);
  }
}

template [[host_name("scatter_add_f32")]] kernel decltype(scatter_add<float>) scatter_add<float>;
template [[host_name("scatter_add_f16")]] kernel decltype(scatter_add<half>) scatter_add<half>;
template [[host_name("scatter_add_bf16")]] kernel decltype(scatter_add<bf16>) scatter_add<bf16>;
template [[host_name("scatter_add_i32")]] kernel decltype(scatter_add<int>) scatter_add<int>;
