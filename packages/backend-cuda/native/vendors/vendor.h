// vendors/vendor.h — the one include through which kiln's CUDA code sees the CUDA API:
// the real toolkit (vendors/cuda.h) or the CPU simulator (vendors/sim.h, KILN_CUDA_SIMULATOR).
#pragma once

#if defined(KILN_CUDA_SIMULATOR)
#include "sim.h"
#else
#include "cuda.h"
#endif
