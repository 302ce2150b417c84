// addon/launch_scratch.h — scratch device memory for one launch (two-pass reductions).
#pragma once

#include <cstddef>

#include "../runtime/device_context.h"

namespace kiln {

/** Scratch device memory for one launch: taken from the allocator and given back at once (single stream: later work reuses it safely). */
class LaunchScratch {
 public:
  LaunchScratch(DeviceContext& device, std::size_t bytes) : device_(device), bytes_(bytes) {
    if (bytes_ > 0) pointer_ = device_.allocator().allocate(bytes_, &class_bytes_);
  }
  LaunchScratch(const LaunchScratch&) = delete;
  LaunchScratch& operator=(const LaunchScratch&) = delete;
  ~LaunchScratch() {
    if (pointer_ != nullptr) device_.allocator().release(pointer_, bytes_, class_bytes_);
  }
  /** The memory (nullptr when 0 bytes were asked for). */
  void* get() const { return pointer_; }

 private:
  DeviceContext& device_;
  std::size_t bytes_;
  std::size_t class_bytes_ = 0;
  void* pointer_ = nullptr;
};

}  // namespace kiln
