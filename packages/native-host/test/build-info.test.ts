// What each GPU addon says about its build: the simulator addon, and the real one where it is built
// (its op and dtype codes, from the shared host's kiln/op_codes.h, and no simulator controls).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { BINARY_ORDER, DTYPE_ORDER, REDUCE_ORDER, UNARY_ORDER } from '../../core/src/native-backend/codes.js';
import { SIMULATED_BACKENDS } from './support/backends.js';

/** The part of a real addon this test reads. */
interface RealAddon {
  buildInfo(): unknown;
  opNames(): unknown;
  configureSimulator?: unknown;
}

describe.each(SIMULATED_BACKENDS)('$name build info', (target) => {
  it.skipIf(target.skipReason !== undefined)(
    `of the simulator addon${target.skipReason ? ` (${target.skipReason})` : ''}`,
    () => {
      expect(target.buildInfo()).toMatchObject(target.simulatorBuild);
    },
  );

  const real = target.realAddon;
  it.skipIf(!existsSync(real.path))(
    `and codes of the ${target.name} addon${existsSync(real.path) ? '' : ` (skipped: ${real.absentReason})`}`,
    () => {
      const addon = createRequire(import.meta.url)(real.path) as RealAddon;
      expect(addon.buildInfo()).toMatchObject(real.build);
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
