// runtime/layout.h — turns views of any rank into the StridedOperands kernels take: drops size-1
// dims, merges dims that are contiguous in every operand, and splits what is left into chunks
// of at most kMaxRank dims (the host loops over any outer rest, one launch per outer index).
// Layout: shapes and strides in elements, row-major; the linear index of a chunk's element
// is chunk_start + its linear index within the chunk (so a contiguous output follows along).
#pragma once

#include <array>
#include <vector>

#include "../kernels/common.cuh"

namespace kiln {

/** Calls launch(layout, count, chunk_start) for every chunk of the views (nothing for an empty shape). */
template <int Operands, typename Launch>
void for_each_chunk(const std::vector<Index>& shape, const std::array<const std::vector<Index>*, Operands>& strides,
                    const std::array<Index, Operands>& offsets, Launch&& launch) {
  std::vector<Index> sizes;
  std::array<std::vector<Index>, Operands> steps;
  for (std::size_t dim = 0; dim < shape.size(); dim++) {
    if (shape[dim] == 0) return;
    if (shape[dim] == 1) continue;
    const bool mergeable = !sizes.empty() && [&] {
      for (int operand = 0; operand < Operands; operand++) {
        if (steps[operand].back() != (*strides[operand])[dim] * shape[dim]) return false;
      }
      return true;
    }();
    if (mergeable) {
      sizes.back() *= shape[dim];
      for (int operand = 0; operand < Operands; operand++) steps[operand].back() = (*strides[operand])[dim];
    } else {
      sizes.push_back(shape[dim]);
      for (int operand = 0; operand < Operands; operand++) steps[operand].push_back((*strides[operand])[dim]);
    }
  }
  const int rank = static_cast<int>(sizes.size());
  const int outer_rank = rank > kMaxRank ? rank - kMaxRank : 0;
  StridedOperands<Operands> layout{};
  layout.rank = rank - outer_rank;
  Index inner_count = 1;
  for (int dim = 0; dim < layout.rank; dim++) {
    layout.shape[dim] = sizes[outer_rank + dim];
    inner_count *= layout.shape[dim];
    for (int operand = 0; operand < Operands; operand++)
      layout.strides[operand][dim] = steps[operand][outer_rank + dim];
  }
  std::vector<Index> position(static_cast<std::size_t>(outer_rank), 0);
  Index chunk_start = 0;
  for (;;) {
    for (int operand = 0; operand < Operands; operand++) {
      Index offset = offsets[operand];
      for (int dim = 0; dim < outer_rank; dim++) offset += position[dim] * steps[operand][dim];
      layout.offsets[operand] = offset;
    }
    launch(layout, inner_count, chunk_start);
    chunk_start += inner_count;
    int dim = outer_rank - 1;
    while (dim >= 0 && ++position[dim] == sizes[dim]) position[dim--] = 0;
    if (dim < 0) return;
  }
}

}  // namespace kiln
