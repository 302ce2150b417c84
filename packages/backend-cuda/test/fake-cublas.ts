// Builds test/fixtures/fake-cublas.cpp (a column-major cuBLAS test double on host memory that the
// simulator accepts) into libcublas.so.13 and libcublasLt.so.13, for tests that route the
// simulated backend's matmuls through cuBLAS (cublasPath or KILN_CUBLAS_PATH).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** $CXX, else the first of c++, g++, clang++ on PATH. */
function findCompiler(): string | undefined {
  if (process.env.CXX) return process.env.CXX;
  for (const name of ['c++', 'g++', 'clang++']) {
    for (const entry of (process.env.PATH ?? '').split(delimiter)) {
      if (entry && existsSync(join(entry, name))) return join(entry, name);
    }
  }
  return undefined;
}

/** Builds the test double into `directory` (synchronously); returns why it could not, or undefined. */
export function buildFakeCublas(directory: string): string | undefined {
  const compiler = findCompiler();
  if (compiler === undefined) return 'no C++ compiler was found ($CXX, c++, g++, clang++)';
  const source = fileURLToPath(new URL('./fixtures/fake-cublas.cpp', import.meta.url));
  const flags = ['-std=c++17', '-O2', '-shared', '-fPIC', '-Wall', '-Wextra', '-Werror'];
  execFileSync(compiler, [...flags, '-Wl,-soname,libcublas.so.13', source, '-o', join(directory, 'libcublas.so.13')]);
  execFileSync(compiler, [
    ...flags,
    '-DKILN_FAKE_CUBLAS_LT',
    '-Wl,-soname,libcublasLt.so.13',
    source,
    '-o',
    join(directory, 'libcublasLt.so.13'),
  ]);
  return undefined;
}
