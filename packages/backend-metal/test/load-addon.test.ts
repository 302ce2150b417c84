// What only Metal's loader says (the loader order, the platform rules and probe()'s unavailable
// result are tested for both backends in @kiln/native-host, test/loader.test.ts): that the platform
// package is an optional dependency npm may have skipped.
import { describe, expect, it } from 'vitest';
import { loadMetalAddon, localBuildPath } from '../src/native/load-addon.js';
import { fakeRequire, packageRoot } from '../../native-host/test/support/loader.js';

describe('loadMetalAddon on Apple silicon', () => {
  it('says the platform package is an optional dependency when nothing loads', () => {
    const load = () =>
      loadMetalAddon({
        platform: 'darwin',
        arch: 'arm64',
        packageRoot: packageRoot(localBuildPath),
        version: '0.3.0',
        require: fakeRequire({}).require,
      });
    expect(load).toThrow(/@kiln\/backend-metal-darwin-arm64 is not installed \(it is an optional dependency/);
  });
});
