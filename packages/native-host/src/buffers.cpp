#include "kiln/buffers.h"

#include "kiln/op_names.h"

namespace kiln {

std::string shape_text(const std::vector<Index>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); i++) text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string describe(const TensorView& view) {
  return std::string(kDTypeNames[view.dtype]) + " " + shape_text(view.shape);
}

}  // namespace kiln
