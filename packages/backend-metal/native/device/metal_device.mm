// device/metal_device.mm — the GPU of the Metal build (macOS, Objective-C++ with ARC).
//
//  - One MTLDevice and one MTLCommandQueue per backend instance.
//  - Buffers: MTLResourceStorageModeShared only. On unified memory the CPU reads and writes the
//    GPU's bytes through `contents` (uploads and downloads copy no more than once and need no
//    blit); a private-storage buffer is never created, so no code ever asks a private buffer for
//    its contents (the "cannot get MTLBuffer contents" class of bugs cannot happen).
//  - Shaders: the .metal sources are embedded in the binary (scripts/embed-shaders.mjs) and
//    compiled with newLibraryWithSource once per process and GPU, with fast math off (kiln's
//    numerics rely on IEEE float: NaN tests, exact integer conversions). Pipelines are cached by
//    (kernel, function constants).
//  - Command buffers: one compute encoder (serial dispatches, tracked hazards) per command buffer;
//    the shared host code decides when to commit (host/command_stream.h). The completion handler
//    reports the status (errors become typed KilnErrors: OutOfMemoryError for
//    MTLCommandBufferErrorOutOfMemory, MetalError naming the kernels otherwise).
// Every entry point runs inside an @autoreleasepool: Node's thread has no run loop to drain one.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "../host/command_stream.h"
#include "../host/device.h"
#include "kiln/native_error.h"

namespace kiln::metal {

/** One embedded .metal file (defined in the generated kiln_metal_shaders.cpp). */
struct EmbeddedShader {
  const char* name;
  const char* source;
};
extern const EmbeddedShader kEmbeddedShaders[];
extern const std::size_t kEmbeddedShaderCount;

namespace {

std::string text(NSString* value) { return value == nil ? std::string() : std::string(value.UTF8String); }

std::string family_of(id<MTLDevice> device) {
  if (@available(macOS 14.0, *)) {
    if ([device supportsFamily:MTLGPUFamilyApple9]) return "apple9";
  }
  if ([device supportsFamily:MTLGPUFamilyApple8]) return "apple8";
  if ([device supportsFamily:MTLGPUFamilyApple7]) return "apple7";
  if ([device supportsFamily:MTLGPUFamilyMac2]) return "mac2";
  return "other";
}

std::string os_version() {
  const NSOperatingSystemVersion version = NSProcessInfo.processInfo.operatingSystemVersion;
  return std::to_string(version.majorVersion) + "." + std::to_string(version.minorVersion) + "." +
         std::to_string(version.patchVersion);
}

DeviceFacts facts_of(id<MTLDevice> device) {
  DeviceFacts facts;
  facts.name = text(device.name);
  facts.unified_memory = device.hasUnifiedMemory;
  facts.recommended_working_set_bytes = device.recommendedMaxWorkingSetSize;
  facts.max_buffer_bytes = device.maxBufferLength;
  facts.family = family_of(device);
  // 8×8 simdgroup matrices: Apple7 (M1) and newer; AMD and Intel GPUs get the threadgroup-tiled matmul.
  facts.simdgroup_matrix = [device supportsFamily:MTLGPUFamilyApple7];
  // kiln's kernels store bf16 as 16-bit integers and compute in f32: every Metal 3 GPU.
  facts.bf16 = true;
  // MSL 3.1's bfloat type: Apple GPUs (Apple6 and newer: every Apple-silicon Mac) with macOS 14+.
  facts.bfloat_type =
      facts.family.rfind("apple", 0) == 0 && NSProcessInfo.processInfo.operatingSystemVersion.majorVersion >= 14;
  facts.os_version = os_version();
  return facts;
}

/** Usable GPUs (Metal 3), the system default first; `names_without_metal3` collects the others. */
NSArray<id<MTLDevice>>* usable_devices(std::string* names_without_metal3) {
  NSMutableArray<id<MTLDevice>>* usable = [NSMutableArray array];
  id<MTLDevice> preferred = MTLCreateSystemDefaultDevice();
  NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
  NSMutableArray<id<MTLDevice>>* ordered = [NSMutableArray array];
  if (preferred != nil) [ordered addObject:preferred];
  for (id<MTLDevice> device in all) {
    if (preferred == nil || device.registryID != preferred.registryID) [ordered addObject:device];
  }
  for (id<MTLDevice> device in ordered) {
    if ([device supportsFamily:MTLGPUFamilyMetal3]) {
      [usable addObject:device];
    } else if (names_without_metal3 != nullptr) {
      *names_without_metal3 += (names_without_metal3->empty() ? "" : ", ") + text(device.name);
    }
  }
  return usable;
}

std::string command_buffer_error_name(NSInteger code) {
  switch (code) {
    case MTLCommandBufferErrorInternal: return "MTLCommandBufferErrorInternal";
    case MTLCommandBufferErrorTimeout: return "MTLCommandBufferErrorTimeout";
    case MTLCommandBufferErrorPageFault: return "MTLCommandBufferErrorPageFault";
    case MTLCommandBufferErrorAccessRevoked: return "MTLCommandBufferErrorAccessRevoked";
    case MTLCommandBufferErrorNotPermitted: return "MTLCommandBufferErrorNotPermitted";
    case MTLCommandBufferErrorOutOfMemory: return "MTLCommandBufferErrorOutOfMemory";
    case MTLCommandBufferErrorInvalidResource: return "MTLCommandBufferErrorInvalidResource";
    case MTLCommandBufferErrorMemoryless: return "MTLCommandBufferErrorMemoryless";
    case MTLCommandBufferErrorDeviceRemoved: return "MTLCommandBufferErrorDeviceRemoved";
    case MTLCommandBufferErrorStackOverflow: return "MTLCommandBufferErrorStackOverflow";
    default: return "MTLCommandBufferError " + std::to_string(static_cast<long>(code));
  }
}

/** Libraries compiled from the embedded sources, once per process and GPU: kernel name → library. */
struct LibrarySet {
  std::map<std::string, id<MTLLibrary>> by_kernel;
};

std::mutex& library_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::uint64_t, LibrarySet>& library_cache() {
  static std::map<std::uint64_t, LibrarySet> cache;
  return cache;
}

const LibrarySet& libraries_for(id<MTLDevice> device) {
  std::lock_guard<std::mutex> lock(library_mutex());
  auto found = library_cache().find(device.registryID);
  if (found != library_cache().end()) return found->second;
  LibrarySet set;
  MTLCompileOptions* options = [MTLCompileOptions new];
  options.languageVersion = MTLLanguageVersion3_0;
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
  // IEEE float: kiln's kernels test for NaN and convert exactly (macOS 15 calls this mathMode = safe).
  options.fastMathEnabled = NO;
#pragma clang diagnostic pop
  const bool log = debug_enabled("kernels");
  for (std::size_t i = 0; i < kEmbeddedShaderCount; i++) {
    const auto started = std::chrono::steady_clock::now();
    NSError* error = nil;
    id<MTLLibrary> library = [device newLibraryWithSource:[NSString stringWithUTF8String:kEmbeddedShaders[i].source]
                                                  options:options
                                                    error:&error];
    if (library == nil) {
      throw_device(std::string("compiling ") + kEmbeddedShaders[i].name + " for " + text(device.name) +
                       " failed: " + text(error.localizedDescription),
                   "kiln's kernels target Metal 3 (macOS 13+). Report this with `kiln doctor` output.");
    }
    for (NSString* name in library.functionNames) set.by_kernel[text(name)] = library;
    if (log) {
      const double milliseconds =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr, "[kiln:metal] compiled %s (%lu kernels) in %.0f ms\n", kEmbeddedShaders[i].name,
                   static_cast<unsigned long>(library.functionNames.count), milliseconds);
    }
  }
  return library_cache().emplace(device.registryID, std::move(set)).first->second;
}

class MetalDevice;

/** One command buffer with one compute encoder. */
class MetalBatch final : public CommandBatch {
 public:
  MetalBatch(MetalDevice& owner, id<MTLCommandBuffer> buffer) : owner_(owner), buffer_(buffer) {}
  void encode(const Dispatch& dispatch, const std::vector<ResolvedBinding>& bindings) override;

  MetalDevice& owner_;
  id<MTLCommandBuffer> buffer_;
  id<MTLComputeCommandEncoder> encoder_ = nil;
};

class MetalDevice final : public Device {
 public:
  explicit MetalDevice(id<MTLDevice> device)
      : device_(device), facts_(facts_of(device)), queue_([device newCommandQueue]), libraries_(libraries_for(device)) {
    if (queue_ == nil) throw_device("newCommandQueue failed on " + facts_.name);
    queue_.label = @"kiln";
  }

  const DeviceFacts& facts() const override { return facts_; }

  bool allocate(std::size_t bytes, DeviceBuffer* buffer) override {
    @autoreleasepool {
      if (bytes > facts_.max_buffer_bytes) return false;
      id<MTLBuffer> created = [device_ newBufferWithLength:bytes options:MTLResourceStorageModeShared];
      if (created == nil) return false;
      if (created.storageMode != MTLStorageModeShared || created.contents == nullptr) {
        throw_device("a new shared-storage buffer has no CPU contents on " + facts_.name);
      }
      buffer->handle = (__bridge_retained void*)created;
      buffer->contents = created.contents;
      buffer->bytes = bytes;
      return true;
    }
  }

  void retain(const DeviceBuffer& buffer) override { CFRetain(buffer.handle); }

  void release(const DeviceBuffer& buffer) override { CFRelease(buffer.handle); }

  std::uint64_t allocated_bytes() const override { return device_.currentAllocatedSize; }

  std::unique_ptr<CommandBatch> begin_batch() override {
    @autoreleasepool {
      MTLCommandBufferDescriptor* descriptor = [MTLCommandBufferDescriptor new];
      descriptor.errorOptions = MTLCommandBufferErrorOptionEncoderExecutionStatus;
      id<MTLCommandBuffer> buffer = [queue_ commandBufferWithDescriptor:descriptor];
      if (buffer == nil) throw_device("commandBufferWithDescriptor failed on " + facts_.name);
      return std::make_unique<MetalBatch>(*this, buffer);
    }
  }

  void commit(std::unique_ptr<CommandBatch> batch, std::function<void(const BatchStatus&)> done) override {
    @autoreleasepool {
      auto* metal = static_cast<MetalBatch*>(batch.get());
      if (metal->encoder_ != nil) [metal->encoder_ endEncoding];
      auto callback = std::make_shared<std::function<void(const BatchStatus&)>>(std::move(done));
      [metal->buffer_ addCompletedHandler:^(id<MTLCommandBuffer> completed) {
        BatchStatus status;
        if (completed.status == MTLCommandBufferStatusError) {
          NSError* error = completed.error;
          status.ok = false;
          status.out_of_memory = error.code == MTLCommandBufferErrorOutOfMemory;
          status.message = command_buffer_error_name(error.code) + ": " + text(error.localizedDescription);
          NSArray* encoders = error.userInfo[MTLCommandBufferEncoderInfoErrorKey];
          for (id<MTLCommandBufferEncoderInfo> encoder in encoders) {
            if (encoder.errorState == MTLCommandEncoderErrorStateFaulted)
              status.message += " (encoder '" + text(encoder.label) + "' faulted)";
          }
        }
        (*callback)(status);
      }];
      [metal->buffer_ commit];
    }
  }

  /** The pipeline of a dispatch (kernel + function constants), built once. */
  id<MTLComputePipelineState> pipeline(const Dispatch& dispatch) {
    const std::string key = pipeline_key(dispatch);
    auto found = pipelines_.find(key);
    if (found != pipelines_.end()) return found->second;
    auto library = libraries_.by_kernel.find(dispatch.kernel);
    if (library == libraries_.by_kernel.end()) {
      throw_device("no Metal function named '" + dispatch.kernel + "' in kiln's kernel library (" + dispatch.what + ")",
                   "This is a bug in kiln's Metal backend: the dispatch plan names a kernel no .metal file defines.");
    }
    MTLFunctionConstantValues* values = [MTLFunctionConstantValues new];
    for (const ConstantValue& constant : dispatch.constants) {
      if (constant.kind == ConstantKind::kBool) {
        const bool value = constant.value != 0;
        [values setConstantValue:&value type:MTLDataTypeBool atIndex:static_cast<NSUInteger>(constant.index)];
      } else {
        const int value = constant.value;
        [values setConstantValue:&value type:MTLDataTypeInt atIndex:static_cast<NSUInteger>(constant.index)];
      }
    }
    NSError* error = nil;
    id<MTLFunction> function =
        [library->second newFunctionWithName:[NSString stringWithUTF8String:dispatch.kernel.c_str()]
                              constantValues:values
                                       error:&error];
    if (function == nil) throw_device("specializing " + key + " failed: " + text(error.localizedDescription));
    id<MTLComputePipelineState> state = [device_ newComputePipelineStateWithFunction:function error:&error];
    if (state == nil) throw_device("building the pipeline " + key + " failed: " + text(error.localizedDescription));
    const NSUInteger threads = dispatch.threads.x * dispatch.threads.y * dispatch.threads.z;
    if (threads > state.maxTotalThreadsPerThreadgroup) {
      throw_device("pipeline " + key + " allows " + std::to_string(state.maxTotalThreadsPerThreadgroup) +
                   " threads per threadgroup on " + facts_.name + ", the plan asks for " + std::to_string(threads));
    }
    if (debug_enabled("kernels")) {
      std::fprintf(stderr, "[kiln:metal] pipeline %s: maxTotalThreadsPerThreadgroup %lu, threadExecutionWidth %lu\n",
                   key.c_str(), static_cast<unsigned long>(state.maxTotalThreadsPerThreadgroup),
                   static_cast<unsigned long>(state.threadExecutionWidth));
    }
    pipelines_.emplace(key, state);
    return state;
  }

 private:
  id<MTLDevice> device_;
  DeviceFacts facts_;
  id<MTLCommandQueue> queue_;
  const LibrarySet& libraries_;
  std::map<std::string, id<MTLComputePipelineState>> pipelines_;
};

void MetalBatch::encode(const Dispatch& dispatch, const std::vector<ResolvedBinding>& bindings) {
  @autoreleasepool {
    id<MTLComputePipelineState> state = owner_.pipeline(dispatch);
    if (encoder_ == nil) {
      encoder_ = [buffer_ computeCommandEncoder];
      encoder_.label = @"kiln kernels";
    }
    [encoder_ setComputePipelineState:state];
    for (const ResolvedBinding& binding : bindings) {
      const NSUInteger index = static_cast<NSUInteger>(binding.index);
      if (binding.bytes != nullptr) {
        [encoder_ setBytes:binding.bytes->data() length:binding.bytes->size() atIndex:index];
      } else {
        [encoder_ setBuffer:(__bridge id<MTLBuffer>)binding.buffer->handle offset:binding.offset_bytes atIndex:index];
      }
    }
    [encoder_
         dispatchThreadgroups:MTLSizeMake(dispatch.threadgroups.x, dispatch.threadgroups.y, dispatch.threadgroups.z)
        threadsPerThreadgroup:MTLSizeMake(dispatch.threads.x, dispatch.threads.y, dispatch.threads.z)];
  }
}

}  // namespace

ProbeReport probe_devices() {
  @autoreleasepool {
    ProbeReport report;
    if (NSProcessInfo.processInfo.operatingSystemVersion.majorVersion < 13) {
      report.status = "os-too-old";
      report.message = "macOS " + os_version();
      return report;
    }
    std::string without_metal3;
    NSArray<id<MTLDevice>>* devices = usable_devices(&without_metal3);
    if (devices.count == 0) {
      report.status = without_metal3.empty() ? "no-device" : "unsupported-gpu";
      report.message = without_metal3;
      return report;
    }
    for (id<MTLDevice> device in devices) report.devices.push_back(facts_of(device));
    report.status = "ok";
    return report;
  }
}

std::unique_ptr<Device> open_device(int index) {
  @autoreleasepool {
    NSArray<id<MTLDevice>>* devices = usable_devices(nullptr);
    if (devices.count == 0)
      throw_device("no Metal 3 GPU was found", "Run `kiln doctor` or check probe() of @kiln/backend-metal.");
    if (index < 0 || static_cast<NSUInteger>(index) >= devices.count) {
      throw_invalid("device index " + std::to_string(index) + " is out of range: this Mac has " +
                        std::to_string(devices.count) + " Metal GPU(s)",
                    "Pass deviceIndex between 0 and " + std::to_string(devices.count - 1) + ".");
    }
    return std::make_unique<MetalDevice>(devices[static_cast<NSUInteger>(index)]);
  }
}

const char* build_name() { return "Metal"; }

bool is_simulator() { return false; }

}  // namespace kiln::metal
