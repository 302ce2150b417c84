// FAKE hip/hip_fp16.h — for kiln's compile check only (see hip_runtime.h).
#pragma once

struct __half {
  unsigned short bits;
};
float __half2float(__half value);
__half __float2half_rn(float value);
unsigned short __half_as_ushort(__half value);
__half __ushort_as_half(unsigned short bits);
