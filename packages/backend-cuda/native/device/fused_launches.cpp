// device/fused_launches.cpp — the fused, multi-tensor and flash-attention kernels on CudaDevice:
// build each launcher's arguments (AdamW scalars in f64 rounded once, multi-tensor launch tables,
// the attention problem), take scratch from the pool for the call (two-pass sums, rmsNormBackward's
// column partials, attention's Δ), launch and check. The flash-attention kernels' own limits
// (head dim ≤ 128, T ≤ 2³⁰, grid sizes) are checked here, before anything is launched. Attention
// and rope read either layout (heads-major [B, H, T, D] or tokens-major [B, T, H, D]).
#include <cmath>
#include <vector>

#include "../kernels/adamw.cuh"
#include "../kernels/attention_backward.cuh"
#include "../kernels/attention_forward.cuh"
#include "../kernels/cross_entropy.cuh"
#include "../kernels/multi_tensor.cuh"
#include "../kernels/norm.cuh"
#include "../kernels/rope.cuh"
#include "../kernels/softmax.cuh"
#include "../kernels/swiglu.cuh"
#include "cuda_device.h"
#include "kiln/op_names.h"

namespace kiln {
namespace {

/** Most blocks a 1-D grid may have. */
constexpr Index kMaxGridBlocks = 0x7fffffffLL;

float* f32_pointer(const TensorView& tensor) { return static_cast<float*>(tensor.base()); }

/** Bytes of tensor x. */
double tensor_bytes(const TensorView& x) { return static_cast<double>(x.count) * dtype_bytes(x.dtype); }

/** Profile work of a launch that reads or writes `passes` tensors like `x`. */
LaunchWork tensor_passes(const TensorView& x, double passes) {
  return LaunchWork{passes * static_cast<double>(x.count) * dtype_bytes(x.dtype), 0};
}

std::string rows_text(const char* kernel, const TensorView& x, Index rows, Index cols) {
  return std::string(kernel) + " " + describe(x) + " as [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

/** AdamW's scalars from f64 hyper-parameters, rounded once; `decay` is 1 − lr · weight decay. */
AdamWScalars adamw_scalars(const AdamWHyper& hyper, double weight_decay) {
  AdamWScalars scalars{};
  scalars.beta1 = static_cast<float>(hyper.beta1);
  scalars.one_minus_beta1 = static_cast<float>(1.0 - hyper.beta1);
  scalars.beta2 = static_cast<float>(hyper.beta2);
  scalars.one_minus_beta2 = static_cast<float>(1.0 - hyper.beta2);
  scalars.decay = static_cast<float>(1.0 - hyper.lr * weight_decay);
  scalars.step_size = static_cast<float>(hyper.lr / (1.0 - std::pow(hyper.beta1, hyper.step)));
  scalars.inverse_root_correction = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(hyper.beta2, hyper.step)));
  scalars.eps = static_cast<float>(hyper.eps);
  return scalars;
}

/** The tables of consecutive launches covering `count` tensors; `fill` sets entry fields of tensor i. */
template <typename Fill>
std::vector<MultiTensorTable> build_tables(std::size_t count, const std::vector<Index>& elements, Fill&& fill) {
  std::vector<MultiTensorTable> tables;
  for (std::size_t first = 0; first < count; first += kMultiTensorsPerLaunch) {
    MultiTensorTable table{};
    table.block_start[0] = 0;
    for (std::size_t i = first; i < count && i < first + kMultiTensorsPerLaunch; i++) {
      const int slot = table.count++;
      fill(table.entries[slot], i);
      table.entries[slot].count = elements[i];
      table.block_start[slot + 1] = table.block_start[slot] + multi_tensor_blocks(elements[i]);
    }
    tables.push_back(table);
  }
  return tables;
}

/** Profile work of one launch: bytes read plus written by the tensors of `table` (per element: `per_element` for each entry). */
template <typename BytesPerElement>
LaunchWork table_work(const MultiTensorTable& table, BytesPerElement per_element) {
  double bytes = 0;
  for (int i = 0; i < table.count; i++)
    bytes += static_cast<double>(table.entries[i].count) * per_element(table.entries[i]);
  return LaunchWork{bytes, 0};
}

/** The attention problem of checked inputs, after the kernels' own limits (head dim, lengths, grid). */
AttentionProblem attention_problem(const char* kernel, const AttentionInputs& inputs) {
  // The logical [B, H, T, D] sizes (tokens-major tensors are [B, T, H, D]).
  const std::vector<Index>& q = inputs.q_sizes;
  const std::vector<Index>& k = inputs.k_sizes;
  const std::string what = std::string(kernel) + ": q " + describe(inputs.q) + ", k " + describe(inputs.k) +
                           (inputs.tokens_major ? " (tokens-major)" : "");
  if (q[3] > KILN_ATTENTION_MAX_HEAD_DIM) {
    throw_invalid(what + ": head dimension " + std::to_string(q[3]) +
                      " exceeds the flash-attention kernels' limit of " + std::to_string(KILN_ATTENTION_MAX_HEAD_DIM),
                  "Use head dims up to 128, or let core compose attention from matmuls (CudaBackend does so by itself "
                  "above the limit).");
  }
  for (const auto& [size, name] : {std::pair{q[2], "Tq"}, std::pair{k[2], "Tk"}}) {
    if (size > static_cast<Index>(KILN_ATTENTION_MAX_LENGTH))
      throw_invalid(what + ": " + name + " = " + std::to_string(size) +
                    " exceeds the flash-attention kernels' limit of 2^30 positions");
  }
  for (const Index size : {q[0], q[1]}) {
    if (size > kMaxGridBlocks) throw_invalid(what + ": batch and head counts must be below 2^31");
  }
  const double query_blocks =
      std::ceil(static_cast<double>(q[2]) / 64.0) * static_cast<double>(q[0]) * static_cast<double>(q[1]);
  const double key_blocks =
      std::ceil(static_cast<double>(k[2]) / 64.0) * static_cast<double>(k[0]) * static_cast<double>(k[1]);
  if (query_blocks > static_cast<double>(kMaxGridBlocks) || key_blocks > static_cast<double>(kMaxGridBlocks)) {
    throw_invalid(what + ": needs more than 2^31 - 1 thread blocks (B · H · ⌈T / 64⌉)",
                  "Split the batch into several calls.");
  }
  AttentionProblem problem{};
  problem.tokens_major = inputs.tokens_major;
  problem.batch = static_cast<int>(q[0]);
  problem.heads_q = static_cast<int>(q[1]);
  problem.heads_kv = static_cast<int>(k[1]);
  problem.length_q = static_cast<int>(q[2]);
  problem.length_k = static_cast<int>(k[2]);
  problem.head_dim = static_cast<int>(q[3]);
  problem.scale = static_cast<float>(inputs.scale);
  problem.causal = inputs.causal;
  if (inputs.mask) {
    problem.mask = static_cast<const float*>(inputs.mask->base());
    for (int dim = 0; dim < 4; dim++) problem.mask_strides[dim] = inputs.mask->strides[dim];
    problem.mask_offset = inputs.mask->offset;
  }
  return problem;
}

/** Profile work of the forward: 4·B·Hq·Tq·Tk·D flops (half of it when causal); the backward does 2.5× that. */
LaunchWork attention_work(const AttentionProblem& problem, double factor) {
  const double flops = 4.0 * static_cast<double>(problem.batch) * static_cast<double>(problem.heads_q) *
                       static_cast<double>(problem.length_q) * static_cast<double>(problem.length_k) *
                       static_cast<double>(problem.head_dim) * (problem.causal ? 0.5 : 1.0);
  return LaunchWork{0, flops * factor};
}

}  // namespace

void CudaDevice::softmax(Napi::Env, const SoftmaxCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_softmax(device.launch_context(), call.log ? kLogSoftmax : kSoftmax, call.x.dtype,
                                     call.x.base(), call.out.base(), call.rows, call.cols),
                      rows_text(call.log ? "logSoftmax" : "softmax", call.x, call.rows, call.cols),
                      tensor_passes(call.x, 2));
}

void CudaDevice::softmax_backward(Napi::Env, const SoftmaxBackwardCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_softmax_backward(device.launch_context(), call.y.dtype, call.y.base(), call.dy.base(),
                                              call.dx.base(), call.rows, call.cols),
                      rows_text("softmaxBackward", call.y, call.rows, call.cols), tensor_passes(call.y, 3));
}

/** The profile's name of an rmsNorm launch; the mixed-precision form adds `role` and its 16-bit dtype ("to bf16", "with dy bf16"). */
std::string norm_text(const char* kernel, const TensorView& x, const TensorView& half, const char* role, Index rows,
                      Index cols) {
  if (half.dtype == x.dtype) return rows_text(kernel, x, rows, cols);
  return std::string(kernel) + " " + describe(x) + " " + role + " " + kDTypeNames[half.dtype] + " as [" +
         std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

void CudaDevice::rms_norm(Napi::Env, const RmsNormCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(
      launch_rms_norm(device.launch_context(), call.x.dtype, call.out.dtype, call.x.base(), call.weight.base(),
                      call.out.base(), f32_pointer(call.rstd), call.rows, call.cols, call.eps),
      norm_text("rmsNorm", call.x, call.out, "to", call.rows, call.cols),
      LaunchWork{tensor_bytes(call.x) + tensor_bytes(call.out), 0});
}

void CudaDevice::rms_norm_backward(Napi::Env, const RmsNormBackwardCall& call) {
  DeviceContext& device = *context_;
  const Index chunks = rms_norm_backward_chunks(call.rows, call.cols);
  ScratchBuffer scratch(device.pool(), chunks > 1 ? static_cast<std::size_t>(chunks * call.cols) * sizeof(float) : 0);
  device.after_launch(
      launch_rms_norm_backward(device.launch_context(), call.x.dtype, call.dy.dtype, call.x.base(), call.weight.base(),
                               f32_pointer(call.rstd), call.dy.base(), call.dx.base(), f32_pointer(call.d_weight),
                               static_cast<float*>(scratch.get()), call.rows, call.cols),
      norm_text("rmsNormBackward", call.x, call.dy, "with dy", call.rows, call.cols),
      LaunchWork{tensor_bytes(call.x) + tensor_bytes(call.dy) + tensor_bytes(call.dx), 0});
}

void CudaDevice::layer_norm_backward(Napi::Env, const LayerNormBackwardCall& call) {
  DeviceContext& device = *context_;
  const Index floats = layer_norm_backward_scratch_floats(call.rows, call.cols);
  ScratchBuffer scratch(device.pool(), static_cast<std::size_t>(floats) * sizeof(float));
  device.after_launch(launch_layer_norm_backward(device.launch_context(), call.x.dtype, call.dy.dtype, call.x.base(),
                                                 call.weight.base(), call.dy.base(), call.dx.base(),
                                                 f32_pointer(call.d_weight), f32_pointer(call.d_bias),
                                                 static_cast<float*>(scratch.get()), call.rows, call.cols, call.eps),
                      norm_text("layerNormBackward", call.x, call.dy, "with dy", call.rows, call.cols),
                      LaunchWork{tensor_bytes(call.x) + tensor_bytes(call.dy) + tensor_bytes(call.dx), 0});
}

void CudaDevice::layer_norm(Napi::Env, const LayerNormCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(
      launch_layer_norm(device.launch_context(), call.x.dtype, call.out.dtype, call.x.base(), call.weight.base(),
                        call.bias.base(), call.out.base(), call.rows, call.cols, call.eps),
      norm_text("layerNorm", call.x, call.out, "to", call.rows, call.cols),
      LaunchWork{tensor_bytes(call.x) + tensor_bytes(call.out), 0});
}

void CudaDevice::rope(Napi::Env, const RopeCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(
      launch_rope(device.launch_context(), call.x.dtype, call.x.base(), call.out.base(), call.rows, call.positions,
                  call.dim, static_cast<double>(call.offset), call.theta, call.inverse, call.heads),
      std::string("rope ") + describe(call.x) + (call.inverse ? " inverse" : "") +
          (call.tokens_major ? " tokens-major" : ""),
      tensor_passes(call.x, 2));
}

void CudaDevice::swiglu(Napi::Env, const SwigluCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_swiglu(device.launch_context(), call.gate.dtype, call.gate.base(), call.up.base(),
                                    call.out.base(), call.gate.count),
                      std::string("swiglu ") + describe(call.gate), tensor_passes(call.gate, 3));
}

void CudaDevice::swiglu_backward(Napi::Env, const SwigluBackwardCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_swiglu_backward(device.launch_context(), call.gate.dtype, call.gate.base(), call.up.base(),
                                             call.dy.base(), call.d_gate.base(), call.d_up.base(), call.gate.count),
                      std::string("swigluBackward ") + describe(call.gate), tensor_passes(call.gate, 5));
}

void CudaDevice::cross_entropy(Napi::Env, const CrossEntropyCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_cross_entropy(device.launch_context(), call.logits.dtype, call.logits.base(),
                                           static_cast<const std::int32_t*>(call.targets.base()),
                                           f32_pointer(call.loss), call.rows, call.classes, call.ignore_index),
                      rows_text("crossEntropy", call.logits, call.rows, call.classes), tensor_passes(call.logits, 1));
}

void CudaDevice::cross_entropy_backward(Napi::Env, const CrossEntropyBackwardCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(
      launch_cross_entropy_backward(device.launch_context(), call.logits.dtype, call.logits.base(),
                                    static_cast<const std::int32_t*>(call.targets.base()), call.d_logits.base(),
                                    call.rows, call.classes, call.ignore_index, call.scale),
      rows_text("crossEntropyBackward", call.logits, call.rows, call.classes), tensor_passes(call.logits, 2));
}

void CudaDevice::adamw(Napi::Env, const AdamWCall& call) {
  DeviceContext& device = *context_;
  const TensorView& param = call.param;
  device.after_launch(
      launch_adamw(device.launch_context(), param.dtype, param.base(), call.grad.dtype, call.grad.base(),
                   f32_pointer(call.m), f32_pointer(call.v), param.count,
                   adamw_scalars(call.hyper, call.hyper.weight_decay)),
      std::string("adamw ") + describe(param) + " step " + std::to_string(static_cast<long long>(call.hyper.step)),
      LaunchWork{
          static_cast<double>(param.count) * (2.0 * dtype_bytes(param.dtype) + dtype_bytes(call.grad.dtype) + 16.0),
          0});
}

void CudaDevice::sum_of_squares_multi(Napi::Env, const SumOfSquaresMultiCall& call) {
  DeviceContext& device = *context_;
  std::vector<Index> elements;
  Index partial_count = 0;
  for (const TensorView& tensor : call.tensors) {
    elements.push_back(tensor.count);
    partial_count += multi_tensor_blocks(tensor.count);
  }
  const std::vector<MultiTensorTable> tables =
      build_tables(call.tensors.size(), elements, [&](MultiTensorEntry& entry, std::size_t i) {
        entry.grad = call.tensors[i].base();
        entry.grad_dtype = call.tensors[i].dtype;
      });
  ScratchBuffer scratch(device.pool(), static_cast<std::size_t>(partial_count) * sizeof(float));
  float* partials = static_cast<float*>(scratch.get());
  const std::string description = "sumOfSquaresMulti of " + std::to_string(call.tensors.size()) + " tensors";
  const LaunchContext launch = device.launch_context();
  Index first_partial = 0;
  for (const MultiTensorTable& table : tables) {
    device.after_launch(launch_sum_of_squares_chunks(launch, table, partials, first_partial), description,
                        table_work(table, [](const MultiTensorEntry& entry) {
                          return static_cast<double>(dtype_bytes(entry.grad_dtype));
                        }));
    first_partial += table.block_start[table.count];
  }
  device.after_launch(launch_sum_of_squares_total(launch, partials, partial_count, f32_pointer(call.out)), description);
}

void CudaDevice::adamw_multi(Napi::Env, const AdamWMultiCall& call) {
  DeviceContext& device = *context_;
  const std::size_t count = call.params.size();
  MultiAdamWControl control{};
  control.scale = call.scale;
  control.scale_pointer = call.scale_tensor ? f32_pointer(*call.scale_tensor) : nullptr;
  control.guard_pointer = call.guard ? f32_pointer(*call.guard) : nullptr;
  control.scalars_pointer = call.device_scalars ? f32_pointer(*call.device_scalars) : nullptr;
  std::vector<Index> elements;
  std::vector<float> decay_factors;
  for (std::size_t i = 0; i < count; i++) {
    elements.push_back(call.params[i].count);
    decay_factors.push_back(static_cast<float>(1.0 - call.hyper.lr * call.weight_decays[i]));
  }
  const AdamWScalars scalars = adamw_scalars(call.hyper, 0);
  const std::vector<MultiTensorTable> tables =
      build_tables(count, elements, [&](MultiTensorEntry& entry, std::size_t i) {
        entry.param = call.params[i].base();
        entry.param_dtype = call.params[i].dtype;
        entry.grad = call.grads[i].base();
        entry.grad_dtype = call.grads[i].dtype;
        entry.m = f32_pointer(call.ms[i]);
        entry.v = f32_pointer(call.vs[i]);
        entry.decay = decay_factors[i];
        entry.slot = static_cast<int>(i);
      });
  const std::string description = "adamwMulti of " + std::to_string(count) + " tensors, step " +
                                  std::to_string(static_cast<long long>(call.hyper.step));
  const LaunchContext launch = device.launch_context();
  // Per element: the param read and written, the gradient read, m and v (f32) read and written.
  const auto adamw_bytes = [](const MultiTensorEntry& entry) {
    return 2.0 * dtype_bytes(entry.param_dtype) + dtype_bytes(entry.grad_dtype) + 16.0;
  };
  for (const MultiTensorTable& table : tables)
    device.after_launch(launch_adamw_multi(launch, table, scalars, control), description,
                        table_work(table, adamw_bytes));
}

void CudaDevice::attention(Napi::Env, const AttentionCall& call) {
  DeviceContext& device = *context_;
  const AttentionProblem problem = attention_problem("attention", call.inputs);
  const AttentionForwardTensors tensors{call.inputs.q.base(), call.inputs.k.base(), call.inputs.v.base(),
                                        call.out.base(), f32_pointer(call.lse)};
  const char* kernel = nullptr;
  const cudaError_t launched =
      launch_attention_forward(device.launch_context(), call.inputs.q.dtype, problem, tensors, kernel);
  // The kernel's name closes the description, so profiles and the kernel timer tell the variants apart.
  device.after_launch(launched,
                      describe_attention("attention", call.inputs) +
                          (kernel != nullptr ? std::string(" (") + kernel + ")" : std::string()),
                      attention_work(problem, 1.0));
}

void CudaDevice::attention_backward(Napi::Env, const AttentionBackwardCall& call) {
  DeviceContext& device = *context_;
  const char* kernel = "attentionBackward";
  const AttentionProblem problem = attention_problem(kernel, call.inputs);
  ScratchBuffer delta(device.pool(),
                      static_cast<std::size_t>(attention_backward_scratch_floats(problem)) * sizeof(float));
  const AttentionBackwardTensors tensors{call.inputs.q.base(),
                                         call.inputs.k.base(),
                                         call.inputs.v.base(),
                                         call.out.base(),
                                         static_cast<const float*>(call.lse.base()),
                                         call.d_out.base(),
                                         call.dq.base(),
                                         call.dk.base(),
                                         call.dv.base(),
                                         static_cast<float*>(delta.get())};
  AttentionBackwardKernels kernels;
  const cudaError_t launched =
      launch_attention_backward(device.launch_context(), call.inputs.q.dtype, problem, tensors, kernels);
  std::string launched_names;
  for (const char* name : {kernels.key_value, kernels.query}) {
    if (name != nullptr) launched_names += (launched_names.empty() ? "" : " + ") + std::string(name);
  }
  device.after_launch(
      launched,
      describe_attention(kernel, call.inputs) + (launched_names.empty() ? std::string() : " (" + launched_names + ")"),
      attention_work(problem, 2.5));
}

}  // namespace kiln
