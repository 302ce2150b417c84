// kernels/attention_forward.cu — flash-attention forward (FlashAttention-2 style), f32/f16/bf16.
//
// Algorithm: one 128-thread block per (batch, query head, query tile); each of the 4 warps owns
// 16 query rows, or — f16/bf16 up to D 64, where the grid of 128-query tiles still gives every
// multiprocessor two blocks — 32 rows as two row blocks of 16 that share every K and V fragment
// (each ldmatrix then feeds four mma.sync instead of two: with one row block the shared-memory
// reads took as long as the tensor-core products on an A100). The block streams the keys of its
// kv head (h / (Hq/Hkv)) through shared memory in tiles (64 keys for f16/bf16, 32 for f32):
// scores S = q·kᵀ for the warp's rows (attention_warp_math.cuh), then the online softmax —
// running row max m and sum l in f32, previous output and sum rescaled by exp2(m_old − m_new) —
// and O += P·v.
//  - f16/bf16 (sm_80+): mma.sync.m16n8k16 fed by ldmatrix (ptx_mma.cuh); S, P and O stay in
//    registers (P's C fragments are the A fragments of P·v, rounded to the storage type), and
//    K and V are double-buffered: as tile j starts, cp.async copies K_{j+1} and V_{j+1} into the
//    stage tile j − 1 used (one commit group each), S_j waits only for K_j and P_j·V_j for V_j.
//  - f32 (SIMT FMAs), and f16/bf16 at D 128 on GPUs with 100 KiB of shared memory per
//    multiprocessor (sm_86, sm_89: two stages there would leave one block of 4 warps): one K/V
//    stage; V_j is copied while S_j is computed, K_{j+1} while P_j·V_j is.
// Head dims run in buckets of 32, 64 and 128 columns (zero-padded); each bucket is compiled twice:
// for D filling it (D a constant, so the products have no per-step tests and their ldmatrix loads
// are scheduled ahead) and for any smaller D (the steps past D are skipped at run time).
// Causal: key tiles wholly above the diagonal of the block's last row are never loaded; only tiles
// that cross the diagonal or the sequence end run the per-element test. Blocks run in
// attention_common.cuh tile_order: groups of 8 heads, the last query tiles (most keys) first.
// Layout: global tensors as attention_common.cuh describes. Shared: q [64 or 128 × D], then per
// stage K and V [keys × D] — f16/bf16 rows unpadded with XOR-swizzled 16-byte chunks
// (conflict-free ldmatrix; two stages take 80 KiB at D 128, one 48 KiB), f32 rows padded by 4.
// Rows without any allowed key write out = 0, lse = −Inf.
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

/** Query rows a warp owns per row block (one mma.sync m16 fragment). */
constexpr int kRowBlockRows = 16;
/** Warps per block. */
constexpr int kWarps = kAttentionThreads / 32;

template <typename Math, int kHeadDim, int kRowBlocks, int kStageCount>
struct ForwardLayout {
  using T = typename Math::Element;
  using Tile = typename Math::Layout;
  /** Query rows per block: 4 warps × kRowBlocks × 16. */
  static constexpr int kQueryRows = kWarps * kRowBlocks * kRowBlockRows;
  static constexpr int kKeys = Math::kForwardKeys;
  static constexpr int kStages = kStageCount;
  static constexpr int kStride = Tile::kStride;
  static constexpr int kScratchFloats = Math::template kScratchFloats<kKeys>;
  /** q, then kStages × (K, V), then the per-warp scratch. */
  static constexpr int kBytes =
      static_cast<int>((kQueryRows + 2 * kStages * kKeys) * kStride * sizeof(T) + 4 * kScratchFloats * sizeof(float));
  static_assert(kStages == 1 || kStages == 2, "the forward schedules one or two K/V stages");
  static_assert(kBytes <= kAttentionSharedLimit, "forward tiles exceed the shared memory of sm_86/sm_89");
};

template <typename Math, int kHeadDim, bool kWholeBucket, int kRowBlocks, int kStageCount>
__global__ void __launch_bounds__(kAttentionThreads) attention_forward_kernel(KernelParams p) {
  using namespace attention;
  using Layout = ForwardLayout<Math, kHeadDim, kRowBlocks, kStageCount>;
  using T = typename Math::Element;
  constexpr int kQueryRows = Layout::kQueryRows;
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
  const int warp_row = warp * kRowBlocks * kRowBlockRows;
  // D fills the bucket: a constant, so the products' per-step head-dim tests fold away and their
  // ldmatrix loads can be scheduled ahead (a runtime test made each one wait for the previous).
  const int head_dim = kWholeBucket ? kHeadDim : p.head_dim;

  // Per row block r (rows warp_row + 16r …): the output fragment, running max and sum, q fragments.
  float o[kRowBlocks][kHeadDim / 8][4];
  float row_max[kRowBlocks][2];
  float row_sum[kRowBlocks][2];
  KILN_UNROLL
  for (int r = 0; r < kRowBlocks; r++) {
    KILN_UNROLL
    for (int nt = 0; nt < kHeadDim / 8; nt++) {
      for (int e = 0; e < 4; e++) o[r][nt][e] = 0.0f;
    }
    for (int half = 0; half < 2; half++) {
      row_max[r][half] = -INFINITY;
      row_sum[r][half] = 0.0f;
    }
  }
  typename Math::Rows q_rows[kRowBlocks];

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
    if (tile == 0) {
      KILN_UNROLL
      for (int r = 0; r < kRowBlocks; r++)
        Math::load_rows(q_rows[r], q_tile + (warp_row + r * kRowBlockRows) * kStride, head_dim);
    }
    if constexpr (kStages == 2) {
      if (tile + 1 < key_tiles) {
        load_keys(tile + 1);
        load_values(tile + 1);
      }
    } else {
      load_values(tile);
    }

    float s[kRowBlocks][kKeys / 8][4];
    Math::template scores<kKeys>(q_rows, k_tile, s, head_dim);
    const bool check =
        key0 + kKeys > p.length_k || (p.causal && static_cast<long long>(key0) + kKeys - 1 > row0 + p.shift);
    KILN_UNROLL
    for (int r = 0; r < kRowBlocks; r++) {
      const auto rescale = [&](int half, float correction) { rescale_output_row(o[r], half, correction); };
      if (check || p.mask != nullptr || !(p.scale_log2 > 0.0f)) {
        const int block_row = row0 + warp_row + r * kRowBlockRows;
        to_log2_scores(
            s[r], p, b, h, check, [&](int row, int) { return static_cast<long long>(block_row + row); },
            [&](int, int column) { return static_cast<long long>(key0 + column); });
        online_softmax_tile(s[r], 1.0f, row_max[r], row_sum[r], rescale);
      } else {
        // Nothing to test or add: the scale is folded into each exponent's fma (no separate multiply).
        online_softmax_tile(s[r], p.scale_log2, row_max[r], row_sum[r], rescale);
      }
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
  KILN_UNROLL
  for (int r = 0; r < kRowBlocks; r++) {
    store_softmax_rows<T>(o[r], row_max[r], row_sum[r], out, p.q_row_stride, lse, warp_row + r * kRowBlockRows,
                          block.rows_valid, head_dim);
  }
}

/** A forward kernel's variant: its bucket, D filling it, row blocks per warp and K/V stages. */
template <typename Math, int kHeadDim, bool kWholeBucket, int kRowBlocks, int kStages>
struct Variant {
  using Layout = ForwardLayout<Math, kHeadDim, kRowBlocks, kStages>;

  /** "attention_forward_kernel<bf16,64,whole,32 rows>": the name launches, profiles and the simulator use. */
  static const char* name() {
    static const std::string text =
        attention::flash_kernel_name("attention_forward_kernel", Math::kDTypeName, kHeadDim, kWholeBucket,
                                     kStages < Math::kStages, kRowBlocks == 2 ? ",32 rows" : "");
    return text.c_str();
  }

  static cudaError_t launch(const LaunchContext& context, const KernelParams& params, const char*& kernel) {
    kernel = name();
    const auto function = attention_forward_kernel<Math, kHeadDim, kWholeBucket, kRowBlocks, kStages>;
    const cudaError_t configured = attention::allow_shared_bytes(function, Layout::kBytes);
    if (configured != cudaSuccess) return configured;
    const Index blocks = attention::ceil_div(params.length_q, Layout::kQueryRows) * params.batch * params.heads_q;
    return vendor::launch(kernel, function, dim3(static_cast<unsigned>(blocks)), dim3(kAttentionThreads),
                          static_cast<size_t>(Layout::kBytes), context.stream, params);
  }
};

/**
 * Two row blocks per warp (32 rows, 128-query tiles) where their registers allow it: f16/bf16 up
 * to D 64 (q fragments, O and both score tiles ≈ 170 registers; at D 128 they would need 256, and
 * loading q's fragments from shared memory at each step instead still spilled 52–248 bytes).
 */
template <typename Math, int kHeadDim>
constexpr bool kTwoRowBlocksFit = !std::is_same_v<typename Math::Element, float> && kHeadDim <= 64;

/**
 * Whether a problem takes the two-row-block kernel: its 128-query tiles still give every
 * multiprocessor two blocks (smaller grids keep 64-query tiles, twice the blocks).
 */
bool use_two_row_blocks(const LaunchContext& context, const KernelParams& params) {
  const Index tiles = attention::ceil_div(params.length_q, kWarps * 2 * kRowBlockRows) * params.batch * params.heads_q;
  return tiles >= 2 * context.multiprocessors();
}

template <typename Math, int kHeadDim, bool kWholeBucket>
cudaError_t launch_variant(const LaunchContext& context, const KernelParams& params, const char*& kernel) {
  constexpr int kStages = Math::kStages;
  if constexpr (kTwoRowBlocksFit<Math, kHeadDim>) {
    if (use_two_row_blocks(context, params))
      return Variant<Math, kHeadDim, kWholeBucket, 2, kStages>::launch(context, params, kernel);
  }
  using Default = Variant<Math, kHeadDim, kWholeBucket, 1, kStages>;
  // At D 128 two K/V stages take 80 KiB: an sm_86/sm_89 multiprocessor (100 KiB) would hold one
  // block of 4 warps, so the forward streams K/V through one stage there (48 KiB, two blocks), as
  // FlashAttention-2 does on those GPUs.
  if constexpr (kStages == 2 && kHeadDim == 128) {
    if (!attention::two_blocks_fit(context, Default::Layout::kBytes))
      return Variant<Math, kHeadDim, kWholeBucket, 1, 1>::launch(context, params, kernel);
  }
  return Default::launch(context, params, kernel);
}

template <typename Family, int kHeadDim>
cudaError_t launch_head_dim(const LaunchContext& context, const KernelParams& params, const char*& kernel) {
  using Bucket = typename Family::template Bucket<kHeadDim>;
  if (params.head_dim == kHeadDim) return launch_variant<Bucket, kHeadDim, true>(context, params, kernel);
  return launch_variant<Bucket, kHeadDim, false>(context, params, kernel);
}

template <typename Family>
cudaError_t launch_bucket(const LaunchContext& context, int bucket, const KernelParams& params, const char*& kernel) {
  if (bucket == 32) return launch_head_dim<Family, 32>(context, params, kernel);
  if (bucket == 64) return launch_head_dim<Family, 64>(context, params, kernel);
  return launch_head_dim<Family, 128>(context, params, kernel);
}

}  // namespace

cudaError_t launch_attention_forward(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                     const AttentionForwardTensors& tensors, const char*& kernel) {
  kernel = nullptr;
  // The grid of 64-query tiles: the most blocks any variant launches.
  const Index blocks = attention::ceil_div(problem.length_q, kWarps * kRowBlockRows) * problem.batch * problem.heads_q;
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  if (attention_forward_wgmma_supports(dtype, problem, tensors)) {  // Hopper (sm_90a): attention_forward_wgmma.cu
    bool maps_refused = false;
    const cudaError_t launched = launch_attention_forward_wgmma(context, dtype, problem, tensors, maps_refused, kernel);
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
    case kF32: return launch_bucket<attention::SimtFamily>(context, bucket, params, kernel);
    case kF16: return launch_bucket<attention::TensorCoreFamily<__half>>(context, bucket, params, kernel);
    default: return launch_bucket<attention::TensorCoreFamily<__nv_bfloat16>>(context, bucket, params, kernel);
  }
}

}  // namespace kiln
