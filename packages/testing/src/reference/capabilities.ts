/**
 * Capabilities of a reference backend: every kernel it implements in every float dtype, i32
 * only where docs/kernel-semantics.md allows it, minus the (kernel, dtype) pairs the options
 * declare unsupported (used to exercise core's fallback policy).
 */
import { isDType, type DType } from '@kiln/core';
import type { Capabilities, KernelName } from '@kiln/core';
import { FUSED_KERNELS, PRIMITIVE_KERNELS } from '@kiln/core';

/** Kernels whose i32 use the semantics allow (op-level limits are the kernel's business). */
const I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([
  'copy',
  'cast',
  'fill',
  'where',
  'gather',
  'scatterAdd',
  'binary',
  'reduce',
  'unary',
]);

/** Capabilities for a backend that has `kernels` (primitives plus its fused kernels). */
export function referenceCapabilities(
  kernels: ReadonlySet<KernelName>,
  unsupportedDTypes: Partial<Record<KernelName, readonly DType[]>>,
  memoryLimitBytes?: number,
): Capabilities {
  const known = new Set<KernelName>([...PRIMITIVE_KERNELS, ...FUSED_KERNELS]);
  return {
    device: {
      id: 'reference',
      name: 'float64 reference (host)',
      unifiedMemory: false,
      ...(memoryLimitBytes === undefined ? {} : { memoryTotalBytes: memoryLimitBytes }),
    },
    flashAttention: false,
    // The reference attention and rope read both layouts (src/reference/attention.ts, rope.ts).
    attentionLayouts: ['heads-major', 'tokens-major'],
    ropeLayouts: ['heads-major', 'tokens-major'],
    adamwMultiDeviceScalars: kernels.has('adamwMulti'),
    supports(kernel: KernelName, dtype: DType): boolean {
      if (!known.has(kernel) || !kernels.has(kernel) || !isDType(dtype)) return false;
      if (unsupportedDTypes[kernel]?.includes(dtype)) return false;
      return dtype !== 'i32' || I32_KERNELS.has(kernel);
    },
  };
}
