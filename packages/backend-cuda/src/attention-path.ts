/**
 * Which flash-attention kernels a CUDA backend instance runs, in one line for `kiln info`: on
 * compute capability 9.0 with the binary's sm_90a code, the warp-specialised wgmma + TMA kernels
 * (FlashAttention-3's structure) for f16/bf16 at head dims 64, 96 and 128; everywhere else, and for
 * other head dims, f32 and operands TMA cannot read, the pipelined FlashAttention-2 kernels.
 */
import { halfMatmulKernelFamily } from './matmul-path.js';

/**
 * The attention kernels of a device of compute capability `major`.x; `hopperKernels` is the
 * addon's word that the device runs the binary's sm_90a code (matmulInfo().hopperKernels, false
 * under KILN_CUDA_HOPPER_KERNELS=0); `maxHeadDim` the native kernels' largest head dim.
 */
export function describeAttentionPath(major: number, hopperKernels: boolean, maxHeadDim: number): string {
  const flash2 =
    'FlashAttention-2 (mma.sync tensor cores for f16/bf16, warps of 32 query rows up to D 64 on large grids, K/V stages sized to the shared memory per multiprocessor; f32 SIMT)';
  const limits = `head dims ≤ ${maxHeadDim} (larger: composed from matmuls), deterministic backward`;
  if (halfMatmulKernelFamily(major, hopperKernels) === 'wgmma')
    return `wgmma + TMA (sm_90a, warp-specialised, FlashAttention-3's structure) for f16/bf16 at head dims 64, 96, 128; ${flash2} otherwise; ${limits}`;
  return `${flash2}; ${limits}`;
}
