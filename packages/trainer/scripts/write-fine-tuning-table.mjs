// Rewrites the generated family/option tables of docs/fine-tuning.md from the built trainer's
// registry (`pnpm --filter @kiln/trainer docs` after a build). test/docs-fine-tuning.test.ts
// fails when the file differs from them.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderFamilySupportTable, SUPPORT_TABLE_MARKERS } from '../dist/index.js';

const target = fileURLToPath(new URL('../../../docs/fine-tuning.md', import.meta.url));
const text = readFileSync(target, 'utf8');
const [begin, end] = SUPPORT_TABLE_MARKERS;
const start = text.indexOf(begin);
const stop = text.indexOf(end);
if (start < 0 || stop < start) throw new Error(`${target} lacks the markers ${begin} … ${end}`);
writeFileSync(target, `${text.slice(0, start + begin.length)}\n${renderFamilySupportTable()}${text.slice(stop)}`);
console.log(`wrote the family tables of ${target}`);
