// Builds bench/fiber-bench.cpp twice (assembly and ucontext context switches) and prints both tables.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiler = process.env.CXX ?? 'g++';
mkdirSync(join(root, 'build'), { recursive: true });
for (const [label, defines] of [
  ['assembly', []],
  ['ucontext', ['-DGPU_SIM_FIBER_UCONTEXT']],
]) {
  const binary = join(root, 'build', `fiber-bench-${label}`);
  execFileSync(
    compiler,
    [
      '-std=c++20',
      '-O2',
      '-ffp-contract=off',
      '-pthread',
      ...defines,
      `-I${join(root, 'include')}`,
      join(root, 'bench', 'fiber-bench.cpp'),
      '-o',
      binary,
    ],
    { stdio: 'inherit' },
  );
  execFileSync(binary, [], { stdio: 'inherit' });
}
