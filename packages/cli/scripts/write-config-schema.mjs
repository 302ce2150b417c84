// Writes kiln.schema.json (the JSON Schema of a kiln.yaml config, shipped in this package) from
// the trainer's zod schema (`pnpm --filter @kiln/cli schema` after a build).
// test/config-schema.test.ts fails when the file differs from it.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { trainConfigJsonSchema } from '@kiln/trainer';

const target = fileURLToPath(new URL('../kiln.schema.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(trainConfigJsonSchema(), null, 2)}\n`);
console.log(`wrote ${target}`);
