// Self-test of stream capture and CUDA graphs in gpu_sim/cuda/runtime.hpp: a capturing stream
// records launches, device copies and memsets without running them; cudaGraphLaunch re-runs them
// (arguments bound at capture, memory read at replay); what CUDA refuses during a capture (a
// synchronisation, a host copy, cudaMalloc, cudaFree) returns cudaErrorStreamCaptureUnsupported and
// invalidates the capture, whose end then returns cudaErrorStreamCaptureInvalidated.
// Prints one "ok <name>" line per check, or "FAIL <name>: <why>" and exits 1.
#include <gpu_sim/cuda/runtime.hpp>

#include <cstdio>
#include <string>

#include "self_test.hpp"

using self_test::check;

__global__ void scale_add_kernel(const float* x, float* out, float factor, int count) {
  const int index = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (index < count) out[index] += factor * x[index];
}

static std::string values(const float* data, int count) {
  std::string text;
  for (int i = 0; i < count; i++) text += std::to_string(static_cast<int>(data[i])) + " ";
  return text;
}

int main() {
  constexpr int kCount = 8;
  float* x = nullptr;
  float* out = nullptr;
  float* copy = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&x), kCount * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&out), kCount * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&copy), kCount * sizeof(float));
  float host[kCount];
  for (int i = 0; i < kCount; i++) host[i] = static_cast<float>(i);
  cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemset(copy, 0, kCount * sizeof(float));
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);

  // Capture: memset out, out += 2x, copy ← out. Nothing runs until the graph is launched.
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "cudaStreamBeginCapture");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &status);
  check(status == cudaStreamCaptureStatusActive, "the stream reports an active capture");
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaErrorIllegalState,
        "a second begin on a capturing stream is cudaErrorIllegalState");
  cudaGetLastError();
  cudaMemsetAsync(out, 0, kCount * sizeof(float), stream);
  const cudaError_t launched = gpu_sim::cuda::launch_kernel("scale_add_kernel", scale_add_kernel, dim3(1), dim3(32), 0,
                                                            stream, x, out, 2.0f, kCount);
  cudaMemcpyAsync(copy, out, kCount * sizeof(float), cudaMemcpyDeviceToDevice, stream);
  check(launched == cudaSuccess, "a launch on a capturing stream is recorded");
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr,
        "cudaStreamEndCapture gives the graph");
  float result[kCount];
  cudaMemcpy(result, copy, sizeof result, cudaMemcpyDeviceToHost);
  check(values(result, kCount) == "0 0 0 0 0 0 0 0 ", "nothing ran during the capture", values(result, kCount));
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "cudaGraphInstantiate");
  check(cudaGraphLaunch(exec, stream) == cudaSuccess, "cudaGraphLaunch");
  cudaMemcpy(result, copy, sizeof result, cudaMemcpyDeviceToHost);
  check(values(result, kCount) == "0 2 4 6 8 10 12 14 ", "a replay runs memset, kernel and copy in order",
        values(result, kCount));
  // A replay reads memory as it is then: new inputs, same recorded arguments.
  for (int i = 0; i < kCount; i++) host[i] = static_cast<float>(10 * i);
  cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice);
  cudaGraphLaunch(exec, stream);
  cudaMemcpy(result, copy, sizeof result, cudaMemcpyDeviceToHost);
  check(values(result, kCount) == "0 20 40 60 80 100 120 140 ", "a second replay reads the new inputs",
        values(result, kCount));

  // What a capture refuses, each time invalidating it.
  struct Refusal {
    const char* name;
    cudaError_t (*run)(cudaStream_t, float*);
  };
  const Refusal refusals[] = {
      {"cudaStreamSynchronize", [](cudaStream_t s, float*) { return cudaStreamSynchronize(s); }},
      {"cudaDeviceSynchronize", [](cudaStream_t, float*) { return cudaDeviceSynchronize(); }},
      {"a copy to the host",
       [](cudaStream_t s, float* device) {
         static float sink[8];
         return cudaMemcpyAsync(sink, device, sizeof sink, cudaMemcpyDeviceToHost, s);
       }},
      {"a copy from the host",
       [](cudaStream_t s, float* device) {
         static float source[8];
         return cudaMemcpyAsync(device, source, sizeof source, cudaMemcpyHostToDevice, s);
       }},
      {"cudaMalloc",
       [](cudaStream_t, float*) {
         void* pointer = nullptr;
         return cudaMalloc(&pointer, 64);
       }},
      {"cudaFree", [](cudaStream_t, float* device) { return cudaFree(device); }},
  };
  for (const Refusal& refusal : refusals) {
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    const cudaError_t refused = refusal.run(stream, copy);
    const cudaError_t last = cudaGetLastError();
    cudaGraph_t invalid = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &invalid);
    cudaGetLastError();
    const std::string name =
        std::string(refusal.name) + " during a capture is cudaErrorStreamCaptureUnsupported and invalidates it";
    check(refused == cudaErrorStreamCaptureUnsupported && last == cudaErrorStreamCaptureUnsupported &&
              ended == cudaErrorStreamCaptureInvalidated && invalid == nullptr,
          name.c_str(), std::string(cudaGetErrorName(refused)) + " / " + cudaGetErrorName(ended));
  }
  cudaStreamIsCapturing(stream, &status);
  check(status == cudaStreamCaptureStatusNone && cudaStreamSynchronize(stream) == cudaSuccess,
        "after an invalidated capture the stream works eagerly again");
  check(std::string(cudaGetErrorName(cudaErrorStreamCaptureInvalidated)) == "cudaErrorStreamCaptureInvalidated",
        "error names of the capture errors");

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(out);
  cudaFree(copy);
  std::printf("%s\n", self_test::failures == 0 ? "all ok" : "FAILED");
  return self_test::failures == 0 ? 0 : 1;
}
