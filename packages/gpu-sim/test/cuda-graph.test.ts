// Builds the CUDA graph self-test (stream capture, graph launch, refused operations during a
// capture) of gpu_sim/cuda/runtime.hpp and checks every line it prints.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { compileProgram, findCompiler } from './compile.js';

const run = promisify(execFile);
const compiler = findCompiler();

const EXPECTED_CHECKS = [
  'cudaStreamBeginCapture',
  'the stream reports an active capture',
  'a second begin on a capturing stream is cudaErrorIllegalState',
  'a launch on a capturing stream is recorded',
  'cudaStreamEndCapture gives the graph',
  'nothing ran during the capture',
  'cudaGraphInstantiate',
  'cudaGraphLaunch',
  'a replay runs memset, kernel and copy in order',
  'a second replay reads the new inputs',
  ...[
    'cudaStreamSynchronize',
    'cudaDeviceSynchronize',
    'a copy to the host',
    'a copy from the host',
    'cudaMalloc',
    'cudaFree',
  ].map((name) => `${name} during a capture is cudaErrorStreamCaptureUnsupported and invalidates it`),
  'after an invalidated capture the stream works eagerly again',
  'error names of the capture errors',
];

describe.skipIf(compiler === undefined)(
  'gpu-sim CUDA graphs self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    it('records on a capturing stream, replays in order, and refuses what CUDA refuses during a capture', async () => {
      const binary = await compileProgram(compiler!, 'test/cuda-graph-self-test.cpp', 'cuda-graph-self-test');
      const { stdout } = await run(binary, [], { timeout: 120_000 });
      for (const name of EXPECTED_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).not.toContain('FAIL');
      expect(stdout.trim().endsWith('all ok')).toBe(true);
    }, 300_000);
  },
);
