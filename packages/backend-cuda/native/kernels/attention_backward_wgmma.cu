// kernels/attention_backward_wgmma.cu — flash-attention backward for Hopper (sm_90a): wgmma with
// operands fed by TMA through an mbarrier ring, warp-specialised; f16/bf16, head dims 64, 96 and
// 128 (attention_backward.cu runs everything else, and always computes Δ first).
//
// Algorithm (FlashAttention-2's backward split in two deterministic kernels, each built like the
// FlashAttention-3 forward): one kernel template in two roles. A work unit is 128 "resident" rows
// (a key tile, or a query tile), loaded once by TMA. The query role, and the key/value role at D
// 64, run persistent grids (kPersistent): one block per multiprocessor walks units in steps of
// gridDim.x, paired as the forward's query tiles (a head's tile with the most work under causal
// and its mirror), so the next unit's first streamed tiles — and at D 64, with two resident
// buffers, its rows — load while the current one runs and stores (at gpt2s's T 1024 a unit
// averages about 9 streamed tiles: one block per unit paid a launch and a cold start each). The
// key/value role at D 96/128 keeps a block per unit (its registers: see kPersistent).
// A block is 3 warpgroups: warpgroup 0 is the producer (setmaxnreg down to 24),
// warpgroups 1 and 2 the consumers (setmaxnreg up to 240), each owning 64 of the resident rows.
// The producer streams 64-row tiles of two other tensors into a ring of kStages stages (4 for D
// 64, 3 for D 96/128), each guarded by a `full` mbarrier (TMA transactions; in the key/value
// role also 32 producer threads that store the tile's lse and Δ) and an `empty` one (key/value
// role: one arrival per consumer thread, after its own reads of lse and Δ; query role: one per
// consumer warpgroup). Per streamed tile, a consumer issues two wgmma chains (both operands
// K-major in shared memory, m64n64k16, D/16 steps): X = R₁·S₁ᵀ, then Y = R₂·S₂ᵀ; once X has
// retired it computes P in a copy of X (so that wgmma accumulators are written by wgmma only)
// while Y runs, then dS once Y has, and issues the accumulations with them rounded to f16/bf16 as
// register A operands and S₁/S₂ as MN-major B (m64nNk16, N = D rounded up to 64s, 4 k16 steps
// over the tile's 64 rows), and right behind them X and Y of the next tile (FlashAttention-3's
// intra-warpgroup overlap); the two consumers take turns issuing (attention_wgmma_common.cuh
// PingPong), so one computes P and dS while the other's products run. The key/value role at D
// 96/128 (two 128-wide accumulators) has no registers for X and Y beside both packed operands: it
// issues only X of the next tile behind the accumulations, and Y in a turn of its own once P is
// computed (P, Y and the accumulators fill its 240 registers then). Accumulators are read only
// after their group has retired — waited for right after the issuing turn, in straight-line code,
// so that ptxas can tell which groups a wait_group 1 retires — and fenced (ptx::fence_operand) at
// issue and wait: ptxas serialises the pipeline otherwise (C7514/C7515).
//  - key/value role, a unit per (batch, kv head, 128-key tile): R = (K, V), S = (q, dO) of every
//    query head of the kv head's group and every query tile that can see the keys (causal: tiles
//    whose queries see none of them are never loaded), in a fixed order. X = Sᵀ, Pᵀ =
//    exp2(Sᵀ − lse), Y = dPᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − Δ); dV += Pᵀ·dO, dK += dSᵀ·q; finally dK ·= scale.
//  - query role, a unit per (batch, query head, 128-query tile): R = (q, dO), S = (K, V) of the
//    visible 64-key tiles. X = S, P = exp2(S − lse), Y = dP, dS = P ∘ (dP − Δ); dQ += dS·K;
//    finally dQ ·= scale.
// Determinism: no atomics; each output element is accumulated by one thread in a fixed order (the
// GQA heads of a kv head in head order inside one block), so two runs are bit-identical. The cost,
// as in attention_backward.cu, is recomputing S and dP in the query role.
// Causal: tiles crossing the diagonal or a sequence end, and every tile under a mask, get the
// per-element test (attention_common.cuh to_log2_scores); keys no query sees get dK = dV = 0.
// Layout: every tensor is read through a 4D tensor map (D, T, H, B) with the layout's strides
// (attention_wgmma_common.cuh), so heads-major and tokens-major are one kernel; boxes are 64
// columns × 128 (resident) or 64 (streamed) rows, 128-byte swizzled, 1024-byte aligned. TMA
// zero-fills rows past Tq/Tk and columns past D (D 96: the second box's last 32), so partial tiles
// need no load predicates; padded rows get P = 0 (lse₂ = +Inf, Δ = 0), padded columns are never
// stored. Outputs are stored from the accumulator fragments straight to global memory.
// Numerics: as attention_backward.cu — f32 accumulation (tensor-core order on the GPU, k ascending
// per k16 step in the simulator), scores in log2 units (attention_common.cuh
// scores_to_probabilities: exp2_ftz(s₂ − lse·log2 e), the scale in the fma), P and dS rounded
// to f16/bf16 once before their products, the gradients once at the end.
#include <atomic>

#include "attention_backward_wgmma.cuh"
#include "attention_wgmma_common.cuh"
#include "matmul.cuh"

namespace kiln {

namespace {
std::atomic<unsigned long long> launches{0};
}  // namespace

unsigned long long wgmma_attention_backward_launches() { return launches.load(); }

#if defined(KILN_HAS_TENSOR_MAPS)

namespace attention_wgmma_backward {

using attention::KernelParams;
using attention_wgmma::kRowBytes;

/** Resident rows per block: 2 consumer warpgroups × 64. */
inline constexpr int kResidentRows = 128;
/** Rows of one streamed tile: the N of X and Y, the k of the accumulations. */
inline constexpr int kStreamRows = 64;
inline constexpr int kConsumers = 2;
/**
 * Arrivals that release a stage. Key/value role: every consumer thread, after its own last
 * ordinary read of the stage's lse and Δ (an mbarrier arrival releases only its own thread's
 * accesses; compute-sanitizer's racecheck reported a release by one thread per warpgroup, and
 * by one per warp after __syncwarp, on an H200). Query role: one per consumer warpgroup (its
 * stages are read by wgmma only, after the warpgroup's wait).
 */
template <bool kKeyValue>
inline constexpr int kStageReleasers = kKeyValue ? kConsumers * 128 : kConsumers;
inline constexpr int kThreads = 128 * (1 + kConsumers);
/** Producer threads that store a streamed tile's lse and Δ (key/value role), after the TMA thread. */
inline constexpr int kRowValueThreads = 32;

/** Shared-memory plan of one head-dim instantiation (offsets from the 1024-byte aligned base). */
template <int kHeadDim>
struct Plan {
  /** 64-column boxes per row. */
  static constexpr int kBoxes = (kHeadDim + 63) / 64;
  /** N of the accumulations (D rounded up to whole boxes). */
  static constexpr int kOutColumns = kBoxes * 64;
  static constexpr int kStages = kBoxes == 1 ? 4 : 3;
  /**
   * Resident buffers: two at D 64, so a persistent block's next unit's rows load while this one
   * runs; one at D 96/128, where two do not fit beside the ring (the next unit's rows then load
   * once both consumers' last products of this unit that read them have completed).
   */
  static constexpr int kResidentBuffers = kBoxes == 1 ? 2 : 1;
  static constexpr int kResidentBoxBytes = kResidentRows * kRowBytes;
  /** Bytes of one resident tensor (R₁ or R₂). */
  static constexpr int kResidentBytes = kBoxes * kResidentBoxBytes;
  static constexpr int kStreamBoxBytes = kStreamRows * kRowBytes;
  /** Bytes of one streamed tile (S₁ or S₂) and of a stage (both). */
  static constexpr int kStreamBytes = kBoxes * kStreamBoxBytes;
  static constexpr int kStageBytes = 2 * kStreamBytes;
  static constexpr int kStagesOffset = kResidentBuffers * 2 * kResidentBytes;
  /** Per stage: lse₂[kStreamRows], then Δ[kStreamRows] (f32; key/value role). */
  static constexpr int kRowValuesOffset = kStagesOffset + kStages * kStageBytes;
  static constexpr int kBarrierOffset = kRowValuesOffset + kStages * 2 * kStreamRows * 4;
  /** resident_full[kResidentBuffers], resident_empty[kResidentBuffers], full[kStages], empty[kStages]. */
  static constexpr int kBarriers = 2 * kResidentBuffers + 2 * kStages;
  /** One f32 per consumer thread that ptx::store_before_wgmma_wait writes (never read). */
  static constexpr int kAnchorOffset = kBarrierOffset + kBarriers * 8;
  static constexpr int kSharedBytes = kAnchorOffset + kConsumers * 128 * 4 + 1024;
  static_assert(kSharedBytes <= 227 * 1024, "exceeds the 227 KiB of shared memory a Hopper block may use");
};

/**
 * Whether a role's grid is persistent (one block per multiprocessor walks work units): the query
 * role always, the key/value role at D 64. At D 96/128 the key/value role keeps a block per unit:
 * its consumers are at their 240 registers already, and the unit loop's state made it spill
 * 100–300 bytes inside its item loop.
 */
template <int kHeadDim, bool kKeyValue>
inline constexpr bool kPersistent = !kKeyValue || Plan<kHeadDim>::kResidentBuffers == 2;

/** One work unit: its resident rows and the streamed tiles it walks. */
struct Work {
  int b;
  /** Kv head (key/value role) or query head (query role) of the resident rows. */
  int head;
  /** First resident row and how many lie inside the sequence. */
  int row0;
  int rows_valid;
  /** Streamed tiles, in order. */
  int items;
  /** Key/value role: the first query tile that sees the block's keys, and the query tiles per query head. */
  int first_query_tile;
  int tiles_per_head;
};

/** The work of resident tile `tile` of head `head_index` (b · heads_kv + kv head, or b · heads_q + h). */
template <bool kKeyValue>
__device__ __forceinline__ Work work_at(const KernelParams& p, Index head_index, int tile) {
  Work work{};
  if constexpr (kKeyValue) {
    work.head = static_cast<int>(head_index % p.heads_kv);
    work.b = static_cast<int>(head_index / p.heads_kv);
    work.row0 = tile * kResidentRows;
    work.rows_valid = min(kResidentRows, p.length_k - work.row0);
    const int query_tiles = static_cast<int>(attention::ceil_div(p.length_q, kStreamRows));
    work.first_query_tile = static_cast<int>(attention::first_query_for_key(p, work.row0) / kStreamRows);
    work.tiles_per_head = max(query_tiles - work.first_query_tile, 0);
    work.items = work.tiles_per_head * p.group;
  } else {
    const attention::QueryBlock block = attention::query_block_at<kResidentRows>(p, head_index, tile);
    work.b = block.b;
    work.head = block.h;
    work.row0 = block.row0;
    work.rows_valid = block.rows_valid;
    work.items =
        static_cast<int>(attention::ceil_div(attention::key_limit(p, block.row0 + block.rows_valid), kStreamRows));
  }
  return work;
}

/**
 * Work `member` of unit `unit` of the persistent grid: the resident tiles of a head in pairs
 * (attention_common.cuh PairedQueryTiles), member 0 the one with the most work under causal (the
 * first key tile, or the last query tile), member 1 its mirror, so that blocks taking units in
 * steps of gridDim.x get about equal work; false when the unit has no such member.
 */
template <bool kKeyValue>
__device__ __forceinline__ bool unit_work(const KernelParams& p, const attention::PairedQueryTiles& tiles, int unit,
                                          int member, Work& work) {
  // attention_common.cuh tile_order in 32 bits (the host keeps the tiles at or below 2^30).
  const int heads = p.batch * (kKeyValue ? p.heads_kv : p.heads_q);
  const int group_units = attention::kHeadsPerTileGroup * tiles.per_head;
  const int group = unit / group_units;
  const int first_head = group * attention::kHeadsPerTileGroup;
  const int heads_in_group = min(heads - first_head, attention::kHeadsPerTileGroup);
  const int within = unit - group * group_units;
  const int head_index = first_head + within % heads_in_group;
  const int rank = within / heads_in_group;
  const int mirror = tiles.query_tiles - 1 - rank;
  const int most = kKeyValue ? rank : mirror;
  const int least = kKeyValue ? mirror : rank;
  if (member == 1 && (!tiles.paired || most == least)) return false;
  work = work_at<kKeyValue>(p, head_index, member == 0 ? most : least);
  return true;
}

/** Key/value role: the query head and first query row of streamed tile `item`. */
__device__ __forceinline__ void query_tile_of(const KernelParams& p, const Work& work, int item, int& h, int& query0) {
  h = work.head * p.group + item / work.tiles_per_head;
  query0 = (work.first_query_tile + item % work.tiles_per_head) * kStreamRows;
}

/** Stores rows [warp_row, warp_row + 16) of an accumulator fragment ·multiplier as T (rows < rows_valid, columns < D). */
template <typename T, int kTiles>
__device__ __forceinline__ void store_rows(const float (&acc)[kTiles][4], T* out, Index row_stride, int warp_row,
                                           int rows_valid, int head_dim, float multiplier) {
  const attention::LaneCoordinates lane = attention::lane_coordinates();
  KILN_UNROLL
  for (int half = 0; half < 2; half++) {
    const int row = warp_row + lane.g + 8 * half;
    if (row >= rows_valid) continue;
    KILN_UNROLL
    for (int nt = 0; nt < kTiles; nt++) {
      for (int e = 0; e < 2; e++) {
        const int column = nt * 8 + 2 * lane.t + e;
        if (column < head_dim)
          out[static_cast<Index>(row) * row_stride + column] = from_float<T>(acc[nt][2 * half + e] * multiplier);
      }
    }
  }
}

template <typename T, int kHeadDim, bool kKeyValue>
__global__ void __launch_bounds__(kThreads, 1)
    attention_backward_wgmma_kernel(const KILN_GRID_CONSTANT vendor::TensorMap map_r1,
                                    const KILN_GRID_CONSTANT vendor::TensorMap map_r2,
                                    const KILN_GRID_CONSTANT vendor::TensorMap map_s1,
                                    const KILN_GRID_CONSTANT vendor::TensorMap map_s2, KernelParams p) {
  using namespace attention;
  using attention_wgmma::flat;
  using P = Plan<kHeadDim>;
  KILN_EXTERN_SHARED(unsigned char, raw);
  const std::uint32_t raw_address = ptx::smem_address(raw);
  unsigned char* shared = raw + ((1024u - raw_address % 1024u) % 1024u);
  auto* resident_full = reinterpret_cast<std::uint64_t*>(shared + P::kBarrierOffset);
  std::uint64_t* resident_empty = resident_full + P::kResidentBuffers;
  std::uint64_t* full = resident_empty + P::kResidentBuffers;
  std::uint64_t* empty = full + P::kStages;
  float* row_values = reinterpret_cast<float*>(shared + P::kRowValuesOffset);
  // The work units (unit_work) over the grid: paired when the resident tiles outnumber the blocks.
  const PairedQueryTiles tiles =
      paired_query_tiles<kResidentRows>(kKeyValue ? p.length_k : p.length_q,
                                        static_cast<Index>(p.batch) * (kKeyValue ? p.heads_kv : p.heads_q), gridDim.x);
  // Calls body(work) for each of this block's work units, in order: persistent,
  // member k % 2 of unit blockIdx.x + (k / 2)·gridDim.x for k = 0, 1, …; otherwise (a block per
  // resident tile, so unpaired units) unit blockIdx.x alone.
  const auto for_each_work = [&](auto&& body) {
    Work work;
    if constexpr (kPersistent<kHeadDim, kKeyValue>) {
      const int last = static_cast<int>(tiles.units) * 2;
      KILN_NO_UNROLL
      for (int k = 2 * static_cast<int>(blockIdx.x); k < last; k += k % 2 == 0 ? 1 : 2 * gridDim.x - 1) {
        if (unit_work<kKeyValue>(p, tiles, k / 2, k % 2, work)) body(work);
      }
    } else {
      if (unit_work<kKeyValue>(p, tiles, static_cast<int>(blockIdx.x), 0, work)) body(work);
    }
  };

  if (threadIdx.x == 0) {
    for (int buffer = 0; buffer < P::kResidentBuffers; buffer++) {
      ptx::mbarrier_init(&resident_full[buffer], 1);
      ptx::mbarrier_init(&resident_empty[buffer], kConsumers);
    }
    for (int stage = 0; stage < P::kStages; stage++) {
      ptx::mbarrier_init(&full[stage], kKeyValue ? 1 + kRowValueThreads : 1);
      ptx::mbarrier_init(&empty[stage], kStageReleasers<kKeyValue>);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<24>();  // 24 + 2 × 240 registers × 128 threads: the 64,512 of __launch_bounds__
    if (threadIdx.x == 0) {
      // Resident loads so far (buffer and resident_full / resident_empty phases), streamed tiles so far (ring position).
      int residents = 0;
      int ring = 0;
      for_each_work([&](const Work& work) {
        if (work.items == 0) return;  // nothing to load: the consumers store zeros
        // The kv head of the streamed K/V tiles (query role).
        const int kv_head = kKeyValue ? work.head : work.head / p.group;
        const auto load_stream = [&](int item) {
          const int stage = ring % P::kStages;
          const unsigned phase = static_cast<unsigned>(ring / P::kStages) & 1u;
          int head = kv_head;
          int row = item * kStreamRows;
          if constexpr (kKeyValue) query_tile_of(p, work, item, head, row);
          ptx::mbarrier_wait(&empty[stage], phase ^ 1u);
          ptx::mbarrier_arrive_expect_tx(&full[stage], P::kStageBytes);
          unsigned char* s1_stage = shared + P::kStagesOffset + stage * P::kStageBytes;
          for (int box = 0; box < P::kBoxes; box++) {
            ptx::tma_load_4d(s1_stage + box * P::kStreamBoxBytes, &map_s1, box * 64, row, head, work.b, &full[stage]);
            ptx::tma_load_4d(s1_stage + P::kStreamBytes + box * P::kStreamBoxBytes, &map_s2, box * 64, row, head,
                             work.b, &full[stage]);
          }
          ring++;
        };
        // With one resident buffer, its next load waits for both consumers' last X and Y of the
        // previous unit; the streamed tiles whose stages free before that (all but the last one's)
        // load first. With two, the resident rows go first: their buffer was released a unit ago.
        const int stream_first = P::kResidentBuffers == 1 ? min(work.items, P::kStages - 1) : 0;
        int item = 0;
        for (; item < stream_first; item++) load_stream(item);
        const int buffer = residents % P::kResidentBuffers;
        if (residents >= P::kResidentBuffers)
          ptx::mbarrier_wait(&resident_empty[buffer], static_cast<unsigned>(residents / P::kResidentBuffers - 1) & 1u);
        ptx::mbarrier_arrive_expect_tx(&resident_full[buffer], 2 * P::kResidentBytes);
        unsigned char* resident = shared + buffer * 2 * P::kResidentBytes;
        for (int box = 0; box < P::kBoxes; box++) {
          ptx::tma_load_4d(resident + box * P::kResidentBoxBytes, &map_r1, box * 64, work.row0, work.head, work.b,
                           &resident_full[buffer]);
          ptx::tma_load_4d(resident + P::kResidentBytes + box * P::kResidentBoxBytes, &map_r2, box * 64, work.row0,
                           work.head, work.b, &resident_full[buffer]);
        }
        residents++;
        for (; item < work.items; item++) load_stream(item);
      });
    } else if (kKeyValue && threadIdx.x >= 32 && threadIdx.x < 32 + kRowValueThreads) {
      // lse₂ (+Inf past Tq or for a row without keys, so P = 0) and Δ (0 past Tq) of each streamed query tile.
      const int lane = static_cast<int>(threadIdx.x) - 32;
      int ring = 0;
      for_each_work([&](const Work& work) {
        for (int item = 0; item < work.items; item++, ring++) {
          const int stage = ring % P::kStages;
          int h = 0;
          int query0 = 0;
          query_tile_of(p, work, item, h, query0);
          ptx::mbarrier_wait(&empty[stage], (static_cast<unsigned>(ring / P::kStages) & 1u) ^ 1u);
          float* lse_stage = row_values + stage * 2 * kStreamRows;
          const Index row_base = (static_cast<Index>(work.b) * p.heads_q + h) * p.length_q + query0;
          KILN_UNROLL
          for (int pass = 0; pass < kStreamRows / kRowValueThreads; pass++) {
            const int column = lane + pass * kRowValueThreads;
            const bool inside = query0 + column < p.length_q;
            lse_stage[column] = lse_log2_or_infinity(p.lse, row_base + column, inside);
            lse_stage[kStreamRows + column] = inside ? p.delta[row_base + column] : 0.0f;
          }
          ptx::mbarrier_arrive(&full[stage]);
        }
      });
    }
    return;
  }

  ptx::setmaxnreg_inc<240>();
  const int consumer = warpgroup - 1;
  const int thread = static_cast<int>(threadIdx.x % 128);
  const int warp = thread / 32;
  const int warp_row = consumer * 64 + warp * 16;  // block-relative first resident row of this warp
  const LaneCoordinates lane = lane_coordinates();
  const std::uint32_t shared_address = ptx::smem_address(shared);
  // The current work unit, its resident buffer and this consumer's rows in it, and the ring
  // position of its first streamed tile (the producer's count); set per unit below.
  Work work{};
  int resident_buffer = 0;
  std::uint32_t r1_address = 0;
  std::uint32_t r2_address = 0;
  int ring = 0;

  constexpr int kOutTiles = P::kOutColumns / 8;
  // acc1: dK (key/value role) or dQ; acc2: dV (key/value role only).
  float acc1[kOutTiles][4];
  float acc2[kKeyValue ? kOutTiles : 1][4];
  // Query role: lse₂ and Δ of this thread's two resident rows.
  float lse_row[2] = {0.0f, 0.0f};
  float delta_row[2] = {0.0f, 0.0f};

  // X = R₁·S₁ᵀ or Y = R₂·S₂ᵀ: k16 step `step` reads columns 16·step … of box step / 4 of both (K-major).
  auto issue_scores = [&](float (&x)[kStreamRows / 8][4], std::uint32_t resident, std::uint32_t streamed) {
    ptx::fence_operand(x);
    ptx::wgmma_fence();
    KILN_UNROLL
    for (int step = 0; step < kHeadDim / 16; step++) {
      const std::uint32_t column_bytes = static_cast<std::uint32_t>((step % 4) * 32);
      const std::uint64_t desc_r =
          ptx::wgmma_descriptor_128b(resident + (step / 4) * P::kResidentBoxBytes + column_bytes, 16, 1024);
      const std::uint64_t desc_s =
          ptx::wgmma_descriptor_128b(streamed + (step / 4) * P::kStreamBoxBytes + column_bytes, 16, 1024);
      ptx::wgmma_m64nk16<T, kStreamRows, 0, 0>(flat(x), desc_r, desc_s, step > 0 ? 1 : 0);
    }
    ptx::wgmma_commit();
    ptx::fence_operand(x);
  };
  // acc += A·S with A the packed fragment (rows: this consumer's resident rows, k: the streamed
  // rows) and S MN-major (k16 step `step` reads streamed rows 16·step …; boxes kStreamBoxBytes apart).
  auto issue_accumulate = [&](float (&acc)[kOutTiles][4], const std::uint32_t (&a)[kStreamRows / 16][4],
                              std::uint32_t streamed) {
    KILN_UNROLL
    for (int step = 0; step < kStreamRows / 16; step++) {
      const std::uint64_t desc_s =
          ptx::wgmma_descriptor_128b(streamed + step * 16 * kRowBytes, P::kStreamBoxBytes, 1024);
      ptx::wgmma_m64nk16_rs<T, P::kOutColumns, 1>(flat(acc), a[step], desc_s, 1);
    }
  };

  // X and Y of item n + 1 are issued right behind item n's accumulations, so the tensor cores run
  // them while the accumulations finish, and P is computed from X while Y still runs
  // (FlashAttention-3's intra-warpgroup overlap); P and dS go to a copy of X. The key/value role
  // at D 96/128 (two D-wide accumulators) has no registers for X, Y and both packed operands at
  // once, so it takes two turns per item: Y once P is computed (then waited for), and the
  // accumulations with X of the next item behind them. Either way P and dS are packed pair by
  // pair, so P, Y and both packed operands shrink together.
  constexpr bool kTwoTurns = kKeyValue && P::kOutColumns > 64;
  float x[kStreamRows / 8][4];
  float y[kStreamRows / 8][4];
  std::uint32_t a_p[kStreamRows / 16][4];
  std::uint32_t a_ds[kStreamRows / 16][4];
  // P, then dS, of the current item: a copy of X, so that wgmma accumulators are written by wgmma
  // only (ptxas serialises the wgmma pipeline otherwise).
  float scores[kStreamRows / 8][4];
  float* anchor = reinterpret_cast<float*>(shared + P::kAnchorOffset) + consumer * 128 + thread;
  // Releases a stage once this thread is done with it (kStageReleasers: who arrives).
  const auto release_stage = [&](int stage) {
    if (kKeyValue || thread == 0) ptx::mbarrier_arrive(&empty[stage]);
  };
  const auto stream_address = [&](int item) {
    return shared_address +
           static_cast<std::uint32_t>(P::kStagesOffset + ((ring + item) % P::kStages) * P::kStageBytes);
  };
  // lse₂[kStreamRows], then Δ[kStreamRows], of item's stage (key/value role).
  const auto row_values_of = [&](int item) { return row_values + ((ring + item) % P::kStages) * 2 * kStreamRows; };
  // Waits until item's stage has landed.
  const auto wait_stream = [&](int item) {
    ptx::mbarrier_wait(&full[(ring + item) % P::kStages], static_cast<unsigned>((ring + item) / P::kStages) & 1u);
  };
  const auto issue_y = [&](int item) {
    issue_scores(y, r2_address, stream_address(item) + static_cast<std::uint32_t>(P::kStreamBytes));
  };
  // Issues X and (unless kTwoTurns) Y of a landed item as two groups.
  const auto issue_products = [&](int item) {
    issue_scores(x, r1_address, stream_address(item));
    if constexpr (!kTwoTurns) issue_y(item);
  };
  // Fences operands so that no use of them moves across a wgmma issue or wait. Only live ones:
  // a fence reads its operand, so fencing a dead one would keep its registers.
  const auto fence = [](auto&... operands) { (ptx::fence_operand(operands), ...); };
  // X of `item` → P in `scores` (row_of / column_of give global query and key positions).
  const auto compute_probabilities = [&](int item) {
    KILN_UNROLL
    for (int nt = 0; nt < kStreamRows / 8; nt++) {
      for (int e = 0; e < 4; e++) scores[nt][e] = x[nt][e];
    }
    if constexpr (kKeyValue) {
      int h = 0;
      int query0 = 0;
      query_tile_of(p, work, item, h, query0);
      const float* lse_stage = row_values_of(item);
      const int key_first = work.row0 + warp_row;
      const bool check = key_first + 16 > p.length_k || query0 + kStreamRows > p.length_q ||
                         (p.causal && static_cast<long long>(key_first) + 15 > query0 + p.shift);
      scores_to_probabilities(
          scores, p, work.b, h, check, [&](int, int column) { return static_cast<long long>(query0 + column); },
          [&](int row, int) { return static_cast<long long>(key_first + row); },
          [&](int nt, int e) { return lse_stage[nt * 8 + 2 * lane.t + (e & 1)]; });
    } else {
      const int key0 = item * kStreamRows;
      const int row_first = work.row0 + warp_row;
      const bool check = key0 + kStreamRows > p.length_k ||
                         (p.causal && static_cast<long long>(key0) + kStreamRows - 1 > row_first + p.shift);
      scores_to_probabilities(
          scores, p, work.b, work.head, check, [&](int row, int) { return static_cast<long long>(row_first + row); },
          [&](int, int column) { return static_cast<long long>(key0 + column); },
          [&](int, int e) { return lse_row[e / 2]; });
    }
  };
  // Right after the turn that issued item's products: waits for X (and item − 1's accumulations,
  // whose stage it then releases) and computes P while Y runs, then waits for Y. The waits follow
  // the issues in straight-line code: ptxas then knows which groups retired (waiting at the loop's
  // top, on groups from before the back edge, it serialises the pipeline: C7514). With kTwoTurns
  // Y is not issued yet: it waits for everything, at the top of the item, as before its Y turn.
  // Once the unit's last X and Y have completed this consumer is done with the resident rows: the
  // producer may load the next unit's into their buffer (one arrival per consumer warpgroup: wgmma
  // alone read them, and the warpgroup has waited).
  const auto resident_done = [&](int item) {
    if (item == work.items - 1 && thread == 0) ptx::mbarrier_arrive(&resident_empty[resident_buffer]);
  };
  const auto settle_probabilities = [&](int item) {
    ptx::wgmma_wait<kTwoTurns ? 0 : 1>();
    fence(x, acc1, acc2, a_p, a_ds);
    if (item > 0) release_stage((ring + item - 1) % P::kStages);
    compute_probabilities(item);
    if constexpr (!kTwoTurns) {
      // P depends on every exponential: stored before the wait, it keeps them ahead of it (ptxas
      // otherwise hoists the wait above them, and they run after Y).
      ptx::store_before_wgmma_wait(anchor, attention_wgmma::fold_bits(scores));
      ptx::wgmma_wait<0>();  // Y
      fence(y);
      resident_done(item);
    }
  };
  // The consumers ping-pong (attention_wgmma_common.cuh PingPong): each takes 1 + work.items ·
  // (kTwoTurns ? 2 : 1) turns (the products of item 0, then per item Y when kTwoTurns, and the
  // accumulations with the products of the next item), so one consumer computes P and dS while
  // the other's products run. work.items is the block's, so both take the same number of turns.
  const attention_wgmma::PingPong ping_pong(consumer);

  ping_pong.start();
  int residents = 0;  // resident loads so far (the producer's count): buffer and resident_full phase
  for_each_work([&](const Work& unit) {
    work = unit;
    resident_buffer = residents % P::kResidentBuffers;
    r1_address = shared_address +
                 static_cast<std::uint32_t>(resident_buffer * 2 * P::kResidentBytes + consumer * 64 * kRowBytes);
    r2_address = r1_address + static_cast<std::uint32_t>(P::kResidentBytes);
    KILN_UNROLL
    for (int nt = 0; nt < kOutTiles; nt++) {
      for (int e = 0; e < 4; e++) acc1[nt][e] = 0.0f;
    }
    KILN_UNROLL
    for (int nt = 0; nt < (kKeyValue ? kOutTiles : 1); nt++) {
      for (int e = 0; e < 4; e++) acc2[nt][e] = 0.0f;
    }
    // The zeros are written before the first wgmma is issued (else the compiler may sink them into the pipeline).
    ptx::fence_operand(acc1);
    ptx::fence_operand(acc2);
    if constexpr (!kKeyValue) {
      const Index row_base = (static_cast<Index>(work.b) * p.heads_q + work.head) * p.length_q + work.row0;
      KILN_UNROLL
      for (int half = 0; half < 2; half++) {
        const int row = warp_row + lane.g + 8 * half;
        lse_row[half] = lse_log2_or_infinity(p.lse, row_base + row, row < work.rows_valid);
        delta_row[half] = row < work.rows_valid ? p.delta[row_base + row] : 0.0f;
      }
    }

    // A unit without streamed tiles (keys no query sees, queries that see no key) stores zeros.
    if (work.items > 0) {
      ptx::mbarrier_wait(&resident_full[resident_buffer], static_cast<unsigned>(residents / P::kResidentBuffers) & 1u);
      wait_stream(0);
      ping_pong.take_turn();
      issue_products(0);
      ping_pong.hand_over();
      if constexpr (!kTwoTurns) settle_probabilities(0);
      for (int item = 0; item < work.items; item++) {
        const int stage = (ring + item) % P::kStages;
        const std::uint32_t s1_address = stream_address(item);
        const std::uint32_t s2_address = s1_address + static_cast<std::uint32_t>(P::kStreamBytes);
        if constexpr (kTwoTurns) {
          settle_probabilities(item);
          ping_pong.take_turn();
          issue_y(item);
          ping_pong.hand_over();
          ptx::wgmma_wait<0>();  // Y
          fence(y, acc1, acc2);
          resident_done(item);
        }

        // dS = P ∘ (Y − Δ); the key/value role packs P (for dV += Pᵀ·dO) pair by pair beside it.
        const float* lse_stage = row_values_of(item);
        KILN_UNROLL
        for (int step = 0; step < kStreamRows / 16; step++) {
          KILN_UNROLL
          for (int word = 0; word < 4; word++) {
            const int nt = 2 * step + word / 2;
            const int e = 2 * (word % 2);
            float ds[2];
            for (int i = 0; i < 2; i++) {
              const float delta = kKeyValue ? lse_stage[kStreamRows + nt * 8 + 2 * lane.t + i] : delta_row[(e + i) / 2];
              ds[i] = scores[nt][e + i] * (y[nt][e + i] - delta);
            }
            if constexpr (kKeyValue) a_p[step][word] = pack_pair<T>(scores[nt][e], scores[nt][e + 1]);
            a_ds[step][word] = pack_pair<T>(ds[0], ds[1]);
          }
        }

        const bool more = item + 1 < work.items;
        if (more) wait_stream(item + 1);  // before the turn: a turn is held only while issuing
        ping_pong.take_turn();
        fence(acc1, acc2, a_p, a_ds);
        ptx::wgmma_fence();
        if constexpr (kKeyValue) issue_accumulate(acc2, a_p, s2_address);  // dV += Pᵀ·dO
        issue_accumulate(acc1, a_ds, s1_address);                          // dK += dSᵀ·q, or dQ += dS·K
        ptx::wgmma_commit();
        fence(acc1, acc2, a_p, a_ds);
        if (more) issue_products(item + 1);  // this stage is released once the accumulations are done
        ping_pong.hand_over();
        if (more && !kTwoTurns) {
          settle_probabilities(item + 1);
        } else if (!more) {
          ptx::wgmma_wait<0>();  // the stage (and, key/value role, its lse and Δ) is free
          fence(acc1, acc2, a_p, a_ds);
          release_stage(stage);
        }
      }
      residents++;
      ring += work.items;
    }
    // Nothing is in flight here (the last item waited); saying so lets ptxas see every path settled.
    ptx::wgmma_wait<0>();
    ptx::fence_operand(acc1);
    ptx::fence_operand(acc2);

    if constexpr (kKeyValue) {
      const Index offset = kv_offset_of(p, work.b, work.head, work.row0);
      store_rows<T>(acc1, static_cast<T*>(p.dk) + offset, p.kv_row_stride, warp_row, work.rows_valid, p.head_dim,
                    p.scale);
      store_rows<T>(acc2, static_cast<T*>(p.dv) + offset, p.kv_row_stride, warp_row, work.rows_valid, p.head_dim, 1.0f);
    } else {
      store_rows<T>(acc1, static_cast<T*>(p.dq) + q_offset_of(p, work.b, work.head, work.row0), p.q_row_stride,
                    warp_row, work.rows_valid, p.head_dim, p.scale);
    }
  });
  ping_pong.finish();
}

/** Kernel names of one dtype for the simulator's messages: [role][head dim 64, 96, 128]. */
using Names = const char* const (&)[2][3];

/** Blocks of one role: one per resident tile, or for a persistent kernel (Plan::kPersistent) at most one per multiprocessor. */
struct RoleGrid {
  Index every_tile;
  Index persistent;
};

template <typename T, int kHeadDim, bool kKeyValue>
cudaError_t launch_role(const LaunchContext& context, const char* name, const vendor::TensorMap (&maps)[4],
                        const KernelParams& params, RoleGrid grid) {
  using P = Plan<kHeadDim>;
  const Index blocks = kPersistent<kHeadDim, kKeyValue> ? grid.persistent : grid.every_tile;
  if (blocks == 0) return cudaSuccess;
  const cudaError_t allowed = cudaFuncSetAttribute(attention_backward_wgmma_kernel<T, kHeadDim, kKeyValue>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, P::kSharedBytes);
  if (allowed != cudaSuccess) return allowed;
  return vendor::launch(name, attention_backward_wgmma_kernel<T, kHeadDim, kKeyValue>,
                        dim3(static_cast<unsigned>(blocks)), dim3(kThreads), static_cast<std::size_t>(P::kSharedBytes),
                        context.stream, maps[0], maps[1], maps[2], maps[3], params);
}

/** Both roles at one head dim: key/value maps (K, V | q, dO), then query maps (q, dO | K, V). */
template <typename T, int kHeadDim>
cudaError_t launch_head_dim(const LaunchContext& context, Names names, int slot, const vendor::TensorMap (&kv_maps)[4],
                            const vendor::TensorMap (&q_maps)[4], const KernelParams& params, RoleGrid kv_blocks,
                            RoleGrid q_blocks, AttentionBackwardKernels& kernels) {
  kernels.key_value = names[0][slot];
  kernels.query = names[1][slot];
  const cudaError_t error = launch_role<T, kHeadDim, true>(context, names[0][slot], kv_maps, params, kv_blocks);
  if (error != cudaSuccess) return error;
  return launch_role<T, kHeadDim, false>(context, names[1][slot], q_maps, params, q_blocks);
}

template <typename T>
cudaError_t launch_dtype(const LaunchContext& context, Names names, const vendor::TensorMap (&kv_maps)[4],
                         const vendor::TensorMap (&q_maps)[4], const KernelParams& params, RoleGrid kv_blocks,
                         RoleGrid q_blocks, AttentionBackwardKernels& kernels) {
  if (params.head_dim == 64)
    return launch_head_dim<T, 64>(context, names, 0, kv_maps, q_maps, params, kv_blocks, q_blocks, kernels);
  if (params.head_dim == 96)
    return launch_head_dim<T, 96>(context, names, 1, kv_maps, q_maps, params, kv_blocks, q_blocks, kernels);
  return launch_head_dim<T, 128>(context, names, 2, kv_maps, q_maps, params, kv_blocks, q_blocks, kernels);
}

}  // namespace attention_wgmma_backward

#endif  // KILN_HAS_TENSOR_MAPS

bool attention_backward_wgmma_supports(int dtype, const AttentionProblem& problem,
                                       const AttentionBackwardTensors& tensors) {
#if defined(KILN_HAS_TENSOR_MAPS)
  if (dtype != kF16 && dtype != kBF16) return false;
  if (problem.head_dim != 64 && problem.head_dim != 96 && problem.head_dim != 128) return false;
  if (problem.length_q <= 0 || problem.length_k <= 0 || problem.batch <= 0 || problem.heads_q <= 0 ||
      problem.heads_kv <= 0)
    return false;
  if (!attention::all_aligned16({tensors.q, tensors.k, tensors.v, tensors.d_out})) return false;
  return device_runs_wgmma_kernels();
#else
  (void)dtype, (void)problem, (void)tensors;
  return false;
#endif
}

cudaError_t launch_attention_backward_wgmma(const LaunchContext& context, int dtype, const AttentionProblem& problem,
                                            const AttentionBackwardTensors& tensors, bool& maps_refused,
                                            AttentionBackwardKernels& kernels) {
  maps_refused = true;
#if defined(KILN_HAS_TENSOR_MAPS)
  using namespace attention_wgmma_backward;
  using attention_wgmma::tensor_map;
  // Persistent grids: one block per multiprocessor (max_blocks is 16 per multiprocessor), capped by the work units.
  const Index multiprocessors = context.multiprocessors();
  const Index kv_units = attention::paired_query_tiles<kResidentRows>(
                             problem.length_k, static_cast<Index>(problem.batch) * problem.heads_kv, multiprocessors)
                             .units;
  const Index q_units = attention::paired_query_tiles<kResidentRows>(
                            problem.length_q, static_cast<Index>(problem.batch) * problem.heads_q, multiprocessors)
                            .units;
  const Index kv_tiles = attention::ceil_div(problem.length_k, kResidentRows) * problem.batch * problem.heads_kv;
  const Index q_tiles = attention::ceil_div(problem.length_q, kResidentRows) * problem.batch * problem.heads_q;
  // The kernel counts units and their members in int (up to twice the units): refuse past 2^30 tiles.
  if (kv_tiles > (1LL << 30) || q_tiles > (1LL << 30)) return cudaSuccess;
  const RoleGrid kv_blocks{kv_tiles, kv_units < multiprocessors ? kv_units : multiprocessors};
  const RoleGrid q_blocks{q_tiles, q_units < multiprocessors ? q_units : multiprocessors};
  attention::KernelParams params = attention::kernel_params(problem, dtype);
  params.q = tensors.q;
  params.k = tensors.k;
  params.v = tensors.v;
  params.out = tensors.out;
  params.d_out = tensors.d_out;
  params.lse = const_cast<float*>(tensors.lse);
  params.dq = tensors.dq;
  params.dk = tensors.dk;
  params.dv = tensors.dv;
  params.delta = tensors.delta;
  // Maps of q / dO and of K / V with `rows`-row boxes.
  const auto q_map = [&](vendor::TensorMap* map, const void* base, int rows) {
    return tensor_map(map, base, problem.head_dim, problem.length_q, problem.heads_q, problem.batch,
                      params.q_row_stride, params.q_head_stride, params.q_batch_stride, rows);
  };
  const auto kv_map = [&](vendor::TensorMap* map, const void* base, int rows) {
    return tensor_map(map, base, problem.head_dim, problem.length_k, problem.heads_kv, problem.batch,
                      params.kv_row_stride, params.kv_head_stride, params.kv_batch_stride, rows);
  };
  vendor::TensorMap kv_maps[4];
  vendor::TensorMap q_maps[4];
  if (!kv_map(&kv_maps[0], tensors.k, kResidentRows) || !kv_map(&kv_maps[1], tensors.v, kResidentRows) ||
      !q_map(&kv_maps[2], tensors.q, kStreamRows) || !q_map(&kv_maps[3], tensors.d_out, kStreamRows) ||
      !q_map(&q_maps[0], tensors.q, kResidentRows) || !q_map(&q_maps[1], tensors.d_out, kResidentRows) ||
      !kv_map(&q_maps[2], tensors.k, kStreamRows) || !kv_map(&q_maps[3], tensors.v, kStreamRows)) {
    return cudaSuccess;
  }
  maps_refused = false;
  launches++;
  if (dtype == kF16) {
    static constexpr const char* kNames[2][3] = {
        {"attention_backward_wgmma_kernel<f16,64,kv>", "attention_backward_wgmma_kernel<f16,96,kv>",
         "attention_backward_wgmma_kernel<f16,128,kv>"},
        {"attention_backward_wgmma_kernel<f16,64,q>", "attention_backward_wgmma_kernel<f16,96,q>",
         "attention_backward_wgmma_kernel<f16,128,q>"}};
    return launch_dtype<__half>(context, kNames, kv_maps, q_maps, params, kv_blocks, q_blocks, kernels);
  }
  static constexpr const char* kNames[2][3] = {
      {"attention_backward_wgmma_kernel<bf16,64,kv>", "attention_backward_wgmma_kernel<bf16,96,kv>",
       "attention_backward_wgmma_kernel<bf16,128,kv>"},
      {"attention_backward_wgmma_kernel<bf16,64,q>", "attention_backward_wgmma_kernel<bf16,96,q>",
       "attention_backward_wgmma_kernel<bf16,128,q>"}};
  return launch_dtype<__nv_bfloat16>(context, kNames, kv_maps, q_maps, params, kv_blocks, q_blocks, kernels);
#else
  (void)context, (void)dtype, (void)problem, (void)tensors, (void)kernels;
  return cudaSuccess;
#endif
}

}  // namespace kiln
