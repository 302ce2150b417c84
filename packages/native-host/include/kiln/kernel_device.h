// kiln/kernel_device.h — the device interface behind the shared host: what a GPU backend
// implements so kiln's Backend class (kiln/backend_object.h) can run on it. The host reads and
// checks every argument, owns the buffer table and answers the storage calls; the device owns the
// memory pool, queues uploads, downloads and kernels in stream order, reports memory and its
// facts, and holds the error state of work in flight. A new native backend writes one of these
// (plus its kernels); CUDA's is backend-cuda/native/device/cuda_device.h, Metal's backend-metal/native/host/metal_kernel_device.h.
#pragma once

#include <napi.h>

#include "buffer_pool.h"
#include "kernel_calls.h"

/** Every kernel method of a KernelDevice as X(method, CallStruct): the one list the interface and its implementations expand. */
#define KILN_KERNEL_DEVICE_CALLS(X)                   \
  X(unary, UnaryCall)                                 \
  X(binary, BinaryCall)                               \
  X(where, WhereCall)                                 \
  X(reduce, ReduceCall)                               \
  X(matmul, MatmulCall)                               \
  X(copy, CopyCall)                                   \
  X(gather, IndexCall)                                \
  X(scatter_add, IndexCall)                           \
  X(cast, CastCall)                                   \
  X(fill, FillCall)                                   \
  X(random, RandomCall)                               \
  X(softmax, SoftmaxCall)                             \
  X(softmax_backward, SoftmaxBackwardCall)            \
  X(rms_norm, RmsNormCall)                            \
  X(rms_norm_backward, RmsNormBackwardCall)           \
  X(layer_norm, LayerNormCall)                        \
  X(rope, RopeCall)                                   \
  X(swiglu, SwigluCall)                               \
  X(swiglu_backward, SwigluBackwardCall)              \
  X(cross_entropy, CrossEntropyCall)                  \
  X(cross_entropy_backward, CrossEntropyBackwardCall) \
  X(adamw, AdamWCall)                                 \
  X(sum_of_squares_multi, SumOfSquaresMultiCall)      \
  X(adamw_multi, AdamWMultiCall)                      \
  X(attention, AttentionCall)                         \
  X(attention_backward, AttentionBackwardCall)

#define KILN_KERNEL_DEVICE_PURE(method, Call) virtual void method(Napi::Env env, const Call& call) = 0;
#define KILN_KERNEL_DEVICE_OVERRIDE(method, Call) void method(Napi::Env env, const Call& call) override;
/** Declares every kernel method of KernelDevice as an override (in a device class). */
#define KILN_KERNEL_DEVICE_KERNELS KILN_KERNEL_DEVICE_CALLS(KILN_KERNEL_DEVICE_OVERRIDE)
/** Declares the storage methods every device implements as overrides (pool() and ensure_usable() are declared by hand). */
#define KILN_KERNEL_DEVICE_STORAGE                                                                                   \
  void upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes, std::size_t offset) \
      override;                                                                                                      \
  Napi::Promise download(Napi::Env env, const BufferRecord& record) override;                                        \
  Napi::Promise synchronize(Napi::Env env) override;                                                                 \
  void describe_memory(Napi::Env env, Napi::Object& result) override;                                                \
  Napi::Object device_info(Napi::Env env) override;                                                                  \
  void finish(Napi::Env env, bool settle) override;

namespace kiln {

/** See the file header. Every method runs on the JS thread; kernels return once queued. */
class KernelDevice {
 public:
  virtual ~KernelDevice() = default;

  // ---- memory and storage ----
  /** The size-class pool buffers come from (its PoolDevice is this device's memory). */
  virtual BufferPool& pool() = 0;
  /** Throws a NativeError when the device can take no more work (a sticky device error), naming `method`. */
  virtual void ensure_usable(const char* method) { (void)method; }
  /** Writes `bytes` host bytes into `record` at byte `offset` in stream order; JS may reuse `data` once this returns. */
  virtual void upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes,
                      std::size_t offset) = 0;
  /** The buffer's bytes after all queued work (a Uint8Array); rejects with an error of queued work. */
  virtual Napi::Promise download(Napi::Env env, const BufferRecord& record) = 0;
  /** Resolves when all queued work is done; rejects with an error of queued work. */
  virtual Napi::Promise synchronize(Napi::Env env) = 0;
  /** Adds what the device knows to memory()'s result (totalBytes, freeBytes, limitBytes). */
  virtual void describe_memory(Napi::Env env, Napi::Object& result) = 0;
  /** deviceInfo()'s result. */
  virtual Napi::Object device_info(Napi::Env env) = 0;
  /** Gives the pool's cached buffers back to the device (emptyCache()). */
  virtual void empty_cache() { pool().empty_cache(); }
  /** Finishes queued work before the buffers go back to the pool (dispose; `settle` false from the GC finalizer). */
  virtual void finish(Napi::Env env, bool settle) = 0;

  // ---- kernels: launch (CUDA) or encode (Metal) one call; the host checked it (kiln/call_readers.h) ----
  KILN_KERNEL_DEVICE_CALLS(KILN_KERNEL_DEVICE_PURE)

  // ---- optional kernels: a device that overrides one lists its methods (kiln/backend_object.h) ----
  /** layerNormBackward, reached through layer_norm_backward_methods() only; this default throws. */
  virtual void layer_norm_backward(Napi::Env env, const LayerNormBackwardCall& call);
};

/** A pooled buffer used by one call's kernels only (scratch), back to the pool when it goes out of scope. */
class ScratchBuffer {
 public:
  ScratchBuffer(BufferPool& pool, std::size_t bytes) : pool_(pool) {
    record_.byte_length = bytes;
    record_.pooled = pool_.allocate(bytes, &record_.class_bytes);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { pool_.release(record_.pooled, record_.byte_length, record_.class_bytes); }
  /** The buffer. */
  BufferRecord& record() { return record_; }
  /** Its device address. */
  void* get() const { return record_.pooled.device.contents; }
  /** An f32 view of `count` elements at element `offset`. */
  TensorView f32(Index count, Index offset) {
    TensorView view;
    view.buffer = &record_;
    view.dtype = KILN_DTYPE_F32;
    view.shape = {count};
    view.strides = {1};
    view.offset = offset;
    view.count = count;
    return view;
  }

 private:
  BufferPool& pool_;
  BufferRecord record_;
};

}  // namespace kiln
