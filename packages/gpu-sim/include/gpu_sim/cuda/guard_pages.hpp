// gpu_sim/cuda/guard_pages.hpp — opt-in guard pages around device allocations, so that a kernel
// reading past the end of one (or well before its start) stops the process with a message instead
// of reading a neighbour.
//
// Model: with GPU_SIM_GUARD_PAGES set (to anything but "" or "0"), cudaMalloc maps each allocation
// (its bytes, the red zone and the 256-byte rounding: `span` bytes) so that it ends where
// kGuardBytes of inaccessible pages begin, and kGuardBytes of them also lie before the first page
// it occupies. A kernel access up to kGuardBytes beyond its end, or before its first page (more
// than the page's slack in front of its start: up to a page less a byte), faults (SIGSEGV); the
// handler installed with the first guarded allocation names the kernel, block and thread that
// faulted and aborts. Faults on threads that are not running a kernel block go to the handler
// installed before (Node's, for instance). Without the setting nothing changes: a read past the
// end of an allocation is not detected (writes are, by the red zone: runtime.hpp).
// Costs 128 KiB of address space and a page or more of memory per allocation, and mapping calls:
// for tests, not for speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#define GPU_SIM_HAS_GUARD_PAGES 1
#else
#define GPU_SIM_HAS_GUARD_PAGES 0
#endif

#include "../engine.hpp"

namespace gpu_sim::cuda {

/** Inaccessible bytes after each guarded allocation (accesses this far past its end are caught), and before its first page. */
inline constexpr std::size_t kGuardBytes = std::size_t{64} << 10;

/** GPU_SIM_GUARD_PAGES is set (read once) and this platform maps pages. */
inline bool guard_pages_enabled() {
  static const bool enabled = [] {
    const char* setting = std::getenv("GPU_SIM_GUARD_PAGES");
    return GPU_SIM_HAS_GUARD_PAGES && setting != nullptr && *setting != '\0' && std::strcmp(setting, "0") != 0;
  }();
  return enabled;
}

#if GPU_SIM_HAS_GUARD_PAGES

/** One guarded allocation's mapping: where it starts and how long it is (both guards included). */
struct GuardedMapping {
  /** First byte of the mapping. */
  void* base;
  /** Bytes mapped. */
  std::size_t length;
};

/** Live guarded allocations: the pointer cudaMalloc returned → its mapping. */
struct GuardedAllocations {
  std::mutex mutex;
  std::map<std::uintptr_t, GuardedMapping> mappings;
};

inline GuardedAllocations& guarded_allocations() {
  static GuardedAllocations state;
  return state;
}

/** The SIGSEGV action installed before ours (called for faults outside a kernel block). */
inline struct sigaction& previous_segv_action() {
  static struct sigaction action{};
  return action;
}

/** Writes what faulted (kernel, block, thread, address) to stderr and aborts; chains when no kernel block runs on this thread. */
inline void on_segv(int signal, siginfo_t* info, void* context) {
  BlockRunner* runner = tls_runner;
  if (runner == nullptr) {
    const struct sigaction& previous = previous_segv_action();
    if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
      previous.sa_sigaction(signal, info, context);
      return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler != nullptr) {
      previous.sa_handler(signal);
      return;
    }
    ::signal(SIGSEGV, SIG_DFL);
    return;  // the access runs again and faults with the default action
  }
  const Dim3& block = runner->block_index();
  const Dim3 thread = tls_thread != nullptr ? tls_thread->index : Dim3{0, 0, 0};
  char message[512];
  const int length = std::snprintf(
      message, sizeof message,
      "gpu-sim: kernel '%s': block (%u,%u,%u) thread (%u,%u,%u) accessed %p, outside device memory: with "
      "GPU_SIM_GUARD_PAGES set this is a read or write past the end of a device allocation (beyond its "
      "red zone) or before its start\n",
      runner->shape().kernel_name, block.x, block.y, block.z, thread.x, thread.y, thread.z, info->si_addr);
  if (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, message, static_cast<std::size_t>(length));
    (void)written;
  }
  std::abort();
}

/** Installs on_segv once, keeping the action it replaces. */
inline void install_segv_handler() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action{};
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv_action());
  });
}

/**
 * `span` bytes that end where kGuardBytes (whole pages) of inaccessible memory begin, their first
 * page preceded by as many (nullptr when mapping fails).
 */
inline void* allocate_guarded(std::size_t span) {
  install_segv_handler();
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t guard_bytes = (kGuardBytes + page - 1) / page * page;
  const std::size_t length = guard_bytes + (span + page - 1) / page * page + guard_bytes;
  void* base = ::mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  auto* usable = static_cast<unsigned char*>(base) + guard_bytes;
  auto* guard_after = static_cast<unsigned char*>(base) + length - guard_bytes;
  if (::mprotect(usable, static_cast<std::size_t>(guard_after - usable), PROT_READ | PROT_WRITE) != 0) {
    ::munmap(base, length);
    return nullptr;
  }
  void* memory = guard_after - span;
  std::lock_guard<std::mutex> lock(guarded_allocations().mutex);
  guarded_allocations().mappings[reinterpret_cast<std::uintptr_t>(memory)] = GuardedMapping{base, length};
  return memory;
}

/** Unmaps `memory` if allocate_guarded made it; false otherwise. */
inline bool free_guarded(void* memory) {
  GuardedMapping mapping{};
  {
    std::lock_guard<std::mutex> lock(guarded_allocations().mutex);
    auto found = guarded_allocations().mappings.find(reinterpret_cast<std::uintptr_t>(memory));
    if (found == guarded_allocations().mappings.end()) return false;
    mapping = found->second;
    guarded_allocations().mappings.erase(found);
  }
  ::munmap(mapping.base, mapping.length);
  return true;
}

#else

inline void* allocate_guarded(std::size_t) { return nullptr; }
inline bool free_guarded(void*) { return false; }

#endif

}  // namespace gpu_sim::cuda
