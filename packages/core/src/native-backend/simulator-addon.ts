/**
 * The simulator addon of a native backend (kiln_<name>_sim.node: the same host sources with the
 * kernels run on the CPU by @kiln/gpu-sim), loaded once on first use: a test vehicle shared by the
 * GPU backends' `simulator.ts`, never something to train on.
 */

/** Access to one simulator addon. */
export interface SimulatorAddon<Addon, Configuration> {
  /** The addon, loaded on first use (throws when it was not built). */
  addon(): Addon;
  /** True when the addon exists and loads. */
  available(): boolean;
  /** Reshapes the simulated machine (the addon's test-only configureSimulator). */
  configure(configuration: Configuration): void;
}

/** A lazily loaded simulator addon; `load` throws when it was not built. */
export function simulatorAddon<
  Addon extends { configureSimulator?: (configuration: Configuration) => void },
  Configuration,
>(load: () => Addon): SimulatorAddon<Addon, Configuration> {
  let loaded: Addon | undefined;
  const addon = (): Addon => (loaded ??= load());
  return {
    addon,
    available: () => {
      try {
        addon();
        return true;
      } catch {
        return false;
      }
    },
    configure: (configuration) => {
      const configure = addon().configureSimulator;
      if (configure === undefined)
        throw new TypeError('this addon is not a simulator build: it has no configureSimulator()');
      configure.call(addon(), configuration);
    },
  };
}
