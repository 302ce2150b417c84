// host/call_scratch.h — a pooled buffer used by one call's dispatches only (rope's tables,
// rmsNormBackward's and the two-pass reduce's partials, sumOfSquaresMulti's chunk sums): taken from
// the pool for the call and released when the call has been encoded (the pool remembers the
// batch that used it, so nothing reuses it early).
#pragma once

#include <cstddef>

#include "../kernels/kiln_metal_args.h"
#include "../plan/dispatch.h"
#include "buffer.h"
#include "buffer_pool.h"

namespace kiln::metal {

/** See the file header. */
class CallScratch {
 public:
  CallScratch(BufferPool& pool, std::size_t bytes) : pool_(pool) {
    record_.byte_length = bytes;
    record_.pooled = pool_.allocate(bytes, &record_.class_bytes);
  }
  CallScratch(const CallScratch&) = delete;
  CallScratch& operator=(const CallScratch&) = delete;
  ~CallScratch() { pool_.release(record_.pooled, record_.byte_length, record_.class_bytes); }
  BufferRecord& record() { return record_; }
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

}  // namespace kiln::metal
