// The build step off macOS: it must skip the Metal addon cleanly (exit 0) and say why; the report
// it leaves is what the loader quotes. The embed step inlines the shared headers of every .metal file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { embedShaders } from '../scripts/embed-shaders.mjs';

const script = fileURLToPath(new URL('../scripts/build-native.mjs', import.meta.url));
const kernels = fileURLToPath(new URL('../native/kernels', import.meta.url));

describe('scripts/build-native.mjs', () => {
  it.skipIf(process.platform === 'darwin')('skips the Metal addon off macOS with a clear message and exit 0', () => {
    const out = mkdtempSync(join(tmpdir(), 'kiln-metal-build-'));
    const result = spawnSync(process.execPath, [script, '--out', out], {
      encoding: 'utf8',
      env: { ...process.env, KILN_METAL_BUILD: 'metal' },
      timeout: 60_000,
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(
      `skipping the Metal addon: the Metal addon builds on macOS only (this is ${process.platform}-${process.arch})`,
    );
    const report = JSON.parse(readFileSync(join(out, 'native-build.json'), 'utf8')) as {
      metal: { status: string; reason: string };
    };
    expect(report.metal).toEqual({
      status: 'skipped',
      reason: `the Metal addon builds on macOS only (this is ${process.platform}-${process.arch})`,
    });
  });
});

describe('scripts/embed-shaders.mjs', () => {
  it('embeds every .metal file with its kiln headers inlined once and no file includes left', () => {
    const out = mkdtempSync(join(tmpdir(), 'kiln-metal-embed-'));
    const code = readFileSync(embedShaders(kernels, out), 'utf8');
    const files = readdirSync(kernels).filter((name) => name.endsWith('.metal'));
    for (const file of files) expect(code).toContain(`{"${file}",`);
    expect(code).not.toMatch(/#include "/);
    expect(code).toContain('#include <metal_stdlib>');
    // random.metal pulls softdouble.h, which pulls common.h, which pulls args.h and ops.h: each once.
    const random = code.slice(code.indexOf('{"random.metal"'), code.indexOf('{"reduce.metal"'));
    expect(random.match(/---- kiln_metal_args\.h ----/g)).toHaveLength(1);
    expect(random.match(/struct KilnRandomArgs \{/g)).toHaveLength(1);
  });
});
