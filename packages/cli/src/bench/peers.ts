/**
 * The peers `kiln bench` measures in the same run, so that every ratio it prints compares
 * figures from one machine at one time: PyTorch on the CPU (through /usr/bin/python3, as a
 * subprocess running peers/train_torch.py) and TensorFlow.js's WebAssembly backend (a Node
 * subprocess running peers/train-tfjs.mjs; TF.js is a dev dependency of @kiln/cli). Both run
 * kiln's reference model of the same preset — same sizes, same batch, same optimizer step.
 * A missing peer is reported with the command that installs it, never replaced by an old figure.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODEL_PRESETS, type ModelPresetName } from '@kiln/trainer';

/** A peer implementation. */
export type PeerName = 'pytorch' | 'tfjs-wasm';

/** Every peer, in the order they are measured and printed. */
export const PEER_NAMES: readonly PeerName[] = ['pytorch', 'tfjs-wasm'];

/** One peer's measurement of one model. */
export interface PeerResult {
  /** Which peer. */
  peer: PeerName;
  /** Preset name. */
  model: string;
  /** Threads the peer used. */
  threads: number;
  /** Version of the peer library. */
  version: string;
  /** Median milliseconds per train step. */
  msPerStep: number;
  /** Tokens per second at the median. */
  tokensPerSecond: number;
}

/** A peer that could not be measured, and how to get it. */
export interface MissingPeer {
  /** Which peer. */
  peer: PeerName;
  /** Why it did not run. */
  reason: string;
  /** The command that installs it. */
  install: string;
}

/** Where the peer scripts are (the package's peers/ directory, next to dist/). */
export function peersDirectory(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', 'peers');
}

/** The Python that runs the PyTorch peer: KILN_BENCH_PYTHON, else Debian's /usr/bin/python3. */
export function pythonExecutable(): string {
  return process.env.KILN_BENCH_PYTHON ?? '/usr/bin/python3';
}

/** The TF.js packages (and versions) the TF.js peer runs: the versions kiln's benchmark figures were measured with. */
export const TFJS_PACKAGES = '@tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0';

const INSTALL: Record<PeerName, string> = {
  pytorch:
    'sudo apt-get install python3-torch   (kiln bench runs it through /usr/bin/python3; KILN_BENCH_PYTHON picks another Python)',
  'tfjs-wasm': `mkdir kiln-peers && cd kiln-peers && npm install ${TFJS_PACKAGES}, then run kiln bench with KILN_PEERS_DIR=$PWD/kiln-peers`,
};

/** The command that installs `peer` for kiln bench (printed beside "not measured"). */
export function peerInstallCommand(peer: PeerName): string {
  return INSTALL[peer];
}

/** A preset's sizes as the peer scripts read them. */
export function peerConfig(preset: ModelPresetName, batch?: number): Record<string, string | number> {
  const { model } = MODEL_PRESETS[preset];
  const batchSize = batch ?? MODEL_PRESETS[preset].batchSize;
  return {
    name: preset,
    vocab: model.vocabSize,
    ctx: model.contextLength,
    d: model.dModel,
    layers: model.nLayer,
    heads: model.nHead,
    kvHeads: model.nKvHead,
    hidden: model.mlpHidden,
    batch: batchSize,
    eps: model.normEps,
    theta: model.ropeTheta,
  };
}

function run(
  file: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) || (error?.message ?? '') });
    });
  });
}

function lastJsonLine(text: string): Record<string, unknown> | undefined {
  const line = text
    .trim()
    .split('\n')
    .reverse()
    .find((candidate) => candidate.startsWith('{'));
  if (line === undefined) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Checks whether a peer can run here: undefined when it can, else why not (with the install command). */
export async function probePeer(peer: PeerName): Promise<MissingPeer | undefined> {
  if (peer === 'pytorch') {
    const python = pythonExecutable();
    if (!existsSync(python)) return { peer, reason: `${python} does not exist`, install: INSTALL[peer] };
    const probe = await run(python, ['-c', 'import torch; print(torch.__version__)'], 60_000);
    if (probe.code !== 0)
      return {
        peer,
        reason: `${python} cannot import torch (${probe.stderr.trim().split('\n').pop() ?? 'failed'})`,
        install: INSTALL[peer],
      };
    return undefined;
  }
  const probe = await run(process.execPath, [join(peersDirectory(), 'train-tfjs.mjs'), '--probe'], 60_000);
  if (probe.code === 3) return { peer, reason: probe.stderr.trim().split('\n')[0], install: INSTALL[peer] };
  if (probe.code !== 0)
    return { peer, reason: `its script failed: ${probe.stderr.trim().split('\n')[0]}`, install: INSTALL[peer] };
  return undefined;
}

/** Measures one peer on one preset (threads: PyTorch's thread count; TF.js WASM always runs on one). */
export async function measurePeer(
  peer: PeerName,
  preset: ModelPresetName,
  threads: number,
  options: { steps: number; warmup: number; batchSize?: number },
): Promise<PeerResult> {
  const config = JSON.stringify(peerConfig(preset, options.batchSize));
  const common = ['--steps', String(options.steps), '--warmup', String(options.warmup), '--config', config];
  const result =
    peer === 'pytorch'
      ? await run(
          pythonExecutable(),
          [join(peersDirectory(), 'train_torch.py'), '--threads', String(threads), ...common],
          30 * 60_000,
        )
      : await run(process.execPath, [join(peersDirectory(), 'train-tfjs.mjs'), ...common], 30 * 60_000);
  const report = lastJsonLine(result.stdout);
  if (result.code !== 0 || report === undefined) {
    throw new Error(
      `the ${peer} peer failed on ${preset} (exit ${result.code}): ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`,
    );
  }
  return {
    peer,
    model: preset,
    threads: peer === 'pytorch' ? Number(report.threads) : 1,
    version: String(peer === 'pytorch' ? report.torch : report.tfjs),
    msPerStep: Number(report.msPerStep),
    tokensPerSecond: Number(report.tokensPerSecond),
  };
}

/** How a peer is named in tables. */
export function peerLabel(result: PeerResult): string {
  return result.peer === 'pytorch' ? `PyTorch ${result.version} CPU` : `TF.js ${result.version} WASM`;
}

/** PyTorch's measurement of one fine-tuning preset (transformers, with peft for LoRA). */
export interface FineTunePeerResult {
  /** Preset name. */
  model: string;
  /** LoRA or full fine-tuning. */
  mode: 'lora' | 'full';
  /** Threads PyTorch used. */
  threads: number;
  /** The device PyTorch ran on. */
  device: 'cpu' | 'cuda';
  /** torch, transformers (and peft) versions. */
  version: string;
  /** Median milliseconds per step. */
  msPerStep: number;
  /** Tokens per second at the median. */
  tokensPerSecond: number;
  /** Parameters in PyTorch's optimizer. */
  trainableParameters: number;
  /** Peak memory as PyTorch reports it (CPU: the process's peak RSS). */
  peakMemoryBytes: number;
  /** What peakMemoryBytes counts. */
  memoryKind: string;
}

/** How to get the fine-tuning peer. */
const FINE_TUNE_INSTALL =
  'pip install torch transformers peft   (into the Python kiln bench runs: /usr/bin/python3, or the one KILN_BENCH_PYTHON names)';

/** Fine-tunes a transformers model of `hfConfig` in PyTorch (peers/train_torch.py --hf-config); a MissingPeer when torch, transformers or peft is absent. */
export async function measureFineTunePeer(
  preset: string,
  hfConfig: Record<string, unknown>,
  options: {
    mode: 'lora' | 'full';
    lora: { r: number; alpha: number; targets: string[] };
    threads: number;
    device: 'cpu' | 'cuda';
    steps: number;
    warmup: number;
    batchSize: number;
    contextLength: number;
  },
): Promise<FineTunePeerResult | MissingPeer> {
  const python = pythonExecutable();
  if (!existsSync(python)) return { peer: 'pytorch', reason: `${python} does not exist`, install: FINE_TUNE_INSTALL };
  const result = await run(
    python,
    [
      join(peersDirectory(), 'train_torch.py'),
      '--hf-config',
      JSON.stringify(hfConfig),
      '--mode',
      options.mode,
      '--lora',
      JSON.stringify(options.lora),
      '--threads',
      String(options.threads),
      '--steps',
      String(options.steps),
      '--warmup',
      String(options.warmup),
      '--batch',
      String(options.batchSize),
      '--ctx',
      String(options.contextLength),
      '--device',
      options.device,
    ],
    30 * 60_000,
  );
  const lastError = result.stderr.trim().split('\n').pop() ?? 'failed';
  if (result.code === 3 || /No module named/.test(result.stderr)) {
    return {
      peer: 'pytorch',
      reason: `${python}${options.device === 'cuda' ? ' (CUDA)' : ''}: ${lastError}`,
      install: FINE_TUNE_INSTALL,
    };
  }
  const report = lastJsonLine(result.stdout);
  if (result.code !== 0 || report === undefined) {
    throw new Error(
      `the PyTorch fine-tuning peer failed on ${preset} ${options.mode} (exit ${result.code}): ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`,
    );
  }
  return {
    model: preset,
    mode: options.mode,
    threads: Number(report.threads),
    device: options.device,
    version: `torch ${String(report.torch)}, transformers ${String(report.transformers)}${report.peft ? `, peft ${String(report.peft)}` : ''}`,
    msPerStep: Number(report.msPerStep),
    tokensPerSecond: Number(report.tokensPerSecond),
    trainableParameters: Number(report.trainableParameters),
    peakMemoryBytes: Number(report.peakMemoryBytes),
    memoryKind: String(report.memoryKind),
  };
}
