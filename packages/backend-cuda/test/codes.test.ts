// The op and dtype codes of src/native/codes.ts must match the addon's (native/kernels/op_codes.h),
// for the simulator build and for the real build when it loads.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { CudaAddon } from '../src/native/addon-types.js';
import { BINARY_ORDER, DTYPE_ORDER, REDUCE_ORDER, UNARY_ORDER } from '../src/native/codes.js';
import { findPackageRoot, localBuildPath } from '../src/native/load-addon.js';
import { simulatorAddon } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const expected = { unary: UNARY_ORDER, binary: BINARY_ORDER, reduce: REDUCE_ORDER, dtype: DTYPE_ORDER };
const skipReason = simulatorSkipReason();
const realBuild = localBuildPath(findPackageRoot());

describe('native codes', () => {
  it.skipIf(skipReason !== undefined)(`match the simulator addon${skipReason ? ` (${skipReason})` : ''}`, () => {
    expect(simulatorAddon().opNames()).toEqual(expected);
    expect(simulatorAddon().buildInfo()).toMatchObject({ simulator: true, build: 'CUDA simulator', runtimeVersion: 13000 });
  });

  it.skipIf(!existsSync(realBuild))('match the CUDA addon (skipped: the CUDA addon is not built here, no nvcc)', () => {
    const addon = createRequire(import.meta.url)(realBuild) as CudaAddon;
    expect(addon.opNames()).toEqual(expected);
    expect(addon.buildInfo()).toMatchObject({ simulator: false, build: 'CUDA', architectures: '80-real,86-real,89-real,90' });
    expect(addon.configureSimulator).toBeUndefined();
  });
});
