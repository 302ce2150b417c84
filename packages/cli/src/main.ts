/** Entry point of the `kiln` binary (bin/kiln.js imports the built copy of this file). */
import { once } from 'node:events';
import { runCli } from './run-cli.js';

// Output piped into `head` and closed early is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await runCli(process.argv.slice(2));
if (process.stdout.writableNeedDrain) await once(process.stdout, 'drain');
// Exit explicitly: a backend may keep handles (worker pools, devices) that would hold the process open.
process.exit(code);
