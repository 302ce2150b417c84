/**
 * The messages a new user meets (issue 16), each pinned by its exit code and first line: device
 * requests, device fallback, the warmup note, and `kiln info` with a bad request.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerInstallCommand } from '../src/bench/peers.js';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

const directory = mkdtempSync(join(tmpdir(), 'kiln-messages-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function firstLine(text: string): string {
  return text.split('\n')[0];
}

/** Metal never applies on Linux, so a request for it fails the same way on every Linux machine. */
const linuxOnly = it.skipIf(process.platform !== 'linux');

describe('device requests', () => {
  it('answers a generic name with the names to choose from, not a package to install (exit 2)', async () => {
    const run = await runKiln(['train', '--steps', '5', '--device', 'gpu']);
    expect(run.code).toBe(2);
    expect(firstLine(run.stderr)).toBe(`error: Backend 'gpu' requested by --device ("gpu") is not installed`);
    expect(run.stderr).toMatch(
      /^ {2}hint: Choose one of: cuda, metal, cpu \(installed: [a-z, ]*cpu[a-z, ]*\)\. 'gpu' is not a backend name: use 'cuda' for an NVIDIA GPU, 'metal' for an Apple GPU\./m,
    );
    expect(run.stderr).not.toMatch(/backend-gpu/);
  });

  it('suggests a plugin package only for a name that could be a plugin', async () => {
    const run = await runKiln(['info', '--device', 'rocm']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/hint: Choose one of: .*If 'rocm' is a plugin, install kiln-backend-rocm /);
    expect(run.stderr).not.toContain('@kiln/backend-rocm');
  });

  linuxOnly('offers --allow-device-fallback where it applies (train) and nowhere else', async () => {
    const train = await runKiln(['train', '--steps', '1', '--device', 'metal']);
    expect(train.code).toBe(1);
    expect(firstLine(train.stderr)).toBe(`error: Backend 'metal' requested by --device ("metal") cannot be used`);
    expect(train.stderr).toMatch(
      /hint: .*Or pass --allow-device-fallback \(or set KILN_ALLOW_DEVICE_FALLBACK=1, or device\.allowDeviceFallback: true in the config\) to use the best available backend instead\./,
    );
    const generate = await runKiln(['generate', '--checkpoint', directory, '--device', 'metal']);
    expect(generate.code).toBe(1);
    expect(firstLine(generate.stderr)).toBe(`error: Backend 'metal' requested by --device ("metal") cannot be used`);
    expect(generate.stderr).not.toMatch(/fallback/i);
  });

  linuxOnly('falls back with the flag or the variable, warning on stderr where the request came from', async () => {
    const output = join(directory, 'fallback');
    const withFlag = await runKiln([
      'train',
      '--steps',
      '1',
      '--device',
      'metal',
      '--allow-device-fallback',
      '--output',
      output,
    ]);
    expect(withFlag.code, withFlag.stderr).toBe(0);
    expect(firstLine(withFlag.stderr)).toMatch(
      /^warning: --device \("metal"\) asked for 'metal', which cannot be used \(unavailable: Metal is only available on macOS/,
    );
    expect(withFlag.stdout).not.toMatch(/warning/);
    expect(firstLine(withFlag.stdout)).toMatch(/^backend: cpu .* after 'metal' failed \(fallback allowed\)$/);

    const config = join(directory, 'metal.yaml');
    writeFileSync(config, 'device:\n  device: metal\nschedule:\n  steps: 1\n');
    const fromFile = await runKiln(['train', '--config', config, '--output', `${output}-file`], {
      env: { KILN_ALLOW_DEVICE_FALLBACK: '1' },
    });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(firstLine(fromFile.stderr)).toMatch(
      new RegExp(`^warning: device\\.device in ${config.replace(/[.\\/]/g, '\\$&')} \\("metal"\\) asked for 'metal'`),
    );

    const badSwitch = await runKiln(['train', '--steps', '1', '--device', 'metal'], {
      env: { KILN_ALLOW_DEVICE_FALLBACK: 'yes' },
    });
    expect(badSwitch.code).toBe(2);
    expect(firstLine(badSwitch.stderr)).toBe('error: KILN_ALLOW_DEVICE_FALLBACK="yes" is not a switch');
  });
});

describe('the warmup note', () => {
  it('says nothing when the user set no warmup (the default follows --steps)', async () => {
    const run = await runKiln(['train', '--steps', '5', '--device', 'gpu']);
    expect(run.stdout + run.stderr).not.toMatch(/warmup/);
  });

  it("notes on stderr when --steps shortens the config file's own warmup", async () => {
    const config = join(directory, 'warmup.yaml');
    writeFileSync(config, 'schedule:\n  warmupSteps: 40\n');
    const run = await runKiln(['train', '--config', config, '--steps', '30', '--device', 'gpu']);
    expect(run.code).toBe(2);
    expect(firstLine(run.stderr)).toBe(
      `note: schedule.warmupSteps 40 (from ${config}) is more than --steps 30; warming up for 3 steps instead (a tenth of the steps)`,
    );
  });
});

describe('kiln info with a request that cannot be met', () => {
  it('prints the whole report, marks the request, then fails (exit 2 for an unknown name)', async () => {
    const run = await runKiln(['info', '--device', 'bogus']);
    expect(run.code).toBe(2);
    expect(firstLine(run.stdout)).toMatch(/^platform: /);
    expect(run.stdout).toMatch(/^ {2}✓ cpu \(priority 100\): available$/m);
    expect(run.stdout).toMatch(/^ {2}✗ bogus: requested by --device \("bogus"\): not installed/m);
    expect(run.stdout).toMatch(/^selected: none — the request marked ✗ above cannot be met/m);
    expect(firstLine(run.stderr)).toBe(`error: Backend 'bogus' requested by --device ("bogus") is not installed`);
  });

  it('marks a device index that does not exist, from KILN_DEVICE (exit 1)', async () => {
    const run = await runKiln(['info'], { env: { KILN_DEVICE: 'cuda:99' } });
    expect(run.code).toBe(1);
    expect(firstLine(run.stdout)).toMatch(/^platform: /);
    expect(run.stdout).toMatch(/^ {2}✗ cuda \(priority 300\): requested by KILN_DEVICE \("cuda:99"\): /m);
    expect(firstLine(run.stderr)).toBe(`error: Backend 'cuda' requested by KILN_DEVICE ("cuda:99") cannot be used`);
    const json = await runKiln(['info', '--json'], { env: { KILN_DEVICE: 'cuda:99' } });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as {
      selected: string | null;
      backends: Array<{ name: string; reason: string }>;
    };
    expect(report.selected).toBeNull();
    expect(report.backends.find((backend) => backend.name === 'cuda')?.reason).toMatch(
      /^requested by KILN_DEVICE \("cuda:99"\)/,
    );
  });
});

describe('kiln bench', () => {
  it('says bench chose the backend when no --device was given', async () => {
    const run = await runKiln([
      'bench',
      '--model',
      'tiny',
      '--steps',
      '1',
      '--warmup',
      '0',
      '--cpu-threads',
      '1',
      '--no-kernels',
      '--no-generation',
      '--peers',
      'none',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(firstLine(run.stdout)).toMatch(
      /^backend: cpu .* — chosen: requested by the list of available backends kiln bench measures \("cpu"\)$/,
    );
    expect(run.stdout).not.toMatch(/device argument/);
  });

  it('tells an npm user how to install the TF.js peer', () => {
    const command = peerInstallCommand('tfjs-wasm');
    expect(command).toMatch(
      /^mkdir kiln-peers && cd kiln-peers && npm install @tensorflow\/tfjs@4\.22\.0 @tensorflow\/tfjs-backend-wasm@4\.22\.0, then run kiln bench with KILN_PEERS_DIR=/,
    );
    expect(command).not.toMatch(/pnpm|dev dependency/);
  });
});

describe('kiln doctor', () => {
  linuxOnly('with KILN_DEVICE naming a backend that cannot be used, says to unset it', async () => {
    const run = await runKiln(['doctor'], { env: { KILN_DEVICE: 'metal' } });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /^✗ KILN_DEVICE=metal asks for a backend that cannot be used: Backend 'metal' requested by KILN_DEVICE \("metal"\) cannot be used\n {4}fix: `unset KILN_DEVICE` \(kiln then picks the best available backend\), or set it to a backend marked ✓ above\.$/m,
    );
    expect(run.stdout).not.toMatch(/Reinstall @kiln\/cli/);
    const fine = await runKiln(['doctor'], { env: { KILN_DEVICE: 'cpu' } });
    expect(fine.code).toBe(0);
    expect(fine.stdout).toMatch(/^✓ backend 'cpu' \(KILN_DEVICE=cpu\) resolves and computes correctly$/m);
  });
});

describe('kiln info on the CPU', () => {
  it("calls the CPU backend's memory the machine's RAM and says kiln turned relaxed SIMD on (not an instruction)", async () => {
    const run = await runKiln(['info']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^ {6}cpu: .+, \d+(\.\d+)? [KMGT]i?B RAM$/m);
    expect(run.stdout).toMatch(/^ {2}memory: +\S+ \S+ RAM, \S+ \S+ free$/m);
    expect(run.stdout).not.toMatch(/unified/);
    expect(run.stdout).not.toMatch(/\(enabled with --experimental-wasm-relaxed-simd\)/);
  });
});

describe('the loss on the console and in metrics.jsonl', () => {
  it('is the same named quantity: the mean over the steps since the previous line', async () => {
    const output = join(directory, 'loss');
    const run = await runKiln(['train', '--steps', '20', '--output', output]);
    expect(run.code, run.stderr).toBe(0);
    const records = readFileSync(join(output, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: number; loss: number });
    const printed = [...run.stdout.matchAll(/^step (\d+)\/20 mean loss (\d+\.\d{3}) \(steps (\d+)–(\d+)\) /gm)].map(
      (match) => match.slice(1).map(Number),
    );
    expect(printed.length).toBeGreaterThan(1);
    for (const [step, loss, from, to] of printed) {
      const record = records.find((candidate) => candidate.step === step);
      expect(record, `metrics.jsonl has step ${step}`).toBeDefined();
      expect(loss).toBe(Number(record!.loss.toFixed(3)));
      expect(to).toBe(step);
      expect(from).toBe((records[records.indexOf(record!) - 1]?.step ?? 0) + 1);
    }
  });
});

describe('data too small or not text', () => {
  it('gives advice that fits a training split too small for the context (and says where config keys go)', async () => {
    const data = join(directory, 'tiny.txt');
    writeFileSync(data, 'hello world!\n');
    const run = await runKiln(['train', '--data', data, '--output', join(directory, 'tiny-run')]);
    expect(run.code).toBe(2);
    expect(firstLine(run.stderr)).toBe(
      `error: ${data}: the training split has 12 tokens; it needs at least contextLength + 2 = 66 (13 tokens in all, validationFraction 0.1)`,
    );
    expect(run.stderr).toContain(
      'hint: Provide at least ~660 tokens, or train on shorter windows (--sequence-length, or a lower model.contextLength in a YAML file passed with --config).',
    );
    expect(run.stderr).not.toMatch(/raise data\.validationFraction/);
  });

  it('counts one file as "1 file"', async () => {
    const folder = join(directory, 'binary-only');
    mkdirSync(folder);
    writeFileSync(join(folder, 'blob.txt'), Buffer.from([0, 1, 2, 0, 255, 0, 3]));
    const run = await runKiln(['train', '--data', folder, '--output', join(directory, 'binary-run')]);
    expect(run.code).toBe(2);
    expect(firstLine(run.stderr)).toMatch(/^error: no text found under .*binary-only \(1 file, 1 skipped as binary\)/);
  });
});
