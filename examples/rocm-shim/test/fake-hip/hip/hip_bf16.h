// FAKE hip/hip_bf16.h — for kiln's compile check only (see hip_runtime.h). Only the type: the
// shim writes its own bf16 conversions, so it needs nothing else from this header.
#pragma once

struct __hip_bfloat16 {
  unsigned short data;
};
