// Writes docs/cli.md from the built CLI's own command definitions (`pnpm --filter @kiln/cli docs`
// after a build). test/cli-reference.test.ts fails when the file differs from them.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCliReference } from '../dist/index.js';

const target = fileURLToPath(new URL('../../../docs/cli.md', import.meta.url));
writeFileSync(target, renderCliReference());
console.log(`wrote ${target}`);
