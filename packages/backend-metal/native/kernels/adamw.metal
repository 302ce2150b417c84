// adamw.metal — one fused AdamW step, in place (adamw_<param dtype>_<grad dtype>), and
// adamwMulti's per-tensor step (adamw_multi_<param dtype>_<grad dtype>).
//
// Algorithm: one thread per element, KILN_FUSED_THREADS per threadgroup: read p, g, m, v once,
// write p, m, v. m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²;
// p = p·(1 − lr·wd) − (lr/(1−β1^t))·m / (√v/√(1−β2^t) + eps) — the decay uses p before the update
// (decoupled, never added to g), as docs/kernel-semantics.md says. adamw_multi: the same update
// with g = grad · scale, the scale a number or a device scalar; when the guard (a device scalar)
// is NaN or ±Inf every thread returns before writing, so the step is skipped on the GPU; with
// device scalars (options.deviceScalars) the step size, 1/√(1−β2^t) and the decay are read from
// a buffer: f32 values core's adamwDeviceScalars rounds from the f64 formulas the host uses for
// KilnAdamWArgs, so both forms run the same f32 arithmetic on the same values.
// Layout: param and grad dense float tensors (their dtypes may differ); m, v f32; KilnAdamWArgs.
// Numerics: f32 arithmetic; the bias corrections and 1 − lr·wd are computed in f64 on the host
// and rounded once (MSL has no f64). m and v stored in f32, p rounded once to its dtype.
#include "kiln_metal_common.h"

/** The step's scalars: step size lr/(1−β1^t), 1/√(1−β2^t) and the decay 1 − lr·wd (f32). */
struct AdamWStepScalars {
  float step_size;
  float inverse_root_correction;
  float decay;
};

/** The update of element i from gradient g (f32). */
template <typename P>
inline void adamw_element(device P* param, device float* m, device float* v, constant KilnAdamWArgs& args,
                          AdamWStepScalars step, uint i, float g) {
  const float first = args.beta1 * m[i] + args.one_minus_beta1 * g;
  const float second = args.beta2 * v[i] + args.one_minus_beta2 * (g * g);
  m[i] = first;
  v[i] = second;
  const float decayed = Storage<P>::load(param[i]) * step.decay;
  param[i] =
      Storage<P>::store(decayed - step.step_size * first / (sqrt(second) * step.inverse_root_correction + args.eps));
}

template <typename P, typename G>
kernel void adamw(device P* param [[buffer(0)]], device const G* grad [[buffer(1)]], device float* m [[buffer(2)]],
                  device float* v [[buffer(3)]], constant KilnAdamWArgs& args [[buffer(4)]],
                  uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  const AdamWStepScalars step = {args.step_size, args.inverse_root_correction, args.decay};
  adamw_element<P>(param, m, v, args, step, gid, Storage<G>::load(grad[gid]));
}

/**
 * adamwMulti, one dispatch per tensor: g = grad · scale (f32), nothing written when the guard is NaN
 * or ±Inf; with control.scalars_from_buffer the step size, bias correction and this tensor's decay
 * come from `scalars` (rewritten between steps without re-encoding: a captured step reads new values).
 */
template <typename P, typename G>
kernel void adamw_multi(device P* param [[buffer(0)]], device const G* grad [[buffer(1)]],
                        device float* m [[buffer(2)]], device float* v [[buffer(3)]],
                        constant KilnAdamWArgs& args [[buffer(4)]], device const float* scale [[buffer(5)]],
                        device const float* guard [[buffer(6)]], constant KilnAdamWMultiControl& control [[buffer(7)]],
                        device const float* scalars [[buffer(8)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.count) return;
  if (control.guarded != 0u) {
    const float value = guard[0];
    if (!(value - value == 0.0f)) return;
  }
  const float factor = control.scale_from_buffer != 0u ? scale[0] : control.scale;
  const AdamWStepScalars step = control.scalars_from_buffer != 0u
                                    ? AdamWStepScalars{scalars[0], scalars[1], scalars[2u + control.decay_slot]}
                                    : AdamWStepScalars{args.step_size, args.inverse_root_correction, args.decay};
  adamw_element<P>(param, m, v, args, step, gid, Storage<G>::load(grad[gid]) * factor);
}

template [[host_name("adamw_f32_f32")]] kernel decltype(adamw<float, float>) adamw<float, float>;
template [[host_name("adamw_f32_f16")]] kernel decltype(adamw<float, half>) adamw<float, half>;
template [[host_name("adamw_f32_bf16")]] kernel decltype(adamw<float, bf16>) adamw<float, bf16>;
template [[host_name("adamw_f16_f32")]] kernel decltype(adamw<half, float>) adamw<half, float>;
template [[host_name("adamw_f16_f16")]] kernel decltype(adamw<half, half>) adamw<half, half>;
template [[host_name("adamw_f16_bf16")]] kernel decltype(adamw<half, bf16>) adamw<half, bf16>;
template [[host_name("adamw_bf16_f32")]] kernel decltype(adamw<bf16, float>) adamw<bf16, float>;
template [[host_name("adamw_bf16_f16")]] kernel decltype(adamw<bf16, half>) adamw<bf16, half>;
template [[host_name("adamw_bf16_bf16")]] kernel decltype(adamw<bf16, bf16>) adamw<bf16, bf16>;
template [[host_name("adamw_multi_f32_f32")]] kernel decltype(adamw_multi<float, float>) adamw_multi<float, float>;
template [[host_name("adamw_multi_f32_f16")]] kernel decltype(adamw_multi<float, half>) adamw_multi<float, half>;
template [[host_name("adamw_multi_f32_bf16")]] kernel decltype(adamw_multi<float, bf16>) adamw_multi<float, bf16>;
template [[host_name("adamw_multi_f16_f32")]] kernel decltype(adamw_multi<half, float>) adamw_multi<half, float>;
template [[host_name("adamw_multi_f16_f16")]] kernel decltype(adamw_multi<half, half>) adamw_multi<half, half>;
template [[host_name("adamw_multi_f16_bf16")]] kernel decltype(adamw_multi<half, bf16>) adamw_multi<half, bf16>;
template [[host_name("adamw_multi_bf16_f32")]] kernel decltype(adamw_multi<bf16, float>) adamw_multi<bf16, float>;
template [[host_name("adamw_multi_bf16_f16")]] kernel decltype(adamw_multi<bf16, half>) adamw_multi<bf16, half>;
template [[host_name("adamw_multi_bf16_bf16")]] kernel decltype(adamw_multi<bf16, bf16>) adamw_multi<bf16, bf16>;
