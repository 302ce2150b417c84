/**
 * What `kiln doctor` says about an unavailable backend: a short diagnosis for the title and the
 * fix, from the probe's reason. The CUDA and Metal backends' reasons (docs/backend-cuda.md and
 * docs/backend-metal.md, Troubleshooting) get a specific fix; any other backend's reason is shown as its own fix. The
 * CLI never imports a backend package: it reads only what the plugin's probe() said.
 */

/** A diagnosis and what to do about it. */
export interface BackendFix {
  /** What is wrong, in a few words (appended to the check's title). */
  diagnosis: string;
  /** What to do. */
  fix: string;
}

/** The fix for backend `name` being unavailable for `reason`. */
export function backendFix(name: string, reason: string | undefined): BackendFix {
  const text = reason ?? 'its probe gave no reason';
  if (name === 'metal') return metalFix(text);
  if (name !== 'cuda') return { diagnosis: firstSentence(text), fix: text };
  const error = /CUDA error (\d+)/.exec(text)?.[1];
  const code = error === undefined ? '' : ` (CUDA error ${error})`;
  const driverCuda = /driver supports CUDA ([\d.]+)/.exec(text)?.[1];
  if (/No NVIDIA driver was found/.test(text)) {
    return {
      diagnosis: `no NVIDIA driver${code}`,
      fix: "Install the NVIDIA driver r580 or newer (kiln's CUDA backend uses CUDA 13); in a container, run with the NVIDIA container toolkit (--gpus all).",
    };
  }
  if (driverCuda !== undefined) {
    return {
      diagnosis: `the NVIDIA driver supports CUDA ${driverCuda}, kiln needs CUDA 13${code}`,
      fix: 'Update the NVIDIA driver to r580 or newer (`nvidia-smi` shows the installed version).',
    };
  }
  if (/no CUDA device/.test(text)) {
    return {
      diagnosis: `no CUDA device${code}`,
      fix: 'Check `nvidia-smi` and CUDA_VISIBLE_DEVICES (a wrong or empty list hides every GPU).',
    };
  }
  if (/not built or not loadable/.test(text)) {
    return {
      diagnosis: 'its native addon is not installed or not built',
      fix:
        'Install the prebuilt binary (`npm install @kiln/backend-cuda-linux-x64` at the version of @kiln/backend-cuda; do not install with --omit=optional), ' +
        'or build it with `npx kiln-build-cuda` (needs the CUDA 13 toolkit). The reason lists every attempt: ' +
        text,
    };
  }
  return { diagnosis: firstSentence(text), fix: text };
}

/** The Metal backend's probe reasons (packages/backend-metal/src/probe.ts). */
function metalFix(text: string): BackendFix {
  if (/^Metal is only available on macOS/.test(text)) {
    return {
      diagnosis: 'Metal needs macOS',
      fix: 'Nothing to fix on this machine: kiln uses the CPU here (or CUDA with an NVIDIA GPU). On a Mac, `npm install @kiln/backend-metal` is all it takes.',
    };
  }
  if (/^Metal addon not built or not loadable/.test(text)) {
    return {
      diagnosis: 'its native addon is not installed or not built',
      fix:
        'Install the prebuilt binary (`npm install @kiln/backend-metal-darwin-arm64` at the version of @kiln/backend-metal; do not install with --omit=optional), ' +
        'or build it with `npx kiln-build-metal` (needs the Xcode command line tools). The reason lists every attempt: ' +
        text,
    };
  }
  if (/is too old: kiln's Metal backend needs macOS/.test(text))
    return { diagnosis: 'macOS is too old for Metal 3', fix: text };
  if (/^No Metal GPU was found/.test(text)) return { diagnosis: 'no Metal GPU', fix: text };
  return { diagnosis: firstSentence(text), fix: text };
}

/** The cuBLAS advice for a CUDA backend whose matmul path (its `matmulPath` line) is kiln's own kernels. */
export function cublasAdvice(matmulPath: string): string | undefined {
  if (!matmulPath.startsWith('kiln kernels') || /matmul: 'kiln'/.test(matmulPath)) return undefined;
  return (
    'Optional: with cuBLAS (CUDA 13) matmuls are faster — install it (`pip install nvidia-cublas` or the CUDA toolkit) ' +
    'and set KILN_CUBLAS_PATH to the directory holding libcublas.so.13.'
  );
}

function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end > 0 ? text.slice(0, end) : text;
}
