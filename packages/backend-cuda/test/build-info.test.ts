// What the CUDA addon says about its build. Its op and dtype codes (opNames) come from the shared
// host's kiln/op_codes.h, from which core's codes.ts is generated: @kiln/native-host tests them on
// both simulators; here they are checked on the real CUDA addon where it is built.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { CudaAddon } from '../src/native/addon-types.js';
import { BINARY_ORDER, DTYPE_ORDER, REDUCE_ORDER, UNARY_ORDER } from '../src/native/codes.js';
import { findPackageRoot, localBuildPath } from '../src/native/load-addon.js';
import { simulatorAddon } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const simulatorSkip = simulatorSkipReason();
const cudaBuild = localBuildPath(findPackageRoot());

describe('CUDA build info', () => {
  it.skipIf(simulatorSkip !== undefined)(`of the simulator addon${simulatorSkip ? ` (${simulatorSkip})` : ''}`, () => {
    expect(simulatorAddon().buildInfo()).toMatchObject({
      simulator: true,
      build: 'CUDA simulator',
      runtimeVersion: 13000,
    });
  });

  it.skipIf(!existsSync(cudaBuild))(
    'and codes of the CUDA addon (skipped: the CUDA addon is not built here, no nvcc)',
    () => {
      const addon = createRequire(import.meta.url)(cudaBuild) as CudaAddon;
      expect(addon.buildInfo()).toMatchObject({
        simulator: false,
        build: 'CUDA',
        architectures: '80-real,86-real,89-real,90',
      });
      expect(addon.opNames()).toEqual({
        dtype: DTYPE_ORDER,
        unary: UNARY_ORDER,
        binary: BINARY_ORDER,
        reduce: REDUCE_ORDER,
      });
      expect(addon.configureSimulator).toBeUndefined();
    },
  );
});
