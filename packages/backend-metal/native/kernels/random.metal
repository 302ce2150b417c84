// random.metal — kiln's random stream (packages/core/src/random/philox.ts) on the GPU:
// random_uniform_<dtype> and random_normal_<dtype>, bit for bit equal to core's host generator.
//
// Algorithm: Philox4x32-10. Element e = offset + i uses counter block e / 4, lane e % 4 (uniform)
// or block e, lanes 0 and 1 (normal: Box-Muller), with counter words [block mod 2³², block / 2³²,
// 0, 0] and key [seed mod 2³², seed / 2³²]. One thread per element.
// Numerics: step for step as core, in emulated f64 (kiln_metal_softdouble.h: Apple GPUs have no
// f64): uniform = f32(low + (high − low)·unit), unit = (word >> 8)·2⁻²⁴, with high − low computed
// by the host in f64; normal = f32(mean + std·√(−2 ln u1)·cos(2π_f64·u2)) with
// u1 = ((w0 >> 8) + 1)·2⁻²⁴, u2 = (w1 >> 8)·2⁻²⁴. f16/bf16 round that f32 once more, as core does.
#include "kiln_metal_softdouble.h"

struct PhiloxWords {
  uint w[4];
};

inline PhiloxWords philox(ulong block, uint key0, uint key1) {
  uint c0 = uint(block & 0xfffffffful);
  uint c1 = uint(block >> 32);
  uint c2 = 0u;
  uint c3 = 0u;
  for (int round = 0; round < 10; round++) {
    const uint high0 = mulhi(0xd2511f53u, c0);
    const uint low0 = 0xd2511f53u * c0;
    const uint high1 = mulhi(0xcd9e8d57u, c2);
    const uint low1 = 0xcd9e8d57u * c2;
    c0 = high1 ^ c1 ^ key0;
    c1 = low1;
    c2 = high0 ^ c3 ^ key1;
    c3 = low0;
    key0 += 0x9e3779b9u;
    key1 += 0xbb67ae85u;
  }
  PhiloxWords words;
  words.w[0] = c0;
  words.w[1] = c1;
  words.w[2] = c2;
  words.w[3] = c3;
  return words;
}

inline ulong join_words(uint low, uint high) { return (ulong(high) << 32) | ulong(low); }

/** 2·Math.PI as f64 bits. */
constant ulong kTwoPi = 0x401921fb54442d18ul;
/** −2 as f64 bits. */
constant ulong kMinusTwo = 0xc000000000000000ul;

template <typename S>
kernel void random_uniform(device S* out [[buffer(0)]], constant KilnRandomArgs& args [[buffer(1)]],
                           uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const ulong element = join_words(args.offset_low, args.offset_high) + ulong(gid);
  const PhiloxWords words = philox(element / 4ul, args.key0, args.key1);
  const ulong unit = sd_from_uint(words.w[element % 4ul] >> 8, -24);
  const ulong low = join_words(args.first_low, args.first_high);
  const ulong range = join_words(args.second_low, args.second_high);
  const float value = as_type<float>(sd_to_f32_bits(sd_add(low, sd_mul(range, unit))));
  out[gid] = Storage<S>::store(value);
}

template <typename S>
kernel void random_normal(device S* out [[buffer(0)]], constant KilnRandomArgs& args [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const ulong element = join_words(args.offset_low, args.offset_high) + ulong(gid);
  const PhiloxWords words = philox(element, args.key0, args.key1);
  const ulong radius = sd_sqrt(sd_mul(kMinusTwo, sd_log_of_unit((words.w[0] >> 8) + 1u)));
  const ulong angle = sd_mul(kTwoPi, sd_from_uint(words.w[1] >> 8, -24));
  const ulong z = sd_mul(radius, sd_cos(angle));
  const ulong mean = join_words(args.first_low, args.first_high);
  const ulong deviation = join_words(args.second_low, args.second_high);
  const float value = as_type<float>(sd_to_f32_bits(sd_add(mean, sd_mul(deviation, z))));
  out[gid] = Storage<S>::store(value);
}

template [[host_name("random_uniform_f32")]] kernel decltype(random_uniform<float>) random_uniform<float>;
template [[host_name("random_uniform_f16")]] kernel decltype(random_uniform<half>) random_uniform<half>;
template [[host_name("random_uniform_bf16")]] kernel decltype(random_uniform<bf16>) random_uniform<bf16>;
template [[host_name("random_normal_f32")]] kernel decltype(random_normal<float>) random_normal<float>;
template [[host_name("random_normal_f16")]] kernel decltype(random_normal<half>) random_normal<half>;
template [[host_name("random_normal_bf16")]] kernel decltype(random_normal<bf16>) random_normal<bf16>;
