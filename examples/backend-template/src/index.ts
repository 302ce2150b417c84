/**
 * kiln-backend-example — a kiln backend to copy. Installed next to @kiln/core, it is discovered
 * and registered automatically; select it with KILN_DEVICE=example or `--device example`.
 */
export { BACKEND_NAME } from './name.js';
export {
  ExampleBackend,
  createExampleBackend,
  exampleDeviceInfo,
  type ExampleBackendOptions,
} from './example-backend.js';
export { plugin } from './plugin.js';
import { plugin } from './plugin.js';

export default plugin;
