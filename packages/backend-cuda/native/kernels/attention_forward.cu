// kernels/attention_forward.cu — flash-attention forward (FlashAttention-2 style), f32/f16/bf16.
//
// Algorithm: one 128-thread block per (batch, query head, 64-query tile); each of the 4 warps
// owns 16 query rows. The block streams the keys of its kv head (h / (Hq/Hkv)) through shared
// memory in tiles (64 keys for f16/bf16, 32 for f32): scores S = q·kᵀ for the warp's rows
// (attention_warp_math.cuh), then the online softmax — running row max m and sum l in f32,
// previous output and sum rescaled by exp2(m_old − m_new) — and O += P·v.
//  - f16/bf16 (sm_80+): mma.sync.m16n8k16 fed by ldmatrix (ptx_mma.cuh); S, P and O stay in
//    registers (P's C fragments are the A fragments of P·v, rounded to the storage type), and
//    K and V are double-buffered: as tile j starts, cp.async copies K_{j+1} and V_{j+1} into the
//    stage tile j − 1 used (one commit group each), S_j waits only for K_j and P_j·V_j for V_j.
//  - f32 (SIMT FMAs): one K/V stage (its tiles are twice as large); V_j is copied while S_j is
//    computed, K_{j+1} while P_j·V_j is.
// Head dims run in buckets of 32, 64 and 128 columns (zero-padded); each bucket is compiled twice:
// for D filling it (D a constant, so the products have no per-step tests and their ldmatrix loads
// are scheduled ahead) and for any smaller D (the steps past D are skipped at run time).
// Causal: key tiles wholly above the diagonal of the block's last row are never loaded; only tiles
// that cross the diagonal or the sequence end run the per-element test. Blocks run in
// attention_common.cuh tile_order: groups of 8 heads, the last query tiles (most keys) first.
// Layout: global tensors as attention_common.cuh describes. Shared: q [64 × D], then per stage
// K and V [keys × D] — f16/bf16 rows unpadded with XOR-swizzled 16-byte chunks (conflict-free
// ldmatrix; 80 KiB at D 128), f32 rows padded by 4. Rows without any allowed key write out = 0,
// lse = −Inf.
// Numerics: f32 accumulation; scores in log2 units (exp2: inside tiles without a mask, and with a
// positive scale, exp2(fma(s, scale, −m)), elsewhere exp2(s·scale − m)), lse = (m + log2 l)·ln 2. For f16/bf16
// the probabilities are rounded to the storage type once before P·v (inputs are exact in the
// tensor-core product), the output once at the end.
#include "attention_forward.cuh"
#include "attention_forward_wgmma.cuh"
#include "attention_online_softmax.cuh"
#include "attention_warp_math.cuh"

namespace kiln {
namespace {

using attention::KernelParams;

/** Query rows per block: 4 warps × 16. */
constexpr int kQueryRows = 64;

template <typename Math, int kHeadDim>
struct ForwardLayout {
  using T = typename Math::Element;
  using Tile = typename Math::Layout;
  static constexpr int kKeys = Math::kForwardKeys;
  static constexpr int kStages = Math::kStages;
  static constexpr int kStride = Tile::kStride;
  static constexpr int kScratchFloats = Math::template kScratchFloats<kKeys>;
  /** q, then kStages × (K, V), then the per-warp scratch. */
  static constexpr int kBytes =
      static_cast<int>((kQueryRows + 2 * kStages * kKeys) * kStride * sizeof(T) + 4 * kScratchFloats * sizeof(float));
  static_assert(kStages == 1 || kStages == 2, "the forward schedules one or two K/V stages");
  static_assert(kBytes <= kAttentionSharedLimit, "forward tiles exceed the shared memory of sm_86/sm_89");
};

template <typename Math, int kHeadDim, bool kWholeBucket>
__global__ void __launch_bounds__(kAttentionThreads) attention_forward_kernel(KernelParams p) {
  using namespace attention;
  using Layout = ForwardLayout<Math, kHeadDim>;
  using T = typename Math::Element;
  constexpr int kKeys = Layout::kKeys;
  constexpr int kStride = Layout::kStride;
  constexpr int kStages = Layout::kStages;
  using Tile = typename Layout::Tile;
  KILN_EXTERN_SHARED(T, q_tile);
  // Stage s: K at kv_stages + 2s·kKeys rows, V right after it.
  T* kv_stages = q_tile + kQueryRows * kStride;
  const int warp = static_cast<int>(threadIdx.x / 32);
  float* scratch = reinterpret_cast<float*>(kv_stages + 2 * kStages * kKeys * kStride) + warp * Layout::kScratchFloats;

  const QueryBlock block = query_block<kQueryRows>(p);
  const int h = block.h;
  const int b = block.b;
  const int row0 = block.row0;
  const Index q_offset = q_offset_of(p, b, h, row0);
  const Index kv_offset = kv_offset_of(p, b, block.kv_head, 0);
  const T* k = static_cast<const T*>(p.k) + kv_offset;
  const T* v = static_cast<const T*>(p.v) + kv_offset;
  const int key_tiles = static_cast<int>(ceil_div(key_limit(p, row0 + block.rows_valid), kKeys));
  const bool vector = p.vector_loads != 0;
  const int warp_row = warp * 16;
  // D fills the bucket: a constant, so the products' per-step head-dim tests fold away and their
  // ldmatrix loads can be scheduled ahead (a runtime test made each one wait for the previous).
  const int head_dim = kWholeBucket ? kHeadDim : p.head_dim;

  float o[kHeadDim / 8][4];
  KILN_UNROLL
  for (int nt = 0; nt < kHeadDim / 8; nt++) {
    for (int e = 0; e < 4; e++) o[nt][e] = 0.0f;
  }
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};
  typename Math::Rows q_rows;

  const auto k_stage = [&](int tile) { return kv_stages + (tile % kStages) * 2 * kKeys * kStride; };
  const auto v_stage = [&](int tile) { return k_stage(tile) + kKeys * kStride; };
  const auto load_keys = [&](int tile) {
    const int key0 = tile * kKeys;
    load_tile<T, Tile, kKeys>(k_stage(tile), k + static_cast<Index>(key0) * p.kv_row_stride, p.kv_row_stride,
                              min(kKeys, p.length_k - key0), head_dim, vector);
    cp_async_commit();
  };
  const auto load_values = [&](int tile) {
    const int key0 = tile * kKeys;
    load_tile<T, Tile, kKeys>(v_stage(tile), v + static_cast<Index>(key0) * p.kv_row_stride, p.kv_row_stride,
                              min(kKeys, p.length_k - key0), head_dim, vector);
    cp_async_commit();
  };

  // Copy groups, oldest first: (q, K₀), V₀ with two stages, then per tile j: K_{j+1}, V_{j+1}
  // (two stages, issued as tile j starts, into the stage tile j − 1 used), or V_j, then K_{j+1}
  // (one stage, each into the buffer the previous product just released).
  if (key_tiles > 0) {
    load_tile<T, Tile, kQueryRows>(q_tile, static_cast<const T*>(p.q) + q_offset, p.q_row_stride, block.rows_valid,
                                   head_dim, vector);
    load_keys(0);
    if constexpr (kStages == 2) load_values(0);
  }
  for (int tile = 0; tile < key_tiles; tile++) {
    const int key0 = tile * kKeys;
    const T* k_tile = k_stage(tile);
    const T* v_tile = v_stage(tile);
    // K_tile (and q) landed; every warp is done with tile − 1 (its stage, or with one stage its V).
    if constexpr (kStages == 2) {
      cp_async_wait_pending<1>();
    } else {
      cp_async_wait_all();
    }
    __syncthreads();
    if (tile == 0) Math::load_rows(q_rows, q_tile + warp_row * kStride, head_dim);
    if constexpr (kStages == 2) {
      if (tile + 1 < key_tiles) {
        load_keys(tile + 1);
        load_values(tile + 1);
      }
    } else {
      load_values(tile);
    }

    float s[kKeys / 8][4];
    Math::template scores<kKeys>(q_rows, k_tile, s, head_dim);
    const bool check =
        key0 + kKeys > p.length_k || (p.causal && static_cast<long long>(key0) + kKeys - 1 > row0 + p.shift);
    const auto rescale = [&](int half, float correction) { rescale_output_row(o, half, correction); };
    if (check || p.mask != nullptr || !(p.scale_log2 > 0.0f)) {
      to_log2_scores(
          s, p, b, h, check, [&](int row, int) { return static_cast<long long>(row0 + warp_row + row); },
          [&](int, int column) { return static_cast<long long>(key0 + column); });
      online_softmax_tile(s, 1.0f, row_max, row_sum, rescale);
    } else {
      // Nothing to test or add: the scale is folded into each exponent's fma (no separate multiply).
      online_softmax_tile(s, p.scale_log2, row_max, row_sum, rescale);
    }

    // V_tile landed; with one stage every warp is also done with K_tile.
    if constexpr (kStages == 2) {
      if (tile + 1 < key_tiles) {
        cp_async_wait_pending<2>();
      } else {
        cp_async_wait_all();
      }
    } else {
      cp_async_wait_all();
    }
    __syncthreads();
    if constexpr (kStages == 1) {
      if (tile + 1 < key_tiles) load_keys(tile + 1);
    }
    Math::template accumulate<kKeys>(s, v_tile, o, head_dim, scratch);
  }

  T* out = static_cast<T*>(p.out_written) + q_offset;
  float* lse = p.lse + (static_cast<Index>(b) * p.heads_q + h) * p.length_q + row0;
  store_softmax_rows<T>(o, row_max, row_sum, out, p.q_row_stride, lse, warp_row, block.rows_valid, head_dim);
}

template <typename Math, int kHeadDim, bool kWholeBucket>
cudaError_t launch_forward(const LaunchContext& context, const char* name, const KernelParams& params, Index blocks) {
  using Layout = ForwardLayout<Math, kHeadDim>;
  const auto kernel = attention_forward_kernel<Math, kHeadDim, kWholeBucket>;
  const cudaError_t configured = attention::allow_shared_bytes(kernel, Layout::kBytes);
  if (configured != cudaSuccess) return configured;
  return vendor::launch(name, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kAttentionThreads),
                        static_cast<size_t>(Layout::kBytes), context.stream, params);
}

/** Kernel names of one dtype: [head dim fills its bucket][bucket 32, 64, 128]. */
using Names = const char* const (&)[2][3];

template <typename Family, int kHeadDim>
cudaError_t launch_head_dim(const LaunchContext& context, Names names, int slot, const KernelParams& params,
                            Index blocks) {
  using Bucket = typename Family::template Bucket<kHeadDim>;
  if (params.head_dim == kHeadDim)
    return launch_forward<Bucket, kHeadDim, true>(context, names[1][slot], params, blocks);
  return launch_forward<Bucket, kHeadDim, false>(context, names[0][slot], params, blocks);
}

template <typename Family>
cudaError_t launch_bucket(const LaunchContext& context, Names names, int bucket, const KernelParams& params,
                          Index blocks) {
  if (bucket == 32) return launch_head_dim<Family, 32>(context, names, 0, params, blocks);
  if (bucket == 64) return launch_head_dim<Family, 64>(context, names, 1, params, blocks);
  return launch_head_dim<Family, 128>(context, names, 2, params, blocks);
}

}  // namespace

cudaError_t launch_attention_forward(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                     const AttentionForwardTensors& tensors) {
  const Index blocks = attention::ceil_div(problem.length_q, kQueryRows) * problem.batch * problem.heads_q;
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  if (attention_forward_wgmma_supports(dtype, problem, tensors)) {  // Hopper (sm_90a): attention_forward_wgmma.cu
    bool maps_refused = false;
    const cudaError_t launched = launch_attention_forward_wgmma(context, dtype, problem, tensors, maps_refused);
    if (!maps_refused) return launched;
  }
  KernelParams params = attention::kernel_params(problem, dtype);
  params.q = tensors.q;
  params.k = tensors.k;
  params.v = tensors.v;
  params.out_written = tensors.out;
  params.lse = tensors.lse;
  params.vector_loads = params.vector_loads && attention::all_aligned16({tensors.q, tensors.k, tensors.v});
  const int bucket = KILN_ATTENTION_HEAD_DIM_BUCKET(problem.head_dim);
  switch (dtype) {
    case kF32: {
      static constexpr const char* kNames[2][3] = {
          {"attention_forward_kernel<f32,32>", "attention_forward_kernel<f32,64>", "attention_forward_kernel<f32,128>"},
          {"attention_forward_kernel<f32,32,whole>", "attention_forward_kernel<f32,64,whole>",
           "attention_forward_kernel<f32,128,whole>"}};
      return launch_bucket<attention::SimtFamily>(context, kNames, bucket, params, blocks);
    }
    case kF16: {
      static constexpr const char* kNames[2][3] = {
          {"attention_forward_kernel<f16,32>", "attention_forward_kernel<f16,64>", "attention_forward_kernel<f16,128>"},
          {"attention_forward_kernel<f16,32,whole>", "attention_forward_kernel<f16,64,whole>",
           "attention_forward_kernel<f16,128,whole>"}};
      return launch_bucket<attention::TensorCoreFamily<__half>>(context, kNames, bucket, params, blocks);
    }
    default: {
      static constexpr const char* kNames[2][3] = {
          {"attention_forward_kernel<bf16,32>", "attention_forward_kernel<bf16,64>",
           "attention_forward_kernel<bf16,128>"},
          {"attention_forward_kernel<bf16,32,whole>", "attention_forward_kernel<bf16,64,whole>",
           "attention_forward_kernel<bf16,128,whole>"}};
      return launch_bucket<attention::TensorCoreFamily<__nv_bfloat16>>(context, kNames, bucket, params, blocks);
    }
  }
}

}  // namespace kiln
