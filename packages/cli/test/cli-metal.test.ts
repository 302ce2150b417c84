// `kiln info` and `kiln doctor` with @kiln/backend-metal installed (an optional dependency of the
// CLI) on a machine without Metal: info lists the metal backend (priority 200) with the probe's
// reason, doctor gives a diagnosis and a fix, and neither fails because the CPU still works. On a
// Mac where Metal is available, the unavailable-path checks are skipped with that reason.
import { beforeAll, describe, expect, it } from 'vitest';
import { backendFix } from '../src/backend-fixes.js';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

/** The probe reasons of the Metal backend (docs/backend-metal.md, Troubleshooting). */
const METAL_REASON =
  /^(unavailable: )?(Metal is only available on macOS|Metal addon not built or not loadable|No Metal GPU was found|.* is too old: kiln's Metal backend)/;

interface InfoBackend {
  name: string;
  available: boolean;
  reason: string | null;
  priority: number | null;
}

describe('kiln info and doctor with the Metal backend installed but unavailable', () => {
  it("info lists metal (priority 200) with the probe's reason, and still selects another backend", async (context) => {
    const run = await runKiln(['info', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { selected: string; backends: InfoBackend[] };
    const metal = report.backends.find((backend) => backend.name === 'metal');
    expect(metal, "the metal plugin is discovered from the CLI's optional dependency").toBeDefined();
    if (metal!.available) context.skip('a Metal GPU is available here');
    expect(metal).toMatchObject({ available: false, priority: 200 });
    expect(metal!.reason).toMatch(METAL_REASON);
    expect(report.selected).not.toBe('metal');
    const text = await runKiln(['info']);
    expect(text.stdout).toMatch(
      /^ {2}✗ metal \(priority 200\): (unavailable: )?(Metal is only available on macOS|Metal addon not built|No Metal GPU|.* is too old)/m,
    );
  });

  it('doctor gives the Metal diagnosis and its fix, and stays healthy', async (context) => {
    const run = await runKiln(['doctor', '--json']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const { healthy, checks } = JSON.parse(run.stdout) as {
      healthy: boolean;
      checks: Array<{ status: string; title: string; fix?: string; critical?: boolean }>;
    };
    const metal = checks.find((check) => check.title.startsWith("backend 'metal'"));
    expect(metal).toBeDefined();
    if (metal!.status === 'ok') context.skip('a Metal GPU is available here');
    expect(healthy).toBe(true);
    expect(metal!.critical).not.toBe(true);
    if (process.platform !== 'darwin') {
      // Off macOS Metal cannot apply: shown as not applicable, never as a failure beside "nothing to fix".
      expect(metal).toEqual({
        status: 'not-applicable',
        title: `backend 'metal' does not apply here: Metal needs macOS (this machine runs ${process.platform})`,
      });
      expect((await runKiln(['doctor'])).stdout).toMatch(/^– backend 'metal' does not apply here: Metal needs macOS/m);
      return;
    }
    expect(metal).toMatchObject({ status: 'fail' });
    expect(metal!.title).toMatch(
      /^backend 'metal' is unavailable: (Metal needs macOS|its native addon is not installed or not built|no Metal GPU|macOS is too old for Metal 3)/,
    );
    expect(metal!.fix).toMatch(/CPU|kiln-build-metal|KILN_DEVICE=cpu|Update macOS/);
  });
});

describe('the fixes doctor derives from Metal probe reasons', () => {
  it('maps every documented reason to a diagnosis and a fix', () => {
    expect(
      backendFix(
        'metal',
        'Metal is only available on macOS (Apple silicon or AMD GPUs); this machine runs linux-x64. Use KILN_DEVICE=cpu, or KILN_DEVICE=cuda with an NVIDIA GPU.',
      ),
    ).toEqual({ diagnosis: 'Metal needs macOS', fix: expect.stringMatching(/uses the CPU here/) });
    const unbuilt = backendFix(
      'metal',
      'Metal addon not built or not loadable. The Metal addon of @kiln/backend-metal could not be loaded on darwin-arm64: …',
    );
    expect(unbuilt.diagnosis).toBe('its native addon is not installed or not built');
    expect(unbuilt.fix).toMatch(/@kiln\/backend-metal-darwin-arm64.*npx kiln-build-metal.*could not be loaded/);
    expect(
      backendFix(
        'metal',
        "macOS 12.6 is too old: kiln's Metal backend needs macOS 13 (Ventura) or newer (Metal 3). Update macOS, or use KILN_DEVICE=cpu.",
      ).diagnosis,
    ).toBe('macOS is too old for Metal 3');
    expect(
      backendFix('metal', 'No Metal GPU was found (MTLCopyAllDevices returned none). Metal needs …').diagnosis,
    ).toBe('no Metal GPU');
  });
});
