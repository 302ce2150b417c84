// gpu_sim/fiber.hpp — one stack per simulated GPU thread, and the switch between stacks.
//
// Algorithm: a fiber is a stack plus a saved stack pointer. `switch_to` pushes the callee-saved
// registers of the running code on its own stack, stores the stack pointer, loads the other
// fiber's stack pointer and pops that fiber's registers: a plain function call that returns in
// another fiber. A new fiber's stack is prepared so that its first "return" lands in a trampoline
// that calls `entry(argument)`. Entries never return: they switch away for the last time.
//
// Three implementations were measured (bench/fiber-bench.cpp, g++ 12 -O2, the 2-core AMD EPYC
// CI machine under load from other jobs; per GPU thread, 256 threads per block):
//                                              start+finish   __syncthreads   __shfl_xor_sync
//   hand-written x86-64 switch (default)            28 ns           35 ns           35 ns
//   POSIX ucontext (sigprocmask syscall/switch)    690 ns          500 ns          470 ns
//   one OS thread per GPU thread, std::barrier      42 us          2.2 us            -
// so the assembly switch is the default where it exists (x86-64, aarch64 — the aarch64 one passes
// the self-test under qemu-user when a cross compiler is installed) and OS threads are not implemented.
// Define GPU_SIM_FIBER_UCONTEXT to force the portable ucontext version (sanitizers, new CPUs).
//
// ThreadSanitizer (-fsanitize=thread): every fiber is announced to TSan (__tsan_create_fiber /
// __tsan_switch_to_fiber), so TSan follows the stack switches; a switch synchronises, as the
// fibers of a block run one at a time on one worker. Races between worker threads, and between a
// host thread and the threads running kernels, are still reported.
//
// Stacks: mmap'd with a PROT_NONE guard page below them, so a runaway kernel recursion faults at
// once instead of corrupting a neighbour; pages are committed lazily by the kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(GPU_SIM_FIBER_UCONTEXT) && !(defined(__x86_64__) || defined(__aarch64__))
#define GPU_SIM_FIBER_UCONTEXT 1
#endif

#if defined(GPU_SIM_FIBER_UCONTEXT)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define GPU_SIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPU_SIM_TSAN 1
#endif
#endif
#if defined(GPU_SIM_TSAN)
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#endif

namespace gpu_sim {

/** Name of the context-switch implementation compiled in (for reports and tests). */
#if defined(GPU_SIM_FIBER_UCONTEXT)
inline constexpr const char* kFiberImplementation = "ucontext";
#elif defined(__x86_64__)
inline constexpr const char* kFiberImplementation = "x86-64 assembly";
#else
inline constexpr const char* kFiberImplementation = "aarch64 assembly";
#endif

/** An mmap'd stack with a guard page below it. */
class FiberStack {
 public:
  explicit FiberStack(std::size_t usable_bytes) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    usable_ = (usable_bytes + page_ - 1) / page_ * page_;
    void* memory = mmap(nullptr, usable_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    mprotect(memory, page_, PROT_NONE);
    base_ = static_cast<char*>(memory);
  }
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;
  ~FiberStack() { munmap(base_, usable_ + page_); }

  /** Lowest usable address (just above the guard page). */
  char* bottom() const { return base_ + page_; }
  /** One past the highest usable address (16-byte aligned). */
  char* top() const { return base_ + page_ + usable_; }
  /** Usable bytes. */
  std::size_t size() const { return usable_; }

 private:
  char* base_ = nullptr;
  std::size_t page_ = 0;
  std::size_t usable_ = 0;
};

/** Signature of a fiber's entry function; it must never return. */
using FiberEntry = void (*)(void* argument);

}  // namespace gpu_sim

#if !defined(GPU_SIM_FIBER_UCONTEXT)
// The switch routine is defined once per translation unit as a weak, hidden symbol, so the
// header can be included anywhere without a .cpp and without duplicate-symbol link errors.
extern "C" void gpu_sim_fiber_switch(void** save_stack_pointer, void* load_stack_pointer);
extern "C" void gpu_sim_fiber_trampoline();

#if defined(__x86_64__) && defined(__ELF__)
// System V x86-64: callee-saved rbx, rbp, r12-r15 (the FP control words are shared by all
// fibers of a worker: kernels never change rounding modes). The trampoline finds the entry in
// rbx and its argument in r12, and is entered with rsp 16-byte aligned, as a call expects.
__asm__(
    ".text\n"
    ".weak gpu_sim_fiber_switch\n"
    ".hidden gpu_sim_fiber_switch\n"
    ".type gpu_sim_fiber_switch,@function\n"
    "gpu_sim_fiber_switch:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size gpu_sim_fiber_switch,.-gpu_sim_fiber_switch\n"
    ".weak gpu_sim_fiber_trampoline\n"
    ".hidden gpu_sim_fiber_trampoline\n"
    ".type gpu_sim_fiber_trampoline,@function\n"
    "gpu_sim_fiber_trampoline:\n"
    "  movq %r12, %rdi\n"
    "  callq *%rbx\n"
    "  ud2\n"
    ".size gpu_sim_fiber_trampoline,.-gpu_sim_fiber_trampoline\n");
#elif defined(__aarch64__) && (defined(__ELF__) || defined(__APPLE__))
// AAPCS64: callee-saved x19-x28, fp (x29), lr (x30) and the low halves of v8-v15. The
// trampoline finds the entry in x20 and its argument in x19.
#if defined(__APPLE__)
#define GPU_SIM_ASM_SYMBOL(name) "_" #name
#define GPU_SIM_ASM_PROLOGUE(name)                                             \
  ".globl " GPU_SIM_ASM_SYMBOL(name) "\n.weak_definition " GPU_SIM_ASM_SYMBOL( \
      name) "\n.private_extern " GPU_SIM_ASM_SYMBOL(name) "\n.p2align 2\n" GPU_SIM_ASM_SYMBOL(name) ":\n"
#else
#define GPU_SIM_ASM_SYMBOL(name) #name
#define GPU_SIM_ASM_PROLOGUE(name) \
  ".weak " #name "\n.hidden " #name "\n.type " #name ",%function\n.p2align 2\n" #name ":\n"
#endif
__asm__(
    ".text\n" GPU_SIM_ASM_PROLOGUE(gpu_sim_fiber_switch)
    "  sub sp, sp, #160\n"
    "  stp x19, x20, [sp, #0]\n"
    "  stp x21, x22, [sp, #16]\n"
    "  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n"
    "  stp x27, x28, [sp, #64]\n"
    "  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n"
    "  stp d10, d11, [sp, #112]\n"
    "  stp d12, d13, [sp, #128]\n"
    "  stp d14, d15, [sp, #144]\n"
    "  mov x2, sp\n"
    "  str x2, [x0]\n"
    "  mov sp, x1\n"
    "  ldp x19, x20, [sp, #0]\n"
    "  ldp x21, x22, [sp, #16]\n"
    "  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n"
    "  ldp x27, x28, [sp, #64]\n"
    "  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n"
    "  ldp d10, d11, [sp, #112]\n"
    "  ldp d12, d13, [sp, #128]\n"
    "  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #160\n"
    "  ret\n" GPU_SIM_ASM_PROLOGUE(gpu_sim_fiber_trampoline)
    "  mov x0, x19\n"
    "  blr x20\n"
    "  brk #0\n");
#undef GPU_SIM_ASM_PROLOGUE
#undef GPU_SIM_ASM_SYMBOL
#else
#error "gpu_sim: no assembly context switch for this target; define GPU_SIM_FIBER_UCONTEXT"
#endif
#endif  // !GPU_SIM_FIBER_UCONTEXT

namespace gpu_sim {

/** A saved execution context: either a suspended fiber or the scheduler that runs fibers. */
class FiberContext {
 public:
#if defined(GPU_SIM_TSAN)
  // TSan counts every fiber it was told about as a thread (at most 8128 live): a context owns its
  // TSan fiber, hands it on when moved (thread tables grow), and destroys it with itself, so the
  // per-launch block runners of a long test run do not exhaust TSan's thread table.
  FiberContext() = default;
  FiberContext(const FiberContext&) = delete;
  FiberContext& operator=(const FiberContext&) = delete;
  FiberContext(FiberContext&& other) noexcept { take(other); }
  FiberContext& operator=(FiberContext&& other) noexcept {
    if (this != &other) {
      release_tsan_fiber();
      take(other);
    }
    return *this;
  }
  ~FiberContext() { release_tsan_fiber(); }
#endif

  /** Prepares `stack` so that the first switch to this context calls entry(argument). */
  void prepare(FiberStack& stack, FiberEntry entry, void* argument) {
#if defined(GPU_SIM_TSAN)
    release_tsan_fiber();
    tsan_fiber_ = __tsan_create_fiber(0);
    tsan_owned_ = true;
#endif
#if defined(GPU_SIM_FIBER_UCONTEXT)
    getcontext(&context_);
    context_.uc_stack.ss_sp = stack.bottom();
    context_.uc_stack.ss_size = stack.size();
    context_.uc_link = nullptr;
    // makecontext passes int arguments only: both pointers travel as 32-bit halves.
    const auto entry_bits = reinterpret_cast<std::uintptr_t>(entry);
    const auto argument_bits = reinterpret_cast<std::uintptr_t>(argument);
    makecontext(&context_, reinterpret_cast<void (*)()>(&FiberContext::ucontext_entry), 4,
                static_cast<unsigned>(entry_bits & 0xffffffffu), static_cast<unsigned>(entry_bits >> 32),
                static_cast<unsigned>(argument_bits & 0xffffffffu), static_cast<unsigned>(argument_bits >> 32));
#else
    auto* top = reinterpret_cast<std::uintptr_t*>(stack.top());
#if defined(__x86_64__)
    // Seven words: r15 r14 r13 r12(argument) rbx(entry) rbp ret(trampoline); after the pops
    // and the ret, rsp == top (16-byte aligned).
    std::uintptr_t* frame = top - 7;
    frame[0] = 0;
    frame[1] = 0;
    frame[2] = 0;
    frame[3] = reinterpret_cast<std::uintptr_t>(argument);
    frame[4] = reinterpret_cast<std::uintptr_t>(entry);
    frame[5] = 0;
    frame[6] = reinterpret_cast<std::uintptr_t>(&gpu_sim_fiber_trampoline);
#else
    // 20 words (160 bytes): x19(argument) x20(entry) x21..x28 x29(0) x30(trampoline) d8..d15.
    std::uintptr_t* frame = top - 20;
    for (int i = 0; i < 20; i++) frame[i] = 0;
    frame[0] = reinterpret_cast<std::uintptr_t>(argument);
    frame[1] = reinterpret_cast<std::uintptr_t>(entry);
    frame[11] = reinterpret_cast<std::uintptr_t>(&gpu_sim_fiber_trampoline);
#endif
    stack_pointer_ = frame;
#endif
  }

  /** Saves the running code into `this` and resumes `target`. Returns when something switches back. */
  void switch_to(FiberContext& target) {
#if defined(GPU_SIM_TSAN)
    // A context never prepared is the scheduler's (a real thread): it is whatever fiber runs now.
    if (tsan_fiber_ == nullptr) tsan_fiber_ = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(target.tsan_fiber_, 0);
#endif
#if defined(GPU_SIM_FIBER_UCONTEXT)
    swapcontext(&context_, &target.context_);
#else
    gpu_sim_fiber_switch(&stack_pointer_, target.stack_pointer_);
#endif
  }

 private:
#if defined(GPU_SIM_FIBER_UCONTEXT)
  static void ucontext_entry(unsigned entry_low, unsigned entry_high, unsigned argument_low, unsigned argument_high) {
    const auto entry = (static_cast<std::uintptr_t>(entry_high) << 32) | entry_low;
    const auto argument = (static_cast<std::uintptr_t>(argument_high) << 32) | argument_low;
    reinterpret_cast<FiberEntry>(entry)(reinterpret_cast<void*>(argument));
  }
  ucontext_t context_{};
#else
  void* stack_pointer_ = nullptr;
#endif
#if defined(GPU_SIM_TSAN)
  void release_tsan_fiber() {
    if (tsan_fiber_ != nullptr && tsan_owned_) __tsan_destroy_fiber(tsan_fiber_);
    tsan_fiber_ = nullptr;
    tsan_owned_ = false;
  }
  void take(FiberContext& other) {
#if defined(GPU_SIM_FIBER_UCONTEXT)
    context_ = other.context_;
#else
    stack_pointer_ = other.stack_pointer_;
#endif
    tsan_fiber_ = other.tsan_fiber_;
    tsan_owned_ = other.tsan_owned_;
    other.tsan_fiber_ = nullptr;
    other.tsan_owned_ = false;
  }
  void* tsan_fiber_ = nullptr;
  bool tsan_owned_ = false;
#endif
};

}  // namespace gpu_sim
