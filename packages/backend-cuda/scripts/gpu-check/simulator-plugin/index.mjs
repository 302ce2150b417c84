// The CUDA backend running on the CPU simulator addon (build/sim/Release/kiln_cuda_sim.node), as a
// backend plugin named 'cuda-sim': `KILN_BACKENDS=<this directory> kiln train --device cuda-sim`
// runs the CLI's whole flow (train, bench, --profile, --resume) through the real host code and
// kernel sources without a GPU. A test vehicle for gpu-check --simulator and the CLI's tests
// (tiny shapes only: the simulator is slow); never registered for users.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const addonPath = fileURLToPath(new URL('../../../build/sim/Release/kiln_cuda_sim.node', import.meta.url));
const packageEntry = new URL('../../../dist/index.js', import.meta.url);

/** The plugin (discovery takes the default export). */
const plugin = {
  name: 'cuda-sim',
  apiVersion: 1,
  priority: 0,
  probe() {
    if (!existsSync(addonPath))
      return {
        available: false,
        reason: `the simulator addon is not built (${addonPath}): run KILN_CUDA_BUILD=sim pnpm --filter @kiln/backend-cuda build`,
        devices: [],
      };
    if (!existsSync(fileURLToPath(packageEntry)))
      return { available: false, reason: '@kiln/backend-cuda is not built (dist/ is missing)', devices: [] };
    return { available: true, devices: [{ name: 'CUDA simulator (CPU)' }] };
  },
  async create(options = {}) {
    const { CudaBackend } = await import(packageEntry.href);
    const addon = createRequire(import.meta.url)(addonPath);
    // The registry requires a created backend to carry its plugin's name.
    class SimulatedCudaBackend extends CudaBackend {
      name = plugin.name;
    }
    return new SimulatedCudaBackend(addon, { matmul: 'kiln', ...options });
  },
};

export default plugin;
