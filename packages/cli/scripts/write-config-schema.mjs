// Writes kiln.schema.json (the JSON Schema of a kiln.yaml config, shipped in this package) from
// the trainer's zod schema and docs/configuration.md's descriptions (`pnpm --filter @kiln/cli
// schema` after a build). test/config-schema.test.ts fails when the file differs from them.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderConfigSchema } from '../dist/index.js';

const reference = readFileSync(fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url)), 'utf8');
const target = fileURLToPath(new URL('../kiln.schema.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(renderConfigSchema(reference), null, 2)}\n`);
console.log(`wrote ${target}`);
