// Whether this package's simulator addon can be tested here (the shared helper of @kiln/native-host's tests).
import { fileURLToPath } from 'node:url';
import { simulatorSkipReason as skipReasonOf } from '../../native-host/test/support/simulator-status.js';

/** The build script's reason for skipping the simulator, or undefined when it was built (or never attempted). */
export function simulatorSkipReason(): string | undefined {
  return skipReasonOf(fileURLToPath(new URL('..', import.meta.url)));
}
