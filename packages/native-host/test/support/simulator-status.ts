// Whether a backend's simulator addon can be tested here: it must exist unless the build skipped it
// for a missing toolchain (then the reason is shown as the skip reason). A missing addon without a
// recorded skip is not hidden: create() then fails and so do the tests. Shared by the native-host
// suite and each GPU backend's own tests.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The build script's reason for skipping the simulator of the package at `packageRoot`, or undefined when it was built (or never attempted). */
export function simulatorSkipReason(packageRoot: string): string | undefined {
  const report = join(packageRoot, 'build', 'native-build.json');
  if (!existsSync(report)) return undefined;
  const sim = (JSON.parse(readFileSync(report, 'utf8')) as { sim?: { status?: string; reason?: string } }).sim;
  return sim?.status === 'skipped' ? `the simulator addon was not built: ${sim.reason}` : undefined;
}
