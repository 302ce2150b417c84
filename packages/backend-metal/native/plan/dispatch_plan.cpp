#include "dispatch_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "../kernels/kiln_metal_args.h"
#include "kiln/native_error.h"
#include "kiln/op_names.h"
#include "kiln/rounding.h"
#include "plan_common.h"

namespace kiln::metal {
using namespace plan_common;
namespace {

constexpr Index kMaxBatchPerDispatch = 65535;
/** scatterAdd: threads (row-range owners) to aim for. */
constexpr Index kScatterThreads = 65536;

std::uint32_t groups_for(Index work, Index per_group) { return u32((work + per_group - 1) / per_group); }

ConstantValue int_constant(int index, const char* name, int value) {
  return ConstantValue{index, name, ConstantKind::kInt, value};
}
ConstantValue bool_constant(int index, const char* name, bool value) {
  return ConstantValue{index, name, ConstantKind::kBool, value ? 1 : 0};
}

Dispatch elementwise(std::string kernel, Index count, std::string what) {
  Dispatch dispatch;
  dispatch.kernel = std::move(kernel);
  dispatch.threadgroups = Size3{groups_for(count, KILN_THREADS), 1, 1};
  dispatch.threads = Size3{KILN_THREADS, 1, 1};
  dispatch.what = std::move(what);
  return dispatch;
}

/** Rows (inner 1) long enough for one threadgroup per row; everything else runs one thread per output column. */
bool reduce_by_rows(Index size, Index inner) { return inner == 1 && size >= 64; }

/** How a reduce splits the reduced axis: `chunks` (1: one pass) of `chunk_size` elements. */
struct ReduceSplit {
  Index chunks = 1;
  Index chunk_size = 0;
};

/** Threadgroups (rows) or threads (columns) a reduce should keep busy before its axis is split, and the smallest chunk worth a split. */
constexpr Index kReduceRowGroups = 256;
constexpr Index kReduceRowChunk = 4096;
constexpr Index kReduceColumnThreads = 16384;
constexpr Index kReduceColumnChunk = 32;

/**
 * The split of a reduce: few long rows (fewer than kReduceRowGroups rows, each at least two
 * chunks of kReduceRowChunk) or few long columns (fewer than kReduceColumnThreads outputs) are cut
 * along the reduced axis so about that many threadgroups / threads run; a function of the shape
 * only, so the combine order — and the bits — never change between runs.
 */
ReduceSplit reduce_split(Index outer, Index size, Index inner) {
  ReduceSplit split;
  const Index outputs = outer * inner;
  Index wanted = 1;
  if (outputs == 0 || size == 0) return split;
  if (reduce_by_rows(size, inner)) {
    if (outer < kReduceRowGroups) wanted = std::min((kReduceRowGroups + outer - 1) / outer, size / kReduceRowChunk);
  } else if (outputs < kReduceColumnThreads) {
    wanted = std::min((kReduceColumnThreads + outputs - 1) / outputs, size / kReduceColumnChunk);
  }
  if (wanted < 2) return split;
  split.chunk_size = (size + wanted - 1) / wanted;
  split.chunks = (size + split.chunk_size - 1) / split.chunk_size;
  if (split.chunks < 2) split.chunks = 1;
  return split;
}

/** One chunk of a strided call: ≤ KILN_MAX_RANK dims, element offsets per operand, first linear index. */
struct Chunk {
  KilnStridedArgs args;
  Index count;
};

/**
 * Drops size-1 dims, merges dims contiguous in every operand, and splits what is left into chunks
 * of at most KILN_MAX_RANK dims (one chunk per index of the outer rest). `operands` views share `shape`.
 */
std::vector<Chunk> strided_chunks(const std::vector<Index>& shape,
                                  const std::vector<const std::vector<Index>*>& strides,
                                  const std::vector<Index>& offsets) {
  const std::size_t operands = strides.size();
  std::vector<Index> sizes;
  std::vector<std::vector<Index>> steps(operands);
  for (std::size_t dim = 0; dim < shape.size(); dim++) {
    if (shape[dim] == 0) return {};
    if (shape[dim] == 1) continue;
    bool mergeable = !sizes.empty();
    for (std::size_t op = 0; op < operands && mergeable; op++)
      mergeable = steps[op].back() == (*strides[op])[dim] * shape[dim];
    if (mergeable) {
      sizes.back() *= shape[dim];
      for (std::size_t op = 0; op < operands; op++) steps[op].back() = (*strides[op])[dim];
    } else {
      sizes.push_back(shape[dim]);
      for (std::size_t op = 0; op < operands; op++) steps[op].push_back((*strides[op])[dim]);
    }
  }
  const int rank = static_cast<int>(sizes.size());
  const int outer_rank = rank > KILN_MAX_RANK ? rank - KILN_MAX_RANK : 0;
  Chunk chunk{};
  chunk.args.rank = u32(rank - outer_rank);
  chunk.count = 1;
  for (int dim = 0; dim < rank - outer_rank; dim++) {
    chunk.args.shape[dim] = u32(sizes[outer_rank + dim]);
    chunk.count *= sizes[outer_rank + dim];
    for (std::size_t op = 0; op < operands; op++)
      chunk.args.strides[op][dim] = static_cast<kiln_i32>(steps[op][outer_rank + dim]);
  }
  chunk.args.count = u32(chunk.count);
  std::vector<Chunk> chunks;
  std::vector<Index> position(static_cast<std::size_t>(outer_rank), 0);
  Index start = 0;
  for (;;) {
    for (std::size_t op = 0; op < operands; op++) {
      Index offset = offsets[op];
      for (int dim = 0; dim < outer_rank; dim++) offset += position[dim] * steps[op][dim];
      chunk.args.offsets[op] = u32(offset);
    }
    chunk.args.out_offset = u32(start);
    chunks.push_back(chunk);
    start += chunk.count;
    int dim = outer_rank - 1;
    while (dim >= 0 && ++position[dim] == sizes[dim]) position[dim--] = 0;
    if (dim < 0) return chunks;
  }
}

/** How operand `op` of a chunk is addressed: contiguous from its offset, one broadcast element, or strided. */
int layout_of(const KilnStridedArgs& args, int op) {
  bool contiguous = true;
  bool broadcast = true;
  Index expected = 1;
  for (int dim = static_cast<int>(args.rank) - 1; dim >= 0; dim--) {
    if (args.strides[op][dim] != 0) broadcast = false;
    if (args.strides[op][dim] != expected) contiguous = false;
    expected *= args.shape[dim];
  }
  return contiguous ? KILN_LAYOUT_CONTIGUOUS : broadcast ? KILN_LAYOUT_BROADCAST : KILN_LAYOUT_STRIDED;
}

std::vector<Index> dense_strides(const std::vector<Index>& shape) {
  std::vector<Index> strides(shape.size(), 1);
  for (int dim = static_cast<int>(shape.size()) - 2; dim >= 0; dim--) strides[dim] = strides[dim + 1] * shape[dim + 1];
  return strides;
}

}  // namespace

std::string pipeline_key(const Dispatch& dispatch) {
  std::string key = dispatch.kernel;
  if (dispatch.constants.empty()) return key;
  key += " {";
  for (std::size_t i = 0; i < dispatch.constants.size(); i++) {
    key += (i > 0 ? ", " : "") + std::string(dispatch.constants[i].name) + "=" +
           std::to_string(dispatch.constants[i].value);
  }
  return key + "}";
}

Plan plan_unary(int op, const TensorView& x, const TensorView& out) {
  check_32_bit(x, "unary", "x");
  if (x.count == 0) return {};
  Dispatch dispatch = elementwise(std::string("unary_") + kDTypeNames[x.dtype], x.count,
                                  std::string("unary ") + kUnaryOpNames[op] + " " + describe(x));
  dispatch.constants.push_back(int_constant(KILN_FC_OP, "kUnaryOp", op));
  KilnCountArgs args{u32(x.count), 0, 0, 0};
  dispatch.bindings = {buffer_binding(0, "x", x), buffer_binding(1, "out", out),
                       bytes_binding(2, "KilnCountArgs", args)};
  return {dispatch};
}

Plan plan_binary(int op, const TensorView& a, const TensorView& b, const TensorView& out) {
  check_32_bit(a, "binary", "a");
  check_32_bit(b, "binary", "b");
  check_32_bit(out, "binary", "out");
  const std::vector<Index> out_strides = dense_strides(out.shape);
  Plan plan;
  for (const Chunk& chunk :
       strided_chunks(out.shape, {&a.strides, &b.strides, &out_strides}, {a.offset, b.offset, 0})) {
    Dispatch dispatch = elementwise(std::string("binary_") + kDTypeNames[out.dtype], chunk.count,
                                    std::string("binary ") + kBinaryOpNames[op] + " " + describe(out));
    dispatch.constants = {int_constant(KILN_FC_OP, "kBinaryOp", op),
                          int_constant(KILN_FC_LAYOUT_A, "kLayoutA", layout_of(chunk.args, 0)),
                          int_constant(KILN_FC_LAYOUT_B, "kLayoutB", layout_of(chunk.args, 1))};
    dispatch.bindings = {buffer_binding(0, "a", a), buffer_binding(1, "b", b), buffer_binding(2, "out", out),
                         bytes_binding(3, "KilnStridedArgs", chunk.args)};
    plan.push_back(std::move(dispatch));
  }
  return plan;
}

Plan plan_where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out) {
  check_32_bit(condition, "where", "condition");
  check_32_bit(a, "where", "a");
  check_32_bit(b, "where", "b");
  check_32_bit(out, "where", "out");
  const std::string kernel = std::string("where_c") + (dtype_size(condition.dtype) == 2 ? "16" : "32") + "_v" +
                             (dtype_size(out.dtype) == 2 ? "16" : "32");
  const int kind = condition.dtype == KILN_DTYPE_I32   ? KILN_CONDITION_I32
                   : condition.dtype == KILN_DTYPE_F32 ? KILN_CONDITION_F32
                                                       : KILN_CONDITION_HALF_BITS;
  Plan plan;
  for (const Chunk& chunk : strided_chunks(out.shape, {&condition.strides, &a.strides, &b.strides},
                                           {condition.offset, a.offset, b.offset})) {
    Dispatch dispatch = elementwise(kernel, chunk.count, "where " + describe(out));
    dispatch.constants = {int_constant(KILN_FC_CONDITION_KIND, "kConditionKind", kind)};
    dispatch.bindings = {buffer_binding(0, "condition", condition), buffer_binding(1, "a", a),
                         buffer_binding(2, "b", b), buffer_binding(3, "out", out),
                         bytes_binding(4, "KilnStridedArgs", chunk.args)};
    plan.push_back(std::move(dispatch));
  }
  return plan;
}

Index reduce_partial_states(Index outer, Index size, Index inner) {
  const ReduceSplit split = reduce_split(outer, size, inner);
  return split.chunks > 1 ? outer * split.chunks * inner : 0;
}

Plan plan_reduce(int op, const TensorView& x, const TensorView& out, Index outer, Index size, Index inner,
                 const TensorView* scratch) {
  check_32_bit(x, "reduce", "x");
  if (outer * inner == 0) return {};
  const std::string what = std::string("reduce ") + kReduceOpNames[op] + " " + describe(x) + " as [" +
                           std::to_string(outer) + ", " + std::to_string(size) + ", " + std::to_string(inner) + "]";
  const bool rows = reduce_by_rows(size, inner);
  const ReduceSplit split = reduce_split(outer, size, inner);
  const std::string dtype = kDTypeNames[x.dtype];
  if (split.chunks > 1) {
    if (scratch == nullptr)
      throw_invalid("reduce: the two-pass reduce needs a scratch buffer of " +
                    std::to_string(2 * outer * split.chunks * inner) + " floats");
    const KilnReduceChunkArgs args{u32(outer), u32(size), u32(inner), u32(split.chunks), u32(split.chunk_size),
                                   0,          0,         0};
    const std::string chunks =
        " (pass 1: " + std::to_string(split.chunks) + " chunks of " + std::to_string(split.chunk_size) + ")";
    Dispatch partial = elementwise((rows ? "reduce_rows_partial_" : "reduce_columns_partial_") + dtype,
                                   outer * split.chunks * inner, what + chunks);
    if (rows) partial.threadgroups = Size3{u32(split.chunks), u32(outer), 1};
    partial.constants = {int_constant(KILN_FC_OP, "kReduceOp", op)};
    partial.bindings = {buffer_binding(0, "x", x), view_binding(1, "partials", *scratch),
                        bytes_binding(2, "KilnReduceChunkArgs", args)};
    Dispatch combine = elementwise("reduce_combine_" + dtype, outer * inner,
                                   what + " (pass 2: combine " + std::to_string(split.chunks) + " chunks)");
    combine.constants = {int_constant(KILN_FC_OP, "kReduceOp", op)};
    combine.bindings = {view_binding(0, "partials", *scratch), buffer_binding(1, "out", out),
                        bytes_binding(2, "KilnReduceChunkArgs", args)};
    return {partial, combine};
  }
  Dispatch dispatch = elementwise((rows ? "reduce_rows_" : "reduce_columns_") + dtype, outer * inner, what);
  if (rows) dispatch.threadgroups = Size3{u32(outer), 1, 1};
  dispatch.constants = {int_constant(KILN_FC_OP, "kReduceOp", op)};
  KilnReduceArgs args{u32(outer), u32(size), u32(inner), 0};
  dispatch.bindings = {buffer_binding(0, "x", x), buffer_binding(1, "out", out),
                       bytes_binding(2, "KilnReduceArgs", args)};
  return {dispatch};
}

Plan plan_matmul(const TensorView& a, const TensorView& b, const TensorView& out, const MatmulShape& shape,
                 const PlanDevice& device) {
  check_32_bit(a, "matmul", "a");
  check_32_bit(b, "matmul", "b");
  check_32_bit(out, "matmul", "out");
  if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return {};
  const char* dtype = kDTypeNames[out.dtype];
  std::string kernel;
  Size3 threads;
  std::uint32_t groups_x = 0;
  std::uint32_t groups_y = 1;
  if (shape.m == 1 && !shape.transpose_b) {
    kernel = std::string("matmul_gemv_") + dtype;
    threads = Size3{KILN_THREADS, 1, 1};
    groups_x = groups_for(shape.n, KILN_THREADS);
  } else if (shape.m == 1) {
    kernel = std::string("matmul_gemv_t_") + dtype;
    threads = Size3{KILN_THREADS, 1, 1};
    groups_x = groups_for(shape.n, 8);
  } else if (device.simdgroup_matrix) {
    kernel = std::string("matmul_simdgroup_") + dtype;
    threads = Size3{128, 1, 1};
    groups_x = groups_for(shape.n, 32);
    groups_y = groups_for(shape.m, 32);
  } else {
    kernel = std::string("matmul_tiled_") + dtype;
    threads = Size3{16, 16, 1};
    groups_x = groups_for(shape.n, 16);
    groups_y = groups_for(shape.m, 16);
  }
  const std::string what = std::string("matmul ") + dtype + " batch=" + std::to_string(shape.batch) +
                           " m=" + std::to_string(shape.m) + " n=" + std::to_string(shape.n) +
                           " k=" + std::to_string(shape.k) + (shape.transpose_a ? " transA" : "") +
                           (shape.transpose_b ? " transB" : "");
  Plan plan;
  for (Index first = 0; first < shape.batch; first += kMaxBatchPerDispatch) {
    const Index batch = std::min(kMaxBatchPerDispatch, shape.batch - first);
    Dispatch dispatch;
    dispatch.kernel = kernel;
    dispatch.what = what;
    dispatch.threads = threads;
    dispatch.threadgroups = Size3{groups_x, groups_y, u32(batch)};
    dispatch.constants = {bool_constant(KILN_FC_TRANSPOSE_A, "kTransposeA", shape.transpose_a),
                          bool_constant(KILN_FC_TRANSPOSE_B, "kTransposeB", shape.transpose_b)};
    KilnMatmulArgs args{u32(shape.m),
                        u32(shape.n),
                        u32(shape.k),
                        u32(batch),
                        u32(shape.batch_stride_a),
                        u32(shape.batch_stride_b),
                        0,
                        0};
    dispatch.bindings = {buffer_binding(0, "a", a, first * shape.batch_stride_a),
                         buffer_binding(1, "b", b, first * shape.batch_stride_b),
                         buffer_binding(2, "out", out, first * shape.m * shape.n),
                         bytes_binding(3, "KilnMatmulArgs", args)};
    plan.push_back(std::move(dispatch));
  }
  return plan;
}

Plan plan_copy(const TensorView& src, const TensorView& dst) {
  check_32_bit(src, "copy", "src");
  check_32_bit(dst, "copy", "dst");
  const std::string kernel = dtype_size(src.dtype) == 2 ? "copy_strided_u16" : "copy_strided_u32";
  Plan plan;
  for (const Chunk& chunk : strided_chunks(src.shape, {&src.strides, &dst.strides}, {src.offset, dst.offset})) {
    Dispatch dispatch = elementwise(kernel, chunk.count, "copy " + describe(src));
    dispatch.bindings = {buffer_binding(0, "src", src), buffer_binding(1, "dst", dst),
                         bytes_binding(2, "KilnStridedArgs", chunk.args)};
    plan.push_back(std::move(dispatch));
  }
  return plan;
}

namespace {
Plan plan_indexing(const char* name, const std::string& kernel, const TensorView& data, const TensorView& indices,
                   const TensorView& out, Index outer, Index rows, Index inner, const std::string& what) {
  check_32_bit(data, name, "x");
  check_32_bit(out, name, "out");
  const Index total = outer * indices.count * inner;
  if (total == 0) return {};
  if (total > kMaxElements) {
    throw_invalid(std::string(name) + ": " + std::to_string(total) +
                      " elements; kiln's Metal kernels index elements with 32 bits (at most 4294967295)",
                  "Split the operation into smaller ones.");
  }
  Dispatch dispatch = elementwise(kernel, total, what);
  KilnIndexArgs args{u32(outer), u32(rows), u32(inner), u32(indices.count), u32(total), 0, 0, 0};
  dispatch.bindings = {buffer_binding(0, "x", data), buffer_binding(1, "indices", indices),
                       buffer_binding(2, "out", out), bytes_binding(3, "KilnIndexArgs", args), error_binding(4)};
  return {dispatch};
}
}  // namespace

Plan plan_gather(const TensorView& x, const TensorView& indices, const TensorView& out, Index outer, Index rows,
                 Index inner) {
  return plan_indexing("gather", dtype_size(x.dtype) == 2 ? "gather_u16" : "gather_u32", x, indices, out, outer, rows,
                       inner, "gather " + describe(x) + " by " + std::to_string(indices.count) + " indices");
}

Plan plan_scatter_add(const TensorView& source, const TensorView& indices, const TensorView& out, Index outer,
                      Index rows, Index inner) {
  check_32_bit(source, "scatterAdd", "source");
  check_32_bit(out, "scatterAdd", "out");
  if (outer * indices.count * inner == 0) return {};
  // Row ranges owned by separate threads: about kScatterThreads threads, at most one range per row.
  const Index owners = outer * inner;
  const Index wanted = std::max<Index>(1, std::min<Index>(rows, (kScatterThreads + owners - 1) / owners));
  const Index rows_per_group = rows > 0 ? (rows + wanted - 1) / wanted : 1;
  const Index groups = rows > 0 ? (rows + rows_per_group - 1) / rows_per_group : 1;
  const Index total = owners * groups;
  Dispatch dispatch = elementwise(
      std::string("scatter_add_") + kDTypeNames[source.dtype], total,
      "scatterAdd " + describe(source) + " into " + describe(out) + " (" + std::to_string(groups) + " row ranges)");
  KilnIndexArgs args{u32(outer), u32(rows),   u32(inner),          u32(indices.count),
                     u32(total), u32(groups), u32(rows_per_group), 0};
  dispatch.bindings = {buffer_binding(0, "source", source), buffer_binding(1, "indices", indices),
                       buffer_binding(2, "out", out), bytes_binding(3, "KilnIndexArgs", args), error_binding(4)};
  return {dispatch};
}

Plan plan_cast(const TensorView& x, const TensorView& out) {
  check_32_bit(x, "cast", "x");
  if (x.count == 0) return {};
  Dispatch dispatch = elementwise(std::string("cast_") + kDTypeNames[x.dtype] + "_" + kDTypeNames[out.dtype], x.count,
                                  "cast " + describe(x) + " to " + kDTypeNames[out.dtype]);
  KilnCountArgs args{u32(x.count), 0, 0, 0};
  dispatch.bindings = {buffer_binding(0, "x", x), buffer_binding(1, "out", out),
                       bytes_binding(2, "KilnCountArgs", args)};
  return {dispatch};
}

Plan plan_fill(const TensorView& out, double value) {
  check_32_bit(out, "fill", "out");
  if (out.count == 0) return {};
  Dispatch dispatch =
      elementwise(dtype_size(out.dtype) == 2 ? "fill_u16" : "fill_u32", out.count, "fill " + describe(out));
  KilnFillArgs args{u32(out.count), fill_bits(out.dtype, value), 0, 0};
  dispatch.bindings = {buffer_binding(0, "out", out), bytes_binding(1, "KilnFillArgs", args)};
  return {dispatch};
}

Plan plan_random(const TensorView& out, int kind, double a, double b, std::uint64_t seed, std::uint64_t offset) {
  check_32_bit(out, "random", "out");
  if (out.count == 0) return {};
  Dispatch dispatch =
      elementwise(std::string(kind == 0 ? "random_uniform_" : "random_normal_") + kDTypeNames[out.dtype], out.count,
                  std::string("random ") + (kind == 0 ? "uniform " : "normal ") + describe(out));
  // uniform: low and high − low in f64, as core computes them; normal: mean and std.
  const double first = a;
  const double second = kind == 0 ? b - a : b;
  std::uint64_t first_bits = 0;
  std::uint64_t second_bits = 0;
  std::memcpy(&first_bits, &first, 8);
  std::memcpy(&second_bits, &second, 8);
  KilnRandomArgs args{u32(out.count),
                      static_cast<kiln_u32>(seed),
                      static_cast<kiln_u32>(seed >> 32),
                      0,
                      static_cast<kiln_u32>(offset),
                      static_cast<kiln_u32>(offset >> 32),
                      static_cast<kiln_u32>(first_bits),
                      static_cast<kiln_u32>(first_bits >> 32),
                      static_cast<kiln_u32>(second_bits),
                      static_cast<kiln_u32>(second_bits >> 32),
                      0,
                      0};
  dispatch.bindings = {buffer_binding(0, "out", out), bytes_binding(1, "KilnRandomArgs", args)};
  return {dispatch};
}

Plan plan_copy_bytes(BufferRecord* staging, BufferRecord* target, std::size_t target_offset, std::size_t bytes) {
  if (bytes == 0) return {};
  if (bytes > static_cast<std::size_t>(kMaxElements))
    throw_invalid("upload of " + std::to_string(bytes) + " bytes: at most 4294967295 bytes per upload");
  Dispatch dispatch =
      elementwise("copy_bytes", static_cast<Index>(bytes), "upload of " + std::to_string(bytes) + " bytes (staged)");
  Binding source;
  source.index = 0;
  source.role = "staging";
  source.buffer = staging;
  Binding destination;
  destination.index = 1;
  destination.role = "target";
  destination.buffer = target;
  destination.offset_bytes = target_offset;
  KilnCountArgs args{u32(static_cast<Index>(bytes)), 0, 0, 0};
  dispatch.bindings = {source, destination, bytes_binding(2, "KilnCountArgs", args)};
  return {dispatch};
}

std::uint32_t fill_bits(int dtype, double value) {
  switch (dtype) {
    case KILN_DTYPE_F32: {
      const float rounded = double_to_f32(value);
      std::uint32_t bits;
      std::memcpy(&bits, &rounded, 4);
      return bits;
    }
    case KILN_DTYPE_F16: return double_to_f16_bits(value);
    case KILN_DTYPE_BF16: return double_to_bf16_bits(value);
    default: return static_cast<std::uint32_t>(double_to_i32(value));
  }
}

}  // namespace kiln::metal
