// kiln/kernel_device.h — the device interface behind the shared host: what a GPU backend
// implements so kiln's Backend class (kiln/backend_object.h) can run on it. The host reads and
// checks every argument, owns the buffer table and answers the storage calls; the device owns the
// memory pool, queues uploads, downloads and kernels in stream order, reports memory and its
// facts, and holds the error state of work in flight. A new native backend writes one of these
// (plus its kernels); CUDA's is native/runtime/cuda_device.h, Metal's native/host/metal_kernel_device.h.
#pragma once

#include <napi.h>

#include "buffer_pool.h"
#include "kernel_calls.h"

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
  virtual void upload(Napi::Env env, BufferRecord& record, const unsigned char* data, std::size_t bytes, std::size_t offset) = 0;
  /** The buffer's bytes after all queued work (a Uint8Array); rejects with an error of queued work. */
  virtual Napi::Promise download(Napi::Env env, const BufferRecord& record) = 0;
  /** Resolves when all queued work is done; rejects with an error of queued work. */
  virtual Napi::Promise synchronize(Napi::Env env) = 0;
  /** Adds what the device knows to memory()'s result (totalBytes, freeBytes, limitBytes). */
  virtual void describe_memory(Napi::Env env, Napi::Object& result) = 0;
  /** deviceInfo()'s result. */
  virtual Napi::Object device_info(Napi::Env env) = 0;
  /** Finishes queued work before the buffers go back to the pool (dispose; `settle` false from the GC finalizer). */
  virtual void finish(Napi::Env env, bool settle) = 0;

  // ---- kernels: launch (CUDA) or encode (Metal) one call; the host checked it (kiln/call_readers.h) ----
  virtual void unary(Napi::Env env, const UnaryCall& call) = 0;
  virtual void binary(Napi::Env env, const BinaryCall& call) = 0;
  virtual void where(Napi::Env env, const WhereCall& call) = 0;
  virtual void reduce(Napi::Env env, const ReduceCall& call) = 0;
  virtual void matmul(Napi::Env env, const MatmulCall& call) = 0;
  virtual void copy(Napi::Env env, const CopyCall& call) = 0;
  virtual void gather(Napi::Env env, const IndexCall& call) = 0;
  virtual void scatter_add(Napi::Env env, const IndexCall& call) = 0;
  virtual void cast(Napi::Env env, const CastCall& call) = 0;
  virtual void fill(Napi::Env env, const FillCall& call) = 0;
  virtual void random(Napi::Env env, const RandomCall& call) = 0;
  virtual void softmax(Napi::Env env, const SoftmaxCall& call) = 0;
  virtual void softmax_backward(Napi::Env env, const SoftmaxBackwardCall& call) = 0;
  virtual void rms_norm(Napi::Env env, const RmsNormCall& call) = 0;
  virtual void rms_norm_backward(Napi::Env env, const RmsNormBackwardCall& call) = 0;
  virtual void layer_norm(Napi::Env env, const LayerNormCall& call) = 0;
  virtual void rope(Napi::Env env, const RopeCall& call) = 0;
  virtual void swiglu(Napi::Env env, const SwigluCall& call) = 0;
  virtual void swiglu_backward(Napi::Env env, const SwigluBackwardCall& call) = 0;
  virtual void cross_entropy(Napi::Env env, const CrossEntropyCall& call) = 0;
  virtual void cross_entropy_backward(Napi::Env env, const CrossEntropyBackwardCall& call) = 0;
  virtual void adamw(Napi::Env env, const AdamWCall& call) = 0;
  virtual void sum_of_squares_multi(Napi::Env env, const SumOfSquaresMultiCall& call) = 0;
  virtual void adamw_multi(Napi::Env env, const AdamWMultiCall& call) = 0;
  virtual void attention(Napi::Env env, const AttentionCall& call) = 0;
  virtual void attention_backward(Napi::Env env, const AttentionBackwardCall& call) = 0;
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
