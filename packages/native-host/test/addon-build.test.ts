// The shared native build steps (scripts/addon-build.mjs): a build directory configured with other
// definitions (a new KILN_CUDA_ARCHITECTURES, say) is noticed, since cmake-js would reuse it as it is.
import { describe, expect, it } from 'vitest';
import { changedDefinitions } from '../scripts/addon-build.mjs';

const CACHE = [
  '# This is the CMakeCache file.',
  'CMAKE_CUDA_COMPILER:STRING=/usr/local/bin/nvcc',
  'KILN_CUDA_ARCHITECTURES:STRING=90a',
  'KILN_CUDA_SIMULATOR:BOOL=OFF',
  '//Path to a library.',
  'KILN_GPU_SIM_INCLUDE:PATH=',
].join('\n');

describe('changedDefinitions', () => {
  it('names a definition whose cached value differs', () => {
    expect(
      changedDefinitions(CACHE, {
        CMAKE_CUDA_COMPILER: '/usr/local/bin/nvcc',
        KILN_CUDA_ARCHITECTURES: '80-real;86-real;89-real;90a-real;90-virtual',
      }),
    ).toEqual(['KILN_CUDA_ARCHITECTURES']);
  });
  it('is empty when every definition matches, for one the cache lacks and for no cache at all', () => {
    expect(changedDefinitions(CACHE, { KILN_CUDA_ARCHITECTURES: '90a', KILN_CUDA_SIMULATOR: 'OFF' })).toEqual([]);
    expect(changedDefinitions(CACHE, { KILN_NEW_OPTION: 'ON' })).toEqual([]);
    expect(changedDefinitions('', { KILN_CUDA_ARCHITECTURES: '90a' })).toEqual([]);
  });
  it('compares empty values too', () => {
    expect(changedDefinitions(CACHE, { KILN_GPU_SIM_INCLUDE: '/x/include' })).toEqual(['KILN_GPU_SIM_INCLUDE']);
  });
});
