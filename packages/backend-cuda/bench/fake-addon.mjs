// The fake CUDA addon the host-cost benchmarks share: its Backend accepts every call and does no
// work (alloc hands out ids), so what a benchmark times on it is all TypeScript.
import { FUSED_KERNELS, PRIMITIVE_KERNELS } from '@kiln/core';

/** An addon whose Backend accepts every call and does no work (alloc hands out ids). */
export function fakeAddon() {
  class Backend {
    constructor() {
      this.nextId = 1;
      this.sizes = new Map();
    }
    alloc(byteLength) {
      this.sizes.set(this.nextId, byteLength);
      return this.nextId++;
    }
    free(id) {
      this.sizes.delete(id);
    }
    captureBegin() {
      return 1;
    }
    deviceInfo() {
      return { index: 0, name: 'fake device', major: 9, minor: 0, totalBytes: 80e9, multiprocessors: 132 };
    }
    matmulInfo() {
      return {
        path: 'kiln',
        requested: 'kiln',
        cublasLocation: '',
        cublasVersion: '',
        cublasReason: 'fake addon',
        allowTf32: false,
        cublasCalls: 0,
      };
    }
    memory() {
      return { allocatedBytes: 0, bufferCount: 0 };
    }
    synchronize() {
      return Promise.resolve();
    }
    download(id) {
      return Promise.resolve(new Uint8Array(this.sizes.get(id) ?? 0));
    }
  }
  // Every kernel of the contract, and the addon's device-scalar AdamW form.
  const kernels = [...PRIMITIVE_KERNELS, ...FUSED_KERNELS, 'adamwMultiDeviceScalars'];
  const graphs = ['captureEnd', 'captureAbort', 'graphReplay', 'graphDestroy'];
  for (const method of ['upload', 'emptyCache', 'dispose', ...kernels, ...graphs]) {
    Backend.prototype[method] = function noWork() {};
  }
  return { Backend, buildInfo: () => ({ flavor: 'fake' }) };
}
