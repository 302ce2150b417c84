// vendors/vendor.h — the one include through which kiln's CUDA code sees the CUDA API:
// the real toolkit (vendors/cuda.h) or the CPU simulator (vendors/sim.h, KILN_CUDA_SIMULATOR).
//
// KILN_VENDOR_HEADER (a quoted or <bracketed> header name, defined on the compiler's command line)
// replaces both: an out-of-tree build — a HIP backend compiling these sources with hipcc, see
// docs/rocm-walkthrough.md — supplies its own header mapping the same names. It must define what
// vendors/cuda.h defines: KILN_DEVICE_CODE, KILN_HOST_DEVICE, KILN_EXTERN_SHARED and namespace
// kiln::vendor (kSimulator, kBuildName, fault_detail, launch). Optional: KILN_HAS_TENSOR_MAPS with
// KILN_GRID_CONSTANT, vendor::TensorMap and vendor::encode_tensor_map_tiled (the Hopper matmul,
// matmul_wgmma.cuh; a header without them builds without that kernel).
#pragma once

#if defined(KILN_VENDOR_HEADER)
#include KILN_VENDOR_HEADER
#elif defined(KILN_CUDA_SIMULATOR)
#include "sim.h"
#else
#include "cuda.h"
#endif
