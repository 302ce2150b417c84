/**
 * Keeps kiln_hip_compat.h and docs/rocm-walkthrough.md true to @kiln/backend-cuda's native sources:
 *  - every CUDA name in the sources (runtime API, error codes, warp intrinsics, fp16/bf16 types and
 *    conversions, atomics, vector types, WMMA, cuBLAS) is mapped by the shim, spelled the same in HIP,
 *    or listed as not portable — and not-portable names appear only in files left out of a HIP build;
 *  - the files left out are exactly those with inline PTX, WMMA or the cuBLAS loader (or including one);
 *  - every warp shuffle passes the full mask (the shim's 32-lane shuffles ignore masks);
 *  - the walkthrough names every left-out file and every kernel file that assumes 32-lane warps;
 *  - g++ compiles the shim, every portable kernel and host source through it, and
 *    kiln_hip_unported.cpp, against test/fake-hip (declarations of the HIP API; no ROCm here), and
 *    fails when a mapping is removed.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const HERE = dirname(fileURLToPath(import.meta.url));
const SHIM_DIRECTORY = join(HERE, '..');
const SHIM_PATH = join(SHIM_DIRECTORY, 'kiln_hip_compat.h');
const FAKE_HIP = join(HERE, 'fake-hip');
const DOC_PATH = join(SHIM_DIRECTORY, '..', '..', 'docs', 'rocm-walkthrough.md');
// Found as an out-of-tree package finds it: through the package's exports map.
const requireHere = createRequire(import.meta.url);
const CUDA_ROOT = dirname(requireHere.resolve('@kiln/backend-cuda/package.json'));
const NATIVE = join(CUDA_ROOT, 'native');
const SOURCE_FOLDERS = ['kernels', 'runtime', 'device', 'addon'];
// The shared native host backend-cuda compiles with: the workspace's, else the copy staged into the package when packed.
const NATIVE_HOST_INCLUDE =
  [join(CUDA_ROOT, '..', 'native-host', 'include'), join(CUDA_ROOT, 'native-host', 'include')].find((directory) =>
    existsSync(directory),
  ) ?? join(CUDA_ROOT, 'native-host', 'include');
const run = promisify(execFile);

/** `folder/file` paths (relative to native/) of every kernel and host source. */
const SOURCES = SOURCE_FOLDERS.flatMap((folder) =>
  readdirSync(join(NATIVE, folder))
    .filter((name) => /\.(cu|cuh|h|cpp)$/.test(name))
    .sort()
    .map((name) => `${folder}/${name}`),
);
const TEXT = new Map(SOURCES.map((file) => [file, readFileSync(join(NATIVE, file), 'utf8')]));

/** The code of a C++ source with comments and string/character literals blanked out. */
function codeOnly(text: string): string {
  let out = '';
  for (let index = 0; index < text.length; ) {
    const two = text.slice(index, index + 2);
    if (two === '//') {
      while (index < text.length && text[index] !== '\n') index++;
    } else if (two === '/*') {
      const end = text.indexOf('*/', index + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(index, stop).replace(/[^\n]/g, ' ');
      index = stop;
    } else if (text[index] === '"' || text[index] === "'") {
      const quote = text[index];
      out += quote;
      index++;
      while (index < text.length && text[index] !== quote && text[index] !== '\n')
        index += text[index] === '\\' ? 2 : 1;
      out += quote;
      index++;
    } else {
      out += text[index];
      index++;
    }
  }
  return out;
}

const CODE = new Map([...TEXT].map(([file, text]) => [file, codeOnly(text)]));

/** Compiler words that are not CUDA's (the `__lowercase` pattern would catch them). */
const NOT_CUDA = new Set([
  '__attribute__',
  '__restrict__',
  '__restrict',
  '__cplusplus',
  '__has_include',
  '__func__',
  '__asm__',
  '__volatile__',
  '__inline__',
]);

/** The CUDA names one source uses. */
function cudaNames(code: string): Set<string> {
  const names = new Set<string>();
  const patterns = [
    /\bcuda[A-Z]\w*/g,
    /\bCUDA_[A-Z0-9_]+/g,
    /\bcublas[A-Z]\w*/g,
    /\bCUBLAS_\w+/g,
    /\b__[a-z]\w*/g,
    /\b(?:threadIdx|blockIdx|blockDim|gridDim|warpSize|dim3)\b/g,
    /\batomic[A-Z]\w*/g,
    /\bnvcuda\b/g,
    /\bwmma::\w+/g,
    /\b(?:make_)?(?:u?(?:char|short|int|long|longlong)|float|double)[1-4]\b/g,
  ];
  for (const pattern of patterns)
    for (const match of code.matchAll(pattern))
      if (!NOT_CUDA.has(match[0]) && !match[0].startsWith('__builtin_')) names.add(match[0]);
  return names;
}

const SHIM = readFileSync(SHIM_PATH, 'utf8');
const listed = (label: string) => [...SHIM.matchAll(new RegExp(`^// ${label}: (\\S+)`, 'gm'))].map((match) => match[1]);
const MAPPED = new Set([...SHIM.matchAll(/^#define\s+(\w+)/gm)].map((match) => match[1]));
const SAME_IN_HIP = new Set(listed('same-in-hip'));
const NOT_PORTABLE = listed('not-portable');
const NOT_PORTABLE_FILES = new Set(listed('not-portable-file'));
const notPortablePattern = (entry: string) =>
  new RegExp(`^${entry.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
const isNotPortable = (name: string) => NOT_PORTABLE.some((entry) => notPortablePattern(entry).test(name));
const PORTABLE = SOURCES.filter((file) => !NOT_PORTABLE_FILES.has(file));

/** Sources a file includes with "…" (resolved relative to native/). */
function includes(file: string): string[] {
  return [...TEXT.get(file)!.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)].map((match) =>
    posix.normalize(posix.join(posix.dirname(file), match[1])),
  );
}

/** Why a file does not belong in a HIP build ('' when it does, as far as this test sees). */
function unportableReason(file: string, seen = new Set<string>()): string {
  const code = CODE.get(file)!;
  if (/\basm\b/.test(code)) return 'inline assembly (PTX)';
  if (/\bwmma::|\bnvcuda\b/.test(code)) return 'nvcuda::wmma';
  if (/\bdlopen\b/.test(code) && /libcublas/.test(TEXT.get(file)!)) return 'loads cuBLAS';
  if (!file.endsWith('.cu')) return '';
  // A compiled kernel file is out when a header it includes (at any depth) has device code that is out.
  const pending = includes(file);
  while (pending.length > 0) {
    const header = pending.pop()!;
    if (seen.has(header) || !CODE.has(header)) continue;
    seen.add(header);
    if (unportableReason(header, seen) !== '') return `includes ${header}`;
    pending.push(...includes(header));
  }
  return '';
}

describe('backend-cuda ships what a HIP build compiles', () => {
  it('its npm package includes the native sources and CMakeLists.txt (files: native)', () => {
    const manifest = JSON.parse(readFileSync(join(CUDA_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(manifest.files).toContain('native');
    expect(manifest.files).toContain('CMakeLists.txt');
    expect(SOURCES.filter((file) => file.startsWith('kernels/')).length).toBeGreaterThan(20);
  });

  it('native/vendors/vendor.h lets KILN_VENDOR_HEADER replace the CUDA toolkit header', () => {
    const vendor = codeOnly(readFileSync(join(NATIVE, 'vendors', 'vendor.h'), 'utf8'));
    expect(vendor).toMatch(/#if defined\(KILN_VENDOR_HEADER\)\s*#include KILN_VENDOR_HEADER\s*#elif/);
    for (const file of SOURCES)
      expect(CODE.get(file), file).not.toMatch(
        /#\s*include\s*<(cuda|cuda_runtime|cuda_fp16|cuda_bf16|mma|cublas\w*)\.h>/,
      );
  });
});

describe('kiln_hip_compat.h covers every CUDA name', () => {
  // atomicAdd is not in the list: since the kernels became deterministic (issue 15) none uses float atomics.
  it('finds the names this test is about (a scan that finds nothing checks nothing)', () => {
    const all = new Set(SOURCES.flatMap((file) => [...cudaNames(CODE.get(file)!)]));
    for (const name of [
      'cudaMalloc',
      'cudaMemcpyAsync',
      'cudaErrorMemoryAllocation',
      '__shfl_xor_sync',
      '__shfl_down_sync',
      '__syncwarp',
      '__half',
      '__nv_bfloat16',
      '__float2bfloat16_rn',
      'wmma::mma_sync',
      'nvcuda',
      '__cvta_generic_to_shared',
      'float4',
    ]) {
      expect(all, name).toContain(name);
    }
  });

  it('maps each name used by a portable source, or HIP spells it the same', () => {
    const unmapped: string[] = [];
    for (const file of PORTABLE) {
      for (const name of cudaNames(CODE.get(file)!)) {
        if (MAPPED.has(name) || SAME_IN_HIP.has(name)) continue;
        unmapped.push(
          isNotPortable(name)
            ? `${file}: ${name} is listed as not portable, yet this file is in the HIP build`
            : `${file}: ${name}`,
        );
      }
    }
    expect(
      unmapped,
      'map these in kiln_hip_compat.h (#define or "same-in-hip:"), or leave the file out ("not-portable-file:") and say so in docs/rocm-walkthrough.md',
    ).toEqual([]);
  });

  it('lists as not portable every name that only the left-out files use, and no name nobody uses', () => {
    const leftOut = SOURCES.filter((file) => NOT_PORTABLE_FILES.has(file));
    const problems: string[] = [];
    for (const file of leftOut) {
      for (const name of cudaNames(CODE.get(file)!))
        if (!MAPPED.has(name) && !SAME_IN_HIP.has(name) && !isNotPortable(name))
          problems.push(`${file}: ${name} is not classified`);
    }
    const all = SOURCES.flatMap((file) => [...cudaNames(CODE.get(file)!)]);
    for (const entry of NOT_PORTABLE)
      if (!all.some((name) => notPortablePattern(entry).test(name)))
        problems.push(`not-portable: ${entry} is used nowhere any more`);
    for (const name of SAME_IN_HIP)
      if (!all.includes(name)) problems.push(`same-in-hip: ${name} is used nowhere any more`);
    expect(problems).toEqual([]);
  });

  it('leaves out exactly the files with inline PTX, WMMA or cuBLAS (and those including them)', () => {
    for (const file of NOT_PORTABLE_FILES) expect(SOURCES, `not-portable-file: ${file} does not exist`).toContain(file);
    const shouldLeaveOut = SOURCES.filter((file) => unportableReason(file) !== '').map(
      (file) => `${file} (${unportableReason(file)})`,
    );
    expect(shouldLeaveOut.map((entry) => entry.split(' ')[0]).sort()).toEqual([...NOT_PORTABLE_FILES].sort());
  });

  it('sees only full-mask warp shuffles (the shim ignores masks and shuffles within 32 lanes)', () => {
    const partial: string[] = [];
    for (const file of SOURCES) {
      for (const match of CODE.get(file)!.matchAll(
        /\b__(?:shfl\w*|ballot|any|all|match\w*|reduce\w*)_sync\s*\(\s*([^,]+),/g,
      )) {
        if (!/^0x[fF]{8}[uU]?$/.test(match[1].trim())) partial.push(`${file}: ${match[0]}`);
      }
    }
    expect(partial).toEqual([]);
  });
});

describe('docs/rocm-walkthrough.md agrees with the sources', () => {
  const doc = existsSync(DOC_PATH) ? readFileSync(DOC_PATH, 'utf8') : '';

  it('names every left-out file', () => {
    expect([...NOT_PORTABLE_FILES].filter((file) => !doc.includes(file))).toEqual([]);
  });

  it('names every kernel file that assumes 32-lane warps', () => {
    const warpFiles = SOURCES.filter((file) =>
      /__shfl_\w+_sync|__syncwarp|threadIdx\.x\s*[%/]\s*32|\/\s*32\]/.test(CODE.get(file)!),
    );
    expect(warpFiles.length).toBeGreaterThan(3);
    expect(warpFiles.filter((file) => !doc.includes(file))).toEqual([]);
  });

  it('its CMakeLists.txt leaves out exactly the left-out kernel files (and compiles every other .cu)', () => {
    const filter = /list\(FILTER KERNELS EXCLUDE REGEX "\/\(([\w|]+)\)\\\\\.cu\$"\)/.exec(doc);
    expect(filter, 'the walkthrough has a `list(FILTER KERNELS EXCLUDE REGEX "/(a|b)\\\\.cu$")` line').not.toBeNull();
    const excluded = filter![1].split('|').sort();
    const leftOut = [...NOT_PORTABLE_FILES]
      .filter((file) => file.startsWith('kernels/') && file.endsWith('.cu'))
      .map((file) => posix.basename(file, '.cu'))
      .sort();
    expect(excluded).toEqual(leftOut);
  });

  it('names the hook and the shim', () => {
    expect(doc).toContain('KILN_VENDOR_HEADER');
    expect(doc).toContain('kiln_hip_compat.h');
    expect(doc).toContain('kiln_hip_unported.cpp');
  });
});

const CXX = process.env.CXX ?? 'g++';
const compilerMissing = await run(CXX, ['--version']).then(
  () => '',
  (error: Error) => `no C++ compiler (${CXX}: ${error.message.split('\n')[0]})`,
);
const NODE_HEADERS = join(dirname(process.execPath), '..', 'include', 'node');
const requireCuda = createRequire(join(CUDA_ROOT, 'package.json'));
const NODE_ADDON_API = (() => {
  try {
    return dirname(requireCuda.resolve('node-addon-api/package.json'));
  } catch {
    return undefined;
  }
})();
const addonHeadersMissing = !existsSync(join(NODE_HEADERS, 'node_api.h'))
  ? `Node's headers are not at ${NODE_HEADERS}`
  : NODE_ADDON_API === undefined
    ? 'node-addon-api is not installed next to @kiln/backend-cuda'
    : '';
const scratch = mkdtempSync(join(tmpdir(), 'kiln-rocm-shim-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** g++ -fsyntax-only of one file through the shim (device mode defines __HIPCC__ as hipcc does for HIP sources). */
async function compile(file: string, options: { device: boolean; shimDirectory?: string }): Promise<string> {
  const args = [
    '-std=c++20',
    '-fsyntax-only',
    '-Wall',
    '-Wextra',
    '-Werror',
    '-x',
    'c++',
    `-I${FAKE_HIP}`,
    `-I${options.shimDirectory ?? SHIM_DIRECTORY}`,
    `-I${NATIVE}`,
    `-I${NATIVE_HOST_INCLUDE}`,
  ];
  args.push(
    '-DKILN_VENDOR_HEADER=<kiln_hip_compat.h>',
    '-DNAPI_VERSION=8',
    '-DNODE_ADDON_API_DISABLE_DEPRECATED',
    '-DNAPI_CPP_EXCEPTIONS',
  );
  if (NODE_ADDON_API !== undefined) args.push(`-I${NODE_ADDON_API}`, `-I${NODE_HEADERS}`);
  if (options.device) args.push('-D__HIPCC__=1');
  try {
    await run(CXX, [...args, file], { maxBuffer: 16 * 2 ** 20 });
    return '';
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
}

describe.skipIf(compilerMissing !== '')(
  `g++ compiles through the shim against fake HIP headers${compilerMissing ? ` (skipped: ${compilerMissing})` : ''}`,
  () => {
    it('the shim on its own, as host and as device code', async () => {
      const probe = join(scratch, 'shim-only.cpp');
      writeFileSync(probe, '#include <kiln_hip_compat.h>\nint main() { return kiln::vendor::kSimulator ? 1 : 0; }\n');
      expect(await compile(probe, { device: false })).toBe('');
      expect(await compile(probe, { device: true })).toBe('');
    });

    it.each(PORTABLE.filter((file) => file.endsWith('.cu')))('kernels: %s (device code)', async (file) => {
      expect(await compile(join(NATIVE, file), { device: true })).toBe('');
    });

    it.each(PORTABLE.filter((file) => file.startsWith('runtime/') && file.endsWith('.cpp')))(
      'host: %s',
      async (file) => {
        expect(await compile(join(NATIVE, file), { device: false })).toBe('');
      },
    );

    it
      .skipIf(addonHeadersMissing !== '')
      .each(
        PORTABLE.filter((file) => (file.startsWith('addon/') || file.startsWith('device/')) && file.endsWith('.cpp')),
      )(`addon: %s${addonHeadersMissing ? ` (skipped: ${addonHeadersMissing})` : ''}`, async (file) => {
      expect(await compile(join(NATIVE, file), { device: false })).toBe('');
    });

    it('kiln_hip_unported.cpp (the stand-ins for the left-out files)', async () => {
      expect(await compile(join(SHIM_DIRECTORY, 'kiln_hip_unported.cpp'), { device: false })).toBe('');
    });

    it('fails when a mapping is removed (cudaMalloc), naming it', async () => {
      const broken = join(scratch, 'broken');
      mkdirSync(broken, { recursive: true });
      writeFileSync(join(broken, 'kiln_hip_compat.h'), SHIM.replace(/^#define cudaMalloc hipMalloc\n/m, ''));
      expect(readFileSync(join(broken, 'kiln_hip_compat.h'), 'utf8')).not.toContain('#define cudaMalloc ');
      expect(
        await compile(join(NATIVE, 'runtime', 'cuda_memory.cpp'), { device: false, shimDirectory: broken }),
      ).toMatch(/cudaMalloc/);
    });
  },
);
