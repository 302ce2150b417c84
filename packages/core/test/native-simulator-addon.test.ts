// simulatorAddon (core/native-backend): loads once on first use, reports a missing build as
// unavailable, and configures only a simulator build.
import { describe, expect, it } from 'vitest';
import { simulatorAddon } from '../src/native-backend/index.js';

describe('simulatorAddon', () => {
  it('loads the addon once, on first use, and forwards configure()', () => {
    const seen: unknown[] = [];
    let loads = 0;
    const simulator = simulatorAddon<
      { configureSimulator(configuration: { memoryBytes: number }): void },
      { memoryBytes: number }
    >(() => {
      loads++;
      return {
        configureSimulator: (configuration) => {
          seen.push(configuration);
        },
      };
    });
    expect(loads).toBe(0);
    expect(simulator.available()).toBe(true);
    simulator.configure({ memoryBytes: 16 });
    expect(simulator.addon()).toBe(simulator.addon());
    expect(loads).toBe(1);
    expect(seen).toEqual([{ memoryBytes: 16 }]);
  });

  it('is unavailable when the build is missing, and refuses to configure a non-simulator addon', () => {
    const missing = simulatorAddon<{ configureSimulator?: (configuration: object) => void }, object>(() => {
      throw new Error('kiln_x_sim.node was not built');
    });
    expect(missing.available()).toBe(false);
    expect(() => missing.addon()).toThrow(/was not built/);
    const real = simulatorAddon<{ configureSimulator?: (configuration: object) => void }, object>(() => ({}));
    expect(() => real.configure({})).toThrow(/not a simulator build/);
  });
});
