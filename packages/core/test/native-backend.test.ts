// @kiln/core/native-backend: the TS layer native backends share. Messages carry the backend's
// name; the loader tries the prebuilt package, then the local build, then throws one error.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BackendUnavailableError,
  DTypeError,
  InvalidArgumentError,
  KilnError,
  OutOfMemoryError,
  ShapeError,
} from '../src/errors.js';
import type { Capabilities, MemoryInfo } from '../src/backend/kernel-backend.js';
import {
  checkAttentionInputs,
  DTYPE_CODE,
  loadNativeAddon,
  localBuildReport,
  nativeArgumentChecks,
  nativeErrorMapping,
  NativeBuffer,
  NativeFusedKernels,
  NativeKernelBackend,
  type NativeAddonSearch,
  type NativeKernelMethods,
} from '../src/native-backend/index.js';

const owner = {};
const checks = nativeArgumentChecks('rocm');

function buffer(byteLength: number): NativeBuffer {
  return new NativeBuffer(byteLength, 7, owner);
}

describe('nativeArgumentChecks', () => {
  it('prefixes every message with the backend name', () => {
    expect(() => checks.checkInteger(-1, 'alloc: byteLength')).toThrow(
      /^rocm backend: alloc: byteLength must be an integer ≥ 0, got -1/,
    );
    expect(() => checks.resolveBuffer(new NativeBuffer(4, 1, {}), owner, 'free')).toThrow(
      /^rocm backend: free got a buffer that this backend did not allocate/,
    );
  });

  it('rejects freed buffers and views that leave their buffer', () => {
    const freed = buffer(16);
    freed.freed = true;
    expect(() => checks.resolveBuffer(freed, owner, 'download')).toThrow(InvalidArgumentError);
    expect(() =>
      checks.checkTensor({ buffer: buffer(8), dtype: 'f32', shape: [3] }, owner, 'unary', 'x', false),
    ).toThrow(/rocm backend: unary: x \(f32 \[3\]\) reaches elements 0 to 2, outside its 8-byte buffer/);
  });

  it('describes a valid tensor as the addon takes it', () => {
    const checked = checks.checkTensor({ buffer: buffer(24), dtype: 'f16', shape: [2, 3] }, owner, 'unary', 'x', false);
    expect(checked.count).toBe(6);
    expect(checked.native).toEqual({ buffer: 7, dtype: DTYPE_CODE.get('f16'), shape: [2, 3] });
  });

  it('checks dtypes, shapes and counts with typed errors', () => {
    const tensor = checks.checkTensor({ buffer: buffer(64), dtype: 'i32', shape: [4] }, owner, 'k', 'x', false);
    expect(() => checks.expectFloat(tensor, 'k', 'x')).toThrow(DTypeError);
    expect(() => checks.expectShape(tensor, [2, 2], 'k', 'x')).toThrow(ShapeError);
    expect(() =>
      checks.checkTensorOf({ buffer: buffer(64), dtype: 'f32', shape: [4] }, owner, 'k', 'out', 'f32', 5, 'rows'),
    ).toThrow(/rocm backend: k: out f32 \[4\] has 4 elements, expected 5 \(rows\)/);
  });

  it('refuses a missing or non-object tensor ref with a typed error naming the role', () => {
    for (const bad of [undefined, null, 2]) {
      expect(() =>
        checks.checkTensorOf(bad as never, owner, 'adamwMulti', 'options.gradientScale', 'f32', 1, 'one element'),
      ).toThrow(InvalidArgumentError);
    }
    expect(() => checks.checkTensor(undefined as never, owner, 'unary', 'x', false)).toThrow(
      /^rocm backend: unary: x must be a tensor ref, got undefined/,
    );
  });
});

const HEADS_MAJOR = ['heads-major'] as const;
const BOTH_LAYOUTS = ['heads-major', 'tokens-major'] as const;

describe('checkAttentionInputs', () => {
  it('names the grid unit and block rows of the backend', () => {
    const q = { buffer: buffer(4 * 2 ** 36), dtype: 'f32' as const, shape: [2 ** 20, 64, 2 ** 10, 1] };
    expect(() =>
      checkAttentionInputs(
        checks,
        { blockRows: 16, blockName: 'workgroups' },
        owner,
        'attention',
        q,
        q,
        q,
        null,
        { scale: 1, causal: false },
        HEADS_MAJOR,
      ),
    ).toThrow(/^rocm backend: attention: needs more than 2\^31 - 1 workgroups \(B · H · ⌈T \/ 16⌉\)/);
  });

  it('rejects negative mask strides only where the backend asks', () => {
    const q = { buffer: buffer(64), dtype: 'f32' as const, shape: [1, 1, 2, 2] };
    const mask = { buffer: buffer(16), dtype: 'f32' as const, shape: [1, 1, 2, 2], strides: [0, 0, -2, 1], offset: 2 };
    const params = { scale: 1, causal: false };
    expect(() =>
      checkAttentionInputs(
        checks,
        { blockRows: 64, blockName: 'blocks' },
        owner,
        'attention',
        q,
        q,
        q,
        mask,
        params,
        HEADS_MAJOR,
      ),
    ).not.toThrow();
    expect(() =>
      checkAttentionInputs(
        checks,
        { blockRows: 64, blockName: 'blocks', nonNegativeMaskStrides: true },
        owner,
        'attention',
        q,
        q,
        q,
        mask,
        params,
        HEADS_MAJOR,
      ),
    ).toThrow(/rocm backend: attention: mask strides must be non-negative, got \[0, 0, -2, 1\]/);
  });

  it('reads tokens-major shapes only where the backend lists the layout', () => {
    const grid = { blockRows: 64, blockName: 'blocks' };
    // Tokens-major q [B=1, Tq=3, Hq=4, D=2], k [1, Tk=5, Hkv=2, 2]: lse is [1, 4, 3] and the mask [1, 4, 3, 5].
    const q = { buffer: buffer(96), dtype: 'f32' as const, shape: [1, 3, 4, 2] };
    const k = { buffer: buffer(80), dtype: 'f32' as const, shape: [1, 5, 2, 2] };
    const params = { scale: 1, causal: true, layout: 'tokens-major' as const };
    expect(() => checkAttentionInputs(checks, grid, owner, 'attention', q, k, k, null, params, HEADS_MAJOR)).toThrow(
      /rocm backend: attention: this backend's attention kernels do not read layout 'tokens-major'/,
    );
    const call = checkAttentionInputs(checks, grid, owner, 'attention', q, k, k, null, params, BOTH_LAYOUTS);
    expect(call.rowShape).toEqual([1, 4, 3]);
    expect(call.params).toEqual(params);
    const mask = {
      buffer: buffer(240),
      dtype: 'f32' as const,
      shape: [1, 4, 3, 5],
      strides: [60, 15, 5, 1],
      offset: 0,
    };
    expect(() =>
      checkAttentionInputs(checks, grid, owner, 'attention', q, k, k, mask, params, BOTH_LAYOUTS),
    ).not.toThrow();
    const oddHeads = { buffer: buffer(72), dtype: 'f32' as const, shape: [1, 3, 3, 2] };
    expect(() =>
      checkAttentionInputs(checks, grid, owner, 'attention', oddHeads, k, k, null, params, BOTH_LAYOUTS),
    ).toThrow(/query heads \(3\) must be a multiple of key\/value heads \(2/);
    expect(() =>
      checkAttentionInputs(
        checks,
        grid,
        owner,
        'attention',
        q,
        k,
        k,
        null,
        { scale: 1, causal: true, layout: 'rows' as never },
        BOTH_LAYOUTS,
      ),
    ).toThrow(/params.layout must be 'heads-major' or 'tokens-major', got rows/);
  });
});

class RocmError extends KilnError {}

describe('nativeErrorMapping', () => {
  const mapping = nativeErrorMapping((failure, options) => new RocmError(failure.message, 'KILN_ERROR', options));
  const failure = (kilnKind: string, extra: object = {}) =>
    Object.assign(new Error('boom'), { kilnKind, hint: 'fix it' }, extra);

  it('maps each kind to its KilnError and device failures to the backend class', () => {
    expect(() =>
      mapping.callNative(() => {
        throw failure('SHAPE_MISMATCH');
      }),
    ).toThrow(ShapeError);
    expect(() =>
      mapping.callNative(() => {
        throw failure('DEVICE');
      }),
    ).toThrow(RocmError);
    const oom = mapping.toKilnError(failure('OUT_OF_MEMORY', { requestedBytes: 64 })) as OutOfMemoryError;
    expect(oom).toBeInstanceOf(OutOfMemoryError);
    expect(oom.requestedBytes).toBe(64);
    expect(oom.hint).toBe('fix it');
  });

  it('passes other errors through, sync and async', async () => {
    const plain = new TypeError('not native');
    expect(mapping.toKilnError(plain)).toBe(plain);
    await expect(mapping.awaitNative(Promise.reject(failure('INVALID_ARGUMENT')))).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });
});

describe('loadNativeAddon', () => {
  function search(root: string, modules: Record<string, unknown>, published = true): NativeAddonSearch {
    return {
      packageName: 'kiln-backend-rocm',
      version: '1.2.0',
      addonName: 'ROCm',
      platformLabel: 'linux-x64',
      prebuiltPackage: published ? 'kiln-backend-rocm-linux-x64' : undefined,
      unpublishedPackage: 'kiln-backend-rocm-linux-arm64',
      binaryName: 'kiln_rocm.node',
      localBuildPath: join(root, 'build', 'kiln_rocm.node'),
      missingLocalBuild: () => localBuildReport(root, 'rocm', 'not built (run the build)'),
      buildSolution: 'build it locally',
      docsPage: 'README.md',
      require: (specifier) => {
        if (!(specifier in modules))
          throw Object.assign(new Error(`Cannot find module '${specifier}'`), { code: 'MODULE_NOT_FOUND' });
        return modules[specifier];
      },
    };
  }

  it('loads the prebuilt package of the same version first', () => {
    const root = mkdtempSync(join(tmpdir(), 'kiln-native-loader-'));
    const loaded = loadNativeAddon(
      search(root, {
        'kiln-backend-rocm-linux-x64/package.json': { version: '1.2.0' },
        'kiln-backend-rocm-linux-x64/kiln_rocm.node': { label: 'prebuilt' },
      }),
    );
    expect(loaded).toMatchObject({
      source: 'prebuilt',
      location: 'kiln-backend-rocm-linux-x64',
      addon: { label: 'prebuilt' },
      attempts: [],
    });
  });

  it('falls back to the local build, recording why the prebuilt one did not load', () => {
    const root = mkdtempSync(join(tmpdir(), 'kiln-native-loader-'));
    mkdirSync(join(root, 'build'));
    writeFileSync(join(root, 'build', 'kiln_rocm.node'), '');
    const loaded = loadNativeAddon(
      search(root, {
        'kiln-backend-rocm-linux-x64/package.json': { version: '1.1.0' },
        [join(root, 'build', 'kiln_rocm.node')]: { label: 'local' },
      }),
    );
    expect(loaded.source).toBe('local build');
    expect(loaded.attempts[0].error).toBe(
      'kiln-backend-rocm-linux-x64@1.1.0 does not match kiln-backend-rocm@1.2.0; both must have the same version',
    );
  });

  it('throws one BackendUnavailableError listing every attempt and the solutions', () => {
    const root = mkdtempSync(join(tmpdir(), 'kiln-native-loader-'));
    mkdirSync(join(root, 'build'));
    writeFileSync(
      join(root, 'build', 'native-build.json'),
      JSON.stringify({ rocm: { status: 'skipped', reason: 'hipcc was not found' } }),
    );
    let error: unknown;
    try {
      loadNativeAddon(search(root, {}, false));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(BackendUnavailableError);
    const message = (error as Error).message;
    expect(message).toContain('The ROCm addon of kiln-backend-rocm could not be loaded on linux-x64. Attempts:');
    expect(message).toContain('prebuilt kiln-backend-rocm-linux-arm64: no prebuilt binary is published for linux-x64');
    expect(message).toContain(
      'local build ' + join(root, 'build', 'kiln_rocm.node') + ': not built: hipcc was not found',
    );
    expect((error as KilnError).hint).toBe(
      'Possible solutions: build it locally; or use another backend: KILN_DEVICE=cpu. See README.md.',
    );
  });
});

describe('NativeKernelBackend', () => {
  class FakeFused extends NativeFusedKernels {
    protected checkScalar(): void {}
    protected checkIgnoreIndex(): void {}
  }
  class FakeBuffer extends NativeBuffer {}
  /** A backend over a fake addon that records the calls it receives. */
  class FakeBackend extends NativeKernelBackend {
    readonly name = 'fake';
    readonly capabilities = {} as Capabilities;
    protected readonly fused: FakeFused;
    readonly calls: string[];
    constructor(operandsMatchOutputDType: boolean) {
      const calls: string[] = [];
      let next = 0;
      const native = new Proxy(
        {},
        {
          get:
            (_target, method: string) =>
            (...args: unknown[]) => {
              calls.push(method);
              return method === 'alloc' ? ++next : args[0];
            },
        },
      ) as NativeKernelMethods;
      const checks = nativeArgumentChecks('fake');
      const errors = nativeErrorMapping((failure, options) => new KilnError(failure.message, 'KILN_ERROR', options));
      super({
        checks,
        errors,
        native,
        operandsMatchOutputDType,
        createBuffer: (byteLength, id, owner) => new FakeBuffer(byteLength, id, owner),
        attentionGrid: { blockRows: 64, blockName: 'blocks' },
        flashAttentionMaxHeadDim: 128,
      });
      this.calls = calls;
      this.fused = new FakeFused(checks, errors, native, this);
    }
    memory(): MemoryInfo {
      return { allocatedBytes: 0, bufferCount: 0 };
    }
  }

  it('allocates the subclass buffer, checks arguments, then calls the addon', () => {
    const backend = new FakeBackend(false);
    const buffer = backend.alloc(16);
    expect(buffer).toBeInstanceOf(FakeBuffer);
    const f32 = { buffer, dtype: 'f32' as const, shape: [4] };
    backend.unary('exp', f32, f32);
    expect(() => backend.unary('exp', f32, { buffer, dtype: 'f32', shape: [5] })).toThrow(
      /^fake backend: unary: out \(f32 \[5\]\) reaches elements 0 to 4, outside its 16-byte buffer/,
    );
    expect(backend.calls).toEqual(['alloc', 'unary']);
  });

  it('checks binary operands against out only where the backend asks', () => {
    for (const strict of [false, true]) {
      const backend = new FakeBackend(strict);
      const buffer = backend.alloc(16);
      const call = () =>
        backend.binary(
          'add',
          { buffer, dtype: 'f16', shape: [4], strides: [1], offset: 0 },
          { buffer, dtype: 'f32', shape: [4], strides: [1], offset: 0 },
          { buffer, dtype: 'f32', shape: [4] },
        );
      if (strict) expect(call).toThrow(/^fake backend: binary: a must be f32, got f16 \[4\]/);
      else expect(call).not.toThrow();
    }
  });

  it('refuses every call after dispose, naming the operation', () => {
    const backend = new FakeBackend(false);
    backend.dispose();
    expect(() => backend.alloc(4)).toThrow(/^fake backend: alloc on a disposed backend/);
    expect(backend.calls).toEqual(['dispose']);
  });
});
