// describeMatmulPath: which kernel family capabilities name for kiln's own f16/bf16 matmul, by the
// device's compute capability (wgmma on 9.0 with sm_90a code, mma.sync from 8.0, WMMA below), and
// cuBLAS when it is loaded.
import { describe, expect, it } from 'vitest';
import { describeMatmulPath, halfMatmulKernelFamily } from '../src/matmul-path.js';
import type { NativeMatmulInfo } from '../src/native/addon-types.js';

const kilnInfo: NativeMatmulInfo = {
  path: 'kiln',
  requested: 'auto',
  cublasLocation: '',
  cublasVersion: '',
  cublasReason: 'cuBLAS was not loaded: not found',
  allowTf32: false,
  cublasCalls: 0,
  simulatedTensorCores: false,
  hopperKernels: false,
  wgmmaLaunches: 0,
  kilnTf32: false,
  splitKLaunches: 0,
  wgmmaAttentionLaunches: 0,
  wgmmaAttentionBackwardLaunches: 0,
  transposeCopyLaunches: 0,
  packedCastLaunches: 0,
  f32K16Launches: 0,
};

const cublasInfo: NativeMatmulInfo = {
  ...kilnInfo,
  path: 'cublas',
  cublasLocation: '/lib/libcublas.so.13',
  cublasVersion: '13.1.0',
  cublasReason: '',
};

describe('matmul path description', () => {
  it('names the pipelined mma.sync kernel from compute capability 8.0 and WMMA below', () => {
    expect([6, 7, 8, 9, 10, 12].map((major) => halfMatmulKernelFamily(major, false))).toEqual([
      'wmma',
      'wmma',
      'mma.sync',
      'mma.sync',
      'mma.sync',
      'mma.sync',
    ]);
    const ampere = describeMatmulPath(kilnInfo, 8);
    expect(ampere.bf16).toMatch(/^kiln pipelined mma\.sync tensor-core kernel \(sm_80\+/);
    expect(ampere.f16).toBe(ampere.bf16);
    expect(ampere.summary).toBe(
      'kiln kernels: f32 register-tiled SIMT, f16/bf16 pipelined mma.sync tensor cores; cuBLAS was not loaded: not found',
    );
    const turing = describeMatmulPath(kilnInfo, 7);
    expect(turing.bf16).toBe('kiln WMMA tensor-core kernel');
    expect(turing.summary).toContain('f16/bf16 WMMA tensor cores');
  });

  it('names the wgmma + TMA kernel on compute capability 9.0 when the binary has sm_90a code for it', () => {
    expect([8, 9, 10, 12].map((major) => halfMatmulKernelFamily(major, true))).toEqual([
      'mma.sync',
      'wgmma',
      'mma.sync',
      'mma.sync',
    ]);
    const hopper = describeMatmulPath({ ...kilnInfo, hopperKernels: true }, 9);
    expect(hopper.bf16).toMatch(
      /^kiln warp-specialised wgmma \+ TMA kernel \(sm_90a, .*the pipelined mma\.sync tensor-core kernel otherwise/,
    );
    expect(hopper.summary).toBe(
      'kiln kernels: f32 register-tiled SIMT, f16/bf16 wgmma + TMA (large) / pipelined mma.sync tensor cores; cuBLAS was not loaded: not found',
    );
    expect(describeMatmulPath(kilnInfo, 9).bf16).toMatch(/^kiln pipelined mma\.sync/);
  });

  it('describes cuBLAS whatever the device', () => {
    const info = cublasInfo;
    expect(describeMatmulPath(info, 9).bf16).toBe('cuBLAS tensor cores, f32 accumulation');
    expect(describeMatmulPath(info, 9).summary).toBe(
      'cuBLAS 13.1.0 (/lib/libcublas.so.13): f32 (TF32 off), f16/bf16 with f32 accumulation',
    );
  });

  it("says f16/bf16 go per shape with matmul 'auto' on a GPU running kiln's sm_90a kernels, and all to cuBLAS with matmul 'cublas'", () => {
    const info: NativeMatmulInfo = { ...cublasInfo, hopperKernels: true };
    const auto = describeMatmulPath(info, 9);
    expect(auto.bf16).toMatch(
      /^kiln's own wgmma \+ TMA \/ mma\.sync kernels for problems they run without splitting k/,
    );
    expect(auto.f16).toBe(auto.bf16);
    expect(auto.f32).toBe('cuBLAS, full f32 (TF32 off)');
    expect(auto.summary).toBe(
      "cuBLAS 13.1.0 (/lib/libcublas.so.13): f32 (TF32 off), f16/bf16 per shape (kiln's own kernels where they need no split along k, cuBLAS elsewhere)",
    );
    expect(describeMatmulPath({ ...info, requested: 'cublas' }, 9).bf16).toBe('cuBLAS tensor cores, f32 accumulation');
  });

  it('rejects a major version that is not a non-negative integer', () => {
    expect(() => halfMatmulKernelFamily(8.6, false)).toThrow(/major version must be a non-negative integer, got 8\.6/);
  });
});
