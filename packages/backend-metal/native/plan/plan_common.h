// plan/plan_common.h — what every dispatch-plan file shares (dispatch_plan.cpp,
// dispatch_plan_fused.cpp, dispatch_plan_attention.cpp): the 32-bit element-index limit of kiln's
// Metal kernels, and the buffer / argument-struct /
// error-record bindings a Dispatch carries.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/native_error.h"
#include "dispatch_plan.h"

namespace kiln::metal::plan_common {

/** Kernels index elements with 32 bits: at most 2³² − 1 elements per tensor. */
constexpr Index kMaxElements = 0xffffffffLL;

/** A count or index as the 32-bit value the kernels read (callers checked it fits). */
inline std::uint32_t u32(Index value) { return static_cast<std::uint32_t>(value); }

/** Throws InvalidArgument unless every element the view reaches has a 32-bit index. */
inline void check_32_bit(
    const TensorView& view, const char* kernel, const char* role,
    const char* hint =
        "Split the tensor into smaller ones (a Metal buffer this large is also beyond most Macs' working set).") {
  if (view.count == 0) return;
  Index highest = view.offset;
  for (std::size_t dim = 0; dim < view.shape.size(); dim++) {
    if (view.strides[dim] > 0) highest += view.strides[dim] * (view.shape[dim] - 1);
  }
  if (view.count > kMaxElements || highest > kMaxElements - 1) {
    throw NativeError(ErrorKind::kInvalidArgument,
                      std::string("metal backend: ") + kernel + ": " + role + " " + describe(view) +
                          " reaches element " + std::to_string(highest) +
                          "; kiln's Metal kernels index elements with 32 bits (at most 4294967295 elements per tensor)",
                      hint);
  }
}

/** An argument struct passed by value (setBytes) at [[buffer(index)]]. */
template <typename Args>
Binding bytes_binding(int index, const char* type, const Args& args) {
  Binding binding;
  binding.index = index;
  binding.role = "args";
  binding.bytes_type = type;
  binding.bytes.resize(sizeof(Args));
  std::memcpy(binding.bytes.data(), &args, sizeof(Args));
  return binding;
}

/** The view's buffer at [[buffer(index)]], bound `element_offset` elements in (0: the kernel adds the offset itself). */
inline Binding buffer_binding(int index, const char* role, const TensorView& view, Index element_offset = 0) {
  Binding binding;
  binding.index = index;
  binding.role = role;
  binding.buffer = view.buffer;
  binding.offset_bytes = static_cast<std::size_t>(element_offset * dtype_size(view.dtype));
  return binding;
}

/** A dense view bound at its own offset: the kernel indexes from element 0. */
inline Binding view_binding(int index, const char* role, const TensorView& view) {
  return buffer_binding(index, role, view, view.offset);
}

/** The backend's device error record (out-of-range indices) at [[buffer(index)]]. */
inline Binding error_binding(int index) {
  Binding binding;
  binding.index = index;
  binding.role = "errors";
  binding.error_record = true;
  return binding;
}

}  // namespace kiln::metal::plan_common
