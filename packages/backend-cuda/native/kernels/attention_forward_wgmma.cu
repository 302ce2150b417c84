// kernels/attention_forward_wgmma.cu — flash-attention forward for Hopper (sm_90a): wgmma with
// operands fed by TMA through an mbarrier pipeline, warp-specialised; f16/bf16,
// head dims 64, 96 and 128 (attention_forward.cu runs everything else).
//
// Algorithm (the FlashAttention-3 structure): a persistent grid, one block per multiprocessor,
// takes work units in steps of gridDim.x: a unit is a head's query tiles (last − i, i) of 128
// queries, whose causal key counts add up to about the same for every unit (attention_common.cuh
// paired_query_block; units in tile_order, groups of 8 heads), so every block gets about equal
// work — or one tile, when the tiles do not outnumber the multiprocessors. The producer loads the
// next query tile's q and K/V while the consumers finish the current one and store its output,
// instead of every block starting cold: at D 64 q has two buffers (q_full / q_empty per buffer),
// so the next q loads a whole query tile ahead; at D 96/128 (one buffer: two do not fit beside
// the ring) it waits for both consumers' last S of the current tile (q_empty), and the next tile's
// first kStages − 1 K/V tiles — whose stages free before that — load ahead of it. A block is 3
// warpgroups. Warpgroup 0 is the producer (setmaxnreg down to 40; one thread): per query tile it
// loads the q tile once and streams the 128-key K and V tiles of the kv head h / (Hq/Hkv) into a
// ring of kStages stages (4 for D 64, 3 for D 96/128; the ring position counts on across the
// block's tiles), each guarded
// by a `full` mbarrier (one arrival + the stage's bytes as TMA transactions) and an `empty` one
// (one arrival per consumer warpgroup when it has finished with the stage). Warpgroups 1 and 2
// are consumers (setmaxnreg up to 232: 40 + 2 × 232 registers × 128 threads fit the 64K register
// file), each owning 64 query rows: per key tile S = q·kᵀ as D/16 wgmma m64n128k16 (both
// operands K-major in shared memory), the online softmax on the accumulator fragment (running
// max and sum in f32, O rescaled by exp2(m_old − m_new)), then O += P·V as 8
// wgmma m64nNk16 with P as the register A operand (the S fragment rounded pairwise to the
// storage type is exactly wgmma's A fragment, so P never touches shared memory) and V from
// shared memory (N = 64, or 128 for D 96/128; V MN-major). Two overlaps hide the softmax:
//  - within a consumer (intra-warpgroup pipelining): S of tile j + 1 is issued before P·V of
//    tile j, and since wgmma groups complete in order, waiting for all but the last group gives
//    the scores, whose softmax then runs while P·V does; only O's rescale and the next P (its
//    registers are read asynchronously) wait for P·V. The row sums are stored to shared memory
//    before that wait (ptx::store_before_wgmma_wait): ptxas otherwise hoisted the wait above the
//    exponentials (they depend on nothing P·V writes), so they ran after P·V. The last tile's
//    turn (P·V alone) is peeled off the loop and every wgmma operand is fenced at issue and wait,
//    so each iteration commits the same two groups and ptxas keeps the wgmma pipeline
//    asynchronous (no C7514). The turns run in two loops: while the next tile is inside every
//    row's bounds and causal limit (and there is no mask, and scale > 0) a compact body folds the
//    scale into each exponent's fma without per-element tests — on an H200, 23% of the
//    single-loop kernel's warp samples waited for instructions (a 2,712-instruction loop body;
//    the compact one is about 540) — then the rest with the tests;
//  - between the consumers (inter-warpgroup ping-pong): they take turns issuing their products
//    (attention_wgmma_common.cuh PingPong; consumer 0 first, key_tiles + 1 turns each), so one
//    consumer's softmax runs while the other's wgmma occupy the tensor cores instead of both
//    competing for them at once.
// The producer keeps up to kStages tiles in flight; consumers wait for a tile's keys before
// taking their turn, so a turn is held only while issuing. Causal: key tiles past the block's
// last row are never loaded; tiles crossing the diagonal or the sequence end, and every tile
// under a mask, get the per-element test (attention_common.cuh to_log2_scores).
// Layout: every tensor is read through a 4D tensor map (D, T, H, B) with the layout's byte
// strides (attention_common.cuh), so heads-major and tokens-major are one kernel; boxes are 64
// head-dim columns × 128 rows with 128-byte swizzling, one per 64 columns of D, 1024-byte
// aligned. TMA zero-fills rows past Tq/Tk and columns past D (D 96: the second box's last 32),
// so partial tiles need no load predicates; padded keys are masked to −Inf, padded columns are
// never stored. Rows without any allowed key write out = 0, lse = −Inf.
// Numerics: as attention_forward.cu — scores in log2 units (exp2_ftz; inside tiles
// exp2(fma(s, scale, −m)), elsewhere exp2(s·scale − m)), f32 accumulation (tensor-core
// order on the GPU, k ascending per k16 step in the simulator), P rounded to f16/bf16 once before
// P·V, the output once at the end; lse = (m + log2 l)·ln 2. The ping-pong moves only when each
// consumer issues, never what a row computes or in which order: out and lse are bit-identical
// to the kernel without it (attention-wgmma.test.ts checks recorded fingerprints).
#include <atomic>

#include "attention_forward_wgmma.cuh"
#include "attention_online_softmax.cuh"
#include "attention_wgmma_common.cuh"
#include "matmul.cuh"

namespace kiln {

namespace {
std::atomic<unsigned long long> launches{0};
}  // namespace

unsigned long long wgmma_attention_forward_launches() { return launches.load(); }

#if defined(KILN_HAS_TENSOR_MAPS)

namespace attention_wgmma {

using attention::KernelParams;

/** Query rows per block: 2 consumer warpgroups × 64. */
inline constexpr int kQueryRows = 128;
/** Keys per pipeline stage (the N of S = q·kᵀ). */
inline constexpr int kKeys = 128;
inline constexpr int kConsumers = 2;
inline constexpr int kThreads = 128 * (1 + kConsumers);
static_assert(kQueryRows == kKeys, "q and K/V tiles share one box shape (tensor_map's box_rows)");

/** Shared-memory plan of one head-dim instantiation (offsets from the 1024-byte aligned base). */
template <int kHeadDim>
struct Plan {
  /** 64-column boxes per row of q, K or V. */
  static constexpr int kBoxes = (kHeadDim + 63) / 64;
  /** N of O += P·V (D rounded up to whole boxes). */
  static constexpr int kOutColumns = kBoxes * 64;
  /** As many as fit beside q in 227 KiB (one block per multiprocessor either way: its registers). */
  static constexpr int kStages = kBoxes == 1 ? 4 : 3;
  /** q buffers: two at D 64 (the next query tile's q loads while this one's runs), one where two do not fit. */
  static constexpr int kQBuffers = kBoxes == 1 ? 2 : 1;
  static constexpr int kQBytes = kBoxes * kQueryRows * kRowBytes;
  /** Bytes of one box of K or V (128 keys × 64 columns), and of one whole K or V tile. */
  static constexpr int kKeyBoxBytes = kKeys * kRowBytes;
  static constexpr int kTileBytes = kBoxes * kKeyBoxBytes;
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kStagesOffset = kQBuffers * kQBytes;
  static constexpr int kBarrierOffset = kStagesOffset + kStages * kStageBytes;
  /** q_full[kQBuffers], q_empty[kQBuffers], full[kStages], empty[kStages]. */
  static constexpr int kBarriers = 2 * kQBuffers + 2 * kStages;
  /** One f32 per consumer thread that ptx::store_before_wgmma_wait writes (never read). */
  static constexpr int kAnchorOffset = kBarrierOffset + kBarriers * 8;
  static constexpr int kSharedBytes = kAnchorOffset + kConsumers * 128 * 4 + 1024;
  static_assert(kSharedBytes <= 227 * 1024, "exceeds the 227 KiB of shared memory a Hopper block may use");
};

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads, 1)
    attention_forward_wgmma_kernel(const KILN_GRID_CONSTANT vendor::TensorMap map_q,
                                   const KILN_GRID_CONSTANT vendor::TensorMap map_k,
                                   const KILN_GRID_CONSTANT vendor::TensorMap map_v, KernelParams p) {
  using namespace attention;
  using P = Plan<kHeadDim>;
  KILN_EXTERN_SHARED(unsigned char, raw);
  const std::uint32_t raw_address = ptx::smem_address(raw);
  unsigned char* shared = raw + ((1024u - raw_address % 1024u) % 1024u);
  auto* q_full = reinterpret_cast<std::uint64_t*>(shared + P::kBarrierOffset);
  std::uint64_t* q_empty = q_full + P::kQBuffers;
  std::uint64_t* full = q_empty + P::kQBuffers;
  std::uint64_t* empty = full + P::kStages;
  float* anchors = reinterpret_cast<float*>(shared + P::kAnchorOffset);
  const PairedQueryTiles tiles =
      paired_query_tiles<kQueryRows>(p.length_q, static_cast<Index>(p.batch) * p.heads_q, gridDim.x);
  // Key tiles of a query tile (0: no row sees a key; out 0, lse −Inf, nothing loaded).
  const auto key_tiles_of = [&](const QueryBlock& block) {
    return static_cast<int>(ceil_div(key_limit(p, block.row0 + block.rows_valid), kKeys));
  };

  if (threadIdx.x == 0) {
    for (int buffer = 0; buffer < P::kQBuffers; buffer++) {
      ptx::mbarrier_init(&q_full[buffer], 1);
      ptx::mbarrier_init(&q_empty[buffer], kConsumers);
    }
    for (int stage = 0; stage < P::kStages; stage++) {
      ptx::mbarrier_init(&full[stage], 1);
      ptx::mbarrier_init(&empty[stage], kConsumers);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<40>();
    if (threadIdx.x != 0) return;
    // The block's q loads so far (buffer and q_full / q_empty phases) and key tiles so far (ring position).
    int q_loads = 0;
    int ring = 0;
    const auto load_keys_values = [&](const QueryBlock& block, int tile) {
      const int stage = ring % P::kStages;
      const unsigned phase = static_cast<unsigned>(ring / P::kStages) & 1u;
      ptx::mbarrier_wait(&empty[stage], phase ^ 1u);
      ptx::mbarrier_arrive_expect_tx(&full[stage], P::kStageBytes);
      unsigned char* k_stage = shared + P::kStagesOffset + stage * P::kStageBytes;
      unsigned char* v_stage = k_stage + P::kTileBytes;
      for (int box = 0; box < P::kBoxes; box++) {
        ptx::tma_load_4d(k_stage + box * P::kKeyBoxBytes, &map_k, box * 64, tile * kKeys, block.kv_head, block.b,
                         &full[stage]);
        ptx::tma_load_4d(v_stage + box * P::kKeyBoxBytes, &map_v, box * 64, tile * kKeys, block.kv_head, block.b,
                         &full[stage]);
      }
      ring++;
    };
    for (Index unit = blockIdx.x; unit < tiles.units; unit += gridDim.x) {
      for (int member = 0; member < 2; member++) {
        QueryBlock block;
        if (!paired_query_block<kQueryRows>(p, tiles, unit, member, block)) break;
        const int key_tiles = key_tiles_of(block);
        if (key_tiles == 0) continue;
        // With one q buffer, its next load waits for both consumers' last S of the previous query
        // tile; the K/V tiles whose stages free before that (all but the last one's) load first, so
        // the next tile's keys do not wait behind its q. With two, q goes first: its buffer was
        // released a whole query tile ago.
        const int keys_first = P::kQBuffers == 1 ? min(key_tiles, P::kStages - 1) : 0;
        int tile = 0;
        for (; tile < keys_first; tile++) load_keys_values(block, tile);
        const int buffer = q_loads % P::kQBuffers;
        if (q_loads >= P::kQBuffers)
          ptx::mbarrier_wait(&q_empty[buffer], static_cast<unsigned>(q_loads / P::kQBuffers - 1) & 1u);
        ptx::mbarrier_arrive_expect_tx(&q_full[buffer], P::kQBytes);
        for (int box = 0; box < P::kBoxes; box++)
          ptx::tma_load_4d(shared + buffer * P::kQBytes + box * kQueryRows * kRowBytes, &map_q, box * 64, block.row0,
                           block.h, block.b, &q_full[buffer]);
        q_loads++;
        for (; tile < key_tiles; tile++) load_keys_values(block, tile);
      }
    }
    return;
  }

  ptx::setmaxnreg_inc<232>();
  const int consumer = warpgroup - 1;
  const int thread = static_cast<int>(threadIdx.x % 128);
  const int warp = thread / 32;
  const int warp_row = consumer * 64 + warp * 16;  // block-relative first row of this warp
  const std::uint32_t shared_address = ptx::smem_address(shared);
  const std::uint32_t q_address = shared_address + static_cast<std::uint32_t>(consumer * 64 * kRowBytes);
  float* anchor = anchors + consumer * 128;
  // Descriptors of this consumer's q rows in buffer 0 and of stage 0's K (K-major) and V (MN-major);
  // a q buffer, step or stage is a wgmma_descriptor_advance away.
  const std::uint64_t q_descriptor0 = ptx::wgmma_descriptor_128b(q_address, 16, 1024);
  const std::uint64_t k_descriptor0 =
      ptx::wgmma_descriptor_128b(shared_address + static_cast<std::uint32_t>(P::kStagesOffset), 16, 1024);
  const std::uint64_t v_descriptor0 = ptx::wgmma_descriptor_128b(
      shared_address + static_cast<std::uint32_t>(P::kStagesOffset + P::kTileBytes), P::kKeyBoxBytes, 1024);

  // Ping-pong (PingPong): each consumer takes key_tiles + 1 turns per query tile (S_0, then
  // S_{j+1} with P_j·V_j); key_tiles is the block's, so both take the same number.
  const PingPong ping_pong(consumer);
  ping_pong.start();
  int q_loads = 0;
  int ring = 0;  // ring position of the query tile's first key tile (the producer's count)
  for (Index unit = blockIdx.x; unit < tiles.units; unit += gridDim.x) {
    for (int member = 0; member < 2; member++) {
      QueryBlock block;
      if (!paired_query_block<kQueryRows>(p, tiles, unit, member, block)) break;
      const int h = block.h;
      const int b = block.b;
      const int row0 = block.row0;
      const int key_tiles = key_tiles_of(block);

      float o[P::kOutColumns / 8][4];
      KILN_UNROLL
      for (int nt = 0; nt < P::kOutColumns / 8; nt++) {
        for (int e = 0; e < 4; e++) o[nt][e] = 0.0f;
      }
      float row_max[2] = {-INFINITY, -INFINITY};
      float row_sum[2] = {0.0f, 0.0f};

      // Per tile j: S_j = q·k_jᵀ is issued before P_{j−1}·V_{j−1}, so the softmax of S_j runs while P·V does (wgmma groups complete in order).
      float s[kKeys / 8][4];
      float correction[2] = {1.0f, 1.0f};
      // This query tile's q buffer (the producer's count: tiles with keys only).
      const int q_buffer = q_loads % P::kQBuffers;
      const std::uint64_t q_descriptor = ptx::wgmma_descriptor_advance(q_descriptor0, q_buffer * P::kQBytes);
      const auto stage_of = [&](int tile) { return (ring + tile) % P::kStages; };
      auto wait_keys = [&](int tile) {
        ptx::mbarrier_wait(&full[stage_of(tile)], static_cast<unsigned>((ring + tile) / P::kStages) & 1u);
      };
      // Once the last tile's S has completed this consumer is done with q: the producer may load the next query tile's.
      auto scores_done = [&](int tile) {
        if (tile == key_tiles - 1 && thread == 0) ptx::mbarrier_arrive(&q_empty[q_buffer]);
      };
      auto issue_scores = [&](int tile) {
        const std::uint64_t k_descriptor =
            ptx::wgmma_descriptor_advance(k_descriptor0, stage_of(tile) * P::kStageBytes);
        // k16 step `step` reads columns 16·step … of box step / 4 (32 bytes per step inside the swizzle atom).
        ptx::fence_operand(s);
        ptx::wgmma_fence();
        KILN_UNROLL
        for (int step = 0; step < kHeadDim / 16; step++) {
          const std::uint32_t column_bytes = static_cast<std::uint32_t>((step % 4) * 32);
          const std::uint64_t desc_q =
              ptx::wgmma_descriptor_advance(q_descriptor, (step / 4) * kQueryRows * kRowBytes + column_bytes);
          const std::uint64_t desc_k =
              ptx::wgmma_descriptor_advance(k_descriptor, (step / 4) * P::kKeyBoxBytes + column_bytes);
          ptx::wgmma_m64nk16<T, kKeys, 0, 0>(flat(s), desc_q, desc_k, step > 0 ? 1 : 0);
        }
        ptx::wgmma_commit();
        ptx::fence_operand(s);
      };
      // Scores → probabilities in place; the running max and sum advance, `correction` keeps what O must be scaled by.
      auto softmax = [&](int tile) {
        const int key0 = tile * kKeys;
        const bool check = key0 + kKeys > p.length_k ||
                           (p.causal && static_cast<long long>(key0) + kKeys - 1 > row0 + warp_row + p.shift);
        to_log2_scores(
            s, p, b, h, check, [&](int row, int) { return static_cast<long long>(row0 + warp_row + row); },
            [&](int, int column) { return static_cast<long long>(key0 + column); });
        online_softmax_tile(s, 1.0f, row_max, row_sum, [&](int half, float factor) { correction[half] = factor; });
      };
      // softmax() of a tile inside the sequence and the causal limit of every row of this warpgroup,
      // without a mask and with a positive scale: the raw scores go to online_softmax_tile with the
      // scale, which folds it into each exponent's fma, so the hot loop below carries no per-element
      // tests and no separate scaling.
      auto softmax_inside = [&]() {
        online_softmax_tile(s, p.scale_log2, row_max, row_sum,
                            [&](int half, float factor) { correction[half] = factor; });
      };
      // First key tile that may need softmax()'s tests for some row of this warpgroup (its first row
      // has the nearest causal limit): past the sequence end, or crossing the causal limit; 0 with a
      // mask or a scale ≤ 0 (softmax_inside's max needs a positive one).
      const int tested_from = [&]() -> int {
        if (p.mask != nullptr || !(p.scale_log2 > 0.0f)) return 0;
        const long long full_tiles = p.length_k / kKeys;
        long long first = full_tiles;
        if (p.causal) {
          const long long limit =
              static_cast<long long>(row0) + consumer * 64 + p.shift;  // last key the first row sees
          const long long inside = limit < kKeys - 1 ? 0 : (limit - (kKeys - 1)) / kKeys + 1;
          first = inside < first ? inside : first;
        }
        return static_cast<int>(first);
      }();
      // O *= correction, then P rounded to T as wgmma's register A: k16 step j takes the accumulator's
      // n-tiles 2j and 2j + 1, whose pairs (rows g and g + 8, keys 2t and 2t + 1, then + 8) are
      // exactly the A fragment, so no data moves between threads.
      std::uint32_t probabilities[kKeys / 16][4];
      auto rescale_and_pack = [&]() {
        KILN_UNROLL
        for (int half = 0; half < 2; half++) rescale_output_row(o, half, correction[half]);
        pack_a_operand<T>(s, probabilities);
      };
      // O += P·V: k16 step `step` takes keys 16·step … (P from registers, V MN-major: boxes of 64 columns kKeyBoxBytes apart).
      auto issue_output = [&](int tile) {
        const std::uint64_t v_descriptor =
            ptx::wgmma_descriptor_advance(v_descriptor0, stage_of(tile) * P::kStageBytes);
        ptx::fence_operand(o);
        ptx::fence_operand(probabilities);
        ptx::wgmma_fence();
        KILN_UNROLL
        for (int step = 0; step < kKeys / 16; step++) {
          const std::uint64_t desc_v = ptx::wgmma_descriptor_advance(v_descriptor, step * 16 * kRowBytes);
          ptx::wgmma_m64nk16_rs<T, P::kOutColumns, 1>(flat(o), probabilities[step], desc_v, 1);
        }
        ptx::wgmma_commit();
        ptx::fence_operand(o);
        ptx::fence_operand(probabilities);
      };

      if (key_tiles > 0) {
        ptx::mbarrier_wait(&q_full[q_buffer], static_cast<unsigned>(q_loads / P::kQBuffers) & 1u);
        wait_keys(0);
        ping_pong.take_turn();
        issue_scores(0);
        ping_pong.hand_over();
        ptx::wgmma_wait<0>();
        ptx::fence_operand(s);
        scores_done(0);
        softmax(0);
        rescale_and_pack();
      }
      // Steady state: every turn issues S of the next tile and P·V of this one (the last tile is peeled
      // off below, so each iteration commits the same two groups: ptxas then tracks which one retired).
      // Two loops of the same turns: first while the next tile is inside every row's limits (a compact
      // body that stays in the instruction cache), then the rest with softmax()'s tests.
      auto turn = [&](int tile, auto&& next_softmax) {
        wait_keys(tile + 1);
        ping_pong.take_turn();
        issue_scores(tile + 1);
        issue_output(tile);
        ping_pong.hand_over();
        ptx::wgmma_wait<1>();  // S of the next tile is done; P·V of this one may still run
        ptx::fence_operand(s);
        scores_done(tile + 1);
        next_softmax();
        // The row sums depend on every exponential: stored before the wait, they keep the softmax ahead
        // of it (ptxas otherwise hoists the wait above the exponentials and they run after P·V).
        ptx::store_before_wgmma_wait(anchor + thread, row_sum[0] + row_sum[1]);
        ptx::wgmma_wait<0>();  // P·V done: its stage and the probability registers are free
        ptx::fence_operand(o);
        ptx::fence_operand(probabilities);
        if (thread == 0) ptx::mbarrier_arrive(&empty[stage_of(tile)]);
        rescale_and_pack();
      };
      int tile = 0;
      for (; tile + 1 < key_tiles && tile + 1 < tested_from; tile++) turn(tile, softmax_inside);
      for (; tile + 1 < key_tiles; tile++) turn(tile, [&]() { softmax(tile + 1); });
      if (key_tiles > 0) {
        tile = key_tiles - 1;
        ping_pong.take_turn();
        issue_output(tile);
        ping_pong.hand_over();
        ptx::wgmma_wait<0>();
        ptx::fence_operand(o);
        ptx::fence_operand(probabilities);
        if (thread == 0) ptx::mbarrier_arrive(&empty[stage_of(tile)]);
        q_loads++;
        ring += key_tiles;
      }

      T* out = static_cast<T*>(p.out_written) + q_offset_of(p, b, h, row0);
      float* lse = p.lse + (static_cast<Index>(b) * p.heads_q + h) * p.length_q + row0;
      store_softmax_rows<T>(o, row_max, row_sum, out, p.q_row_stride, lse, warp_row, block.rows_valid, kHeadDim);
    }
  }
  ping_pong.finish();
}

template <typename T, int kHeadDim>
cudaError_t launch_head_dim(const LaunchContext& context, const char* name, const vendor::TensorMap& map_q,
                            const vendor::TensorMap& map_k, const vendor::TensorMap& map_v, const KernelParams& params,
                            Index blocks) {
  using P = Plan<kHeadDim>;
  const cudaError_t allowed = cudaFuncSetAttribute(attention_forward_wgmma_kernel<T, kHeadDim>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, P::kSharedBytes);
  if (allowed != cudaSuccess) return allowed;
  return vendor::launch(name, attention_forward_wgmma_kernel<T, kHeadDim>, dim3(static_cast<unsigned>(blocks)),
                        dim3(kThreads), static_cast<std::size_t>(P::kSharedBytes), context.stream, map_q, map_k, map_v,
                        params);
}

/** Launches the head dim's kernel; `kernel` is set to its name (names: D 64, 96, 128). */
template <typename T>
cudaError_t launch_dtype(const LaunchContext& context, const char* const (&names)[3], const vendor::TensorMap& map_q,
                         const vendor::TensorMap& map_k, const vendor::TensorMap& map_v, const KernelParams& params,
                         Index blocks, const char*& kernel) {
  const int slot = params.head_dim == 64 ? 0 : params.head_dim == 96 ? 1 : 2;
  kernel = names[slot];
  if (slot == 0) return launch_head_dim<T, 64>(context, kernel, map_q, map_k, map_v, params, blocks);
  if (slot == 1) return launch_head_dim<T, 96>(context, kernel, map_q, map_k, map_v, params, blocks);
  return launch_head_dim<T, 128>(context, kernel, map_q, map_k, map_v, params, blocks);
}

}  // namespace attention_wgmma

#endif  // KILN_HAS_TENSOR_MAPS

bool attention_forward_wgmma_supports(int dtype, const AttentionProblem& problem,
                                      const AttentionForwardTensors& tensors) {
#if defined(KILN_HAS_TENSOR_MAPS)
  if (dtype != kF16 && dtype != kBF16) return false;
  if (problem.head_dim != 64 && problem.head_dim != 96 && problem.head_dim != 128) return false;
  if (problem.length_q <= 0 || problem.length_k <= 0 || problem.batch <= 0 || problem.heads_q <= 0 ||
      problem.heads_kv <= 0)
    return false;
  if (!attention::all_aligned16({tensors.q, tensors.k, tensors.v})) return false;
  return device_runs_wgmma_kernels();
#else
  (void)dtype, (void)problem, (void)tensors;
  return false;
#endif
}

cudaError_t launch_attention_forward_wgmma(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                           const AttentionForwardTensors& tensors, bool& maps_refused,
                                           const char*& kernel) {
  maps_refused = true;
#if defined(KILN_HAS_TENSOR_MAPS)
  using namespace attention_wgmma;
  // A persistent grid: one block per multiprocessor (max_blocks is 16 per multiprocessor), capped by the work units.
  const Index multiprocessors = context.multiprocessors();
  const Index units = attention::paired_query_tiles<kQueryRows>(
                          problem.length_q, static_cast<Index>(problem.batch) * problem.heads_q, multiprocessors)
                          .units;
  if (units > 0x7fffffffLL) return cudaSuccess;
  const Index blocks = units < multiprocessors ? units : multiprocessors;
  attention::KernelParams params = attention::kernel_params(problem, dtype);
  params.q = tensors.q;
  params.k = tensors.k;
  params.v = tensors.v;
  params.out_written = tensors.out;
  params.lse = tensors.lse;
  vendor::TensorMap map_q;
  vendor::TensorMap map_k;
  vendor::TensorMap map_v;
  if (!tensor_map(&map_q, tensors.q, problem.head_dim, problem.length_q, problem.heads_q, problem.batch,
                  params.q_row_stride, params.q_head_stride, params.q_batch_stride, kQueryRows) ||
      !tensor_map(&map_k, tensors.k, problem.head_dim, problem.length_k, problem.heads_kv, problem.batch,
                  params.kv_row_stride, params.kv_head_stride, params.kv_batch_stride, kKeys) ||
      !tensor_map(&map_v, tensors.v, problem.head_dim, problem.length_k, problem.heads_kv, problem.batch,
                  params.kv_row_stride, params.kv_head_stride, params.kv_batch_stride, kKeys)) {
    return cudaSuccess;
  }
  maps_refused = false;
  launches++;
  if (dtype == kF16) {
    static constexpr const char* kNames[3] = {"attention_forward_wgmma_kernel<f16,64>",
                                              "attention_forward_wgmma_kernel<f16,96>",
                                              "attention_forward_wgmma_kernel<f16,128>"};
    return launch_dtype<__half>(context, kNames, map_q, map_k, map_v, params, blocks, kernel);
  }
  static constexpr const char* kNames[3] = {"attention_forward_wgmma_kernel<bf16,64>",
                                            "attention_forward_wgmma_kernel<bf16,96>",
                                            "attention_forward_wgmma_kernel<bf16,128>"};
  return launch_dtype<__nv_bfloat16>(context, kNames, map_q, map_k, map_v, params, blocks, kernel);
#else
  (void)context, (void)dtype, (void)problem, (void)tensors, (void)kernel;
  return cudaSuccess;
#endif
}

}  // namespace kiln
