// kiln/call_readers.h — reading each kernel method's arguments from JavaScript into its call
// struct (kiln/kernel_calls.h), with the checks every backend needs: buffers live and owned, views
// inside their buffers, element counts and shapes consistent, the dtypes the kernel family takes,
// finite scalars. Argument order of each method: core's native-backend/native-methods.ts. Checks a
// backend adds for its own kernels (dtype combinations, size limits) live in its device.
#pragma once

#include <napi.h>

#include "kernel_calls.h"

namespace kiln {

UnaryCall read_unary(BufferTable& buffers, const Napi::CallbackInfo& info);
BinaryCall read_binary(BufferTable& buffers, const Napi::CallbackInfo& info);
WhereCall read_where(BufferTable& buffers, const Napi::CallbackInfo& info);
ReduceCall read_reduce(BufferTable& buffers, const Napi::CallbackInfo& info);
MatmulCall read_matmul(BufferTable& buffers, const Napi::CallbackInfo& info);
CopyCall read_copy(BufferTable& buffers, const Napi::CallbackInfo& info);
IndexCall read_gather(BufferTable& buffers, const Napi::CallbackInfo& info);
IndexCall read_scatter_add(BufferTable& buffers, const Napi::CallbackInfo& info);
CastCall read_cast(BufferTable& buffers, const Napi::CallbackInfo& info);
FillCall read_fill(BufferTable& buffers, const Napi::CallbackInfo& info);
RandomCall read_random(BufferTable& buffers, const Napi::CallbackInfo& info);
SoftmaxCall read_softmax(BufferTable& buffers, const Napi::CallbackInfo& info, bool log);
SoftmaxBackwardCall read_softmax_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
RmsNormCall read_rms_norm(BufferTable& buffers, const Napi::CallbackInfo& info);
RmsNormBackwardCall read_rms_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
/** layerNormBackward's arguments (x, weight, dy, dx of one float dtype; dWeight, dBias f32 [cols]). */
LayerNormBackwardCall read_layer_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
/** layerNorm's arguments in the mixed-precision form: x, weight, bias f32, out f16 or bf16. */
LayerNormCall read_mixed_precision_layer_norm(BufferTable& buffers, const Napi::CallbackInfo& info);
/** layerNormBackward's arguments in the mixed-precision form: x, weight, dx f32, dy f16 or bf16. */
LayerNormBackwardCall read_mixed_precision_layer_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
/** rmsNorm's arguments in the mixed-precision form (capabilities.mixedPrecisionNorm): x, weight f32, out f16 or bf16. */
RmsNormCall read_mixed_precision_rms_norm(BufferTable& buffers, const Napi::CallbackInfo& info);
/** rmsNormBackward's arguments in the mixed-precision form: x, weight, dx f32, dy f16 or bf16. */
RmsNormBackwardCall read_mixed_precision_rms_norm_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
LayerNormCall read_layer_norm(BufferTable& buffers, const Napi::CallbackInfo& info);
RopeCall read_rope(BufferTable& buffers, const Napi::CallbackInfo& info);
SwigluCall read_swiglu(BufferTable& buffers, const Napi::CallbackInfo& info);
SwigluBackwardCall read_swiglu_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
CrossEntropyCall read_cross_entropy(BufferTable& buffers, const Napi::CallbackInfo& info);
CrossEntropyBackwardCall read_cross_entropy_backward(BufferTable& buffers, const Napi::CallbackInfo& info);
AdamWCall read_adamw(BufferTable& buffers, const Napi::CallbackInfo& info);
SumOfSquaresMultiCall read_sum_of_squares_multi(BufferTable& buffers, const Napi::CallbackInfo& info);
AdamWMultiCall read_adamw_multi(BufferTable& buffers, const Napi::CallbackInfo& info);
AttentionCall read_attention(BufferTable& buffers, const Napi::CallbackInfo& info);
AttentionBackwardCall read_attention_backward(BufferTable& buffers, const Napi::CallbackInfo& info);

}  // namespace kiln
