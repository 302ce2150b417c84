// What the Metal addon says about its build. Its op and dtype codes (opNames) come from the shared
// host's kiln/op_codes.h, from which core's codes.ts is generated: @kiln/native-host tests them on
// both simulators; here they are checked on the real Metal addon where it is built.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { MetalAddon } from '../src/native/addon-types.js';
import { BINARY_ORDER, DTYPE_ORDER, REDUCE_ORDER, UNARY_ORDER } from '../src/native/codes.js';
import { findPackageRoot, localBuildPath } from '../src/native/load-addon.js';
import { simulatorAddon } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const simulatorSkip = simulatorSkipReason();
const metalBuild = localBuildPath(findPackageRoot());

describe('Metal build info', () => {
  it.skipIf(simulatorSkip !== undefined)(`of the simulator addon${simulatorSkip ? ` (${simulatorSkip})` : ''}`, () => {
    expect(simulatorAddon().buildInfo()).toMatchObject({
      simulator: true,
      build: 'Metal simulator',
      languageVersion: '3.0',
    });
  });

  it.skipIf(!existsSync(metalBuild))(
    'and codes of the Metal addon (skipped: the Metal addon builds on macOS only)',
    () => {
      const addon = createRequire(import.meta.url)(metalBuild) as MetalAddon;
      expect(addon.buildInfo()).toMatchObject({ simulator: false, build: 'Metal', languageVersion: '3.0' });
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
