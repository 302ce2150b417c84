// The op and dtype codes of src/native/codes.ts must match the addon's (@kiln/native-host: include/kiln/op_codes.h),
// for the simulator build and for the Metal build where it exists (macOS).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { MetalAddon } from '../src/native/addon-types.js';
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
    expect(simulatorAddon().buildInfo()).toMatchObject({ simulator: true, build: 'Metal simulator', languageVersion: '3.0' });
  });

  it.skipIf(!existsSync(realBuild))('match the Metal addon (skipped: the Metal addon builds on macOS only)', () => {
    const addon = createRequire(import.meta.url)(realBuild) as MetalAddon;
    expect(addon.opNames()).toEqual(expected);
    expect(addon.buildInfo()).toMatchObject({ simulator: false, build: 'Metal', languageVersion: '3.0' });
    expect(addon.configureSimulator).toBeUndefined();
  });
});
