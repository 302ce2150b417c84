// copy.metal — element copies: copy_strided_u32 / copy_strided_u16 (the `copy` primitive between
// two views of equal shape) and copy_bytes (staged uploads into a buffer that queued work still
// uses, so the new bytes land in stream order).
//
// Algorithm: one thread per element, KILN_THREADS per threadgroup. Elements move as raw 32- or
// 16-bit words, so every dtype copies bit-exactly (NaN payloads, −0).
// Layout: KilnStridedArgs with operand 0 = src, operand 1 = dst (the host merges contiguous dims,
// so a dense copy is rank 1); copy_bytes: KilnCountArgs bytes from src to dst.
#include "kiln_metal_common.h"

template <typename W>
kernel void copy_strided(device const W* src [[buffer(0)]], device W* dst [[buffer(1)]],
                         constant KilnStridedArgs& args [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  dst[strided_offset(args, 1, gid)] = src[strided_offset(args, 0, gid)];
}

template [[host_name("copy_strided_u32")]] kernel decltype(copy_strided<uint>) copy_strided<uint>;
template [[host_name("copy_strided_u16")]] kernel decltype(copy_strided<ushort>) copy_strided<ushort>;

kernel void copy_bytes(device const uchar* src [[buffer(0)]], device uchar* dst [[buffer(1)]],
                       constant KilnCountArgs& args [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  dst[gid] = src[gid];
}
