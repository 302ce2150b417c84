/**
 * CUDA-graph training steps: where the backend can capture device work (capabilities.graphCapture),
 * the whole step — forward, backward, gradient norm, clipping and AdamW (device-optimizer.ts: the
 * clip coefficient is computed on the device, lr and bias corrections are read from a small tensor
 * the host rewrites before each replay) — is recorded once and replayed each step; the step writes
 * its [loss, Σ‖grad‖²] into the device optimizer's record, which the host reads only when it needs
 * the values (train.ts: log, eval and checkpoint steps, or every step when asked), so a replayed
 * step does not wait for the device. Inputs live in persistent device tensors uploaded before each
 * replay; the gradients are read from the buffers the capture wrote. Step 1 runs eagerly on those
 * same inputs (it warms the allocator's cache, which serves the capture), step 2 is captured,
 * later steps replay. Anything that would change the recorded work
 * (a new micro-batch size, a loss scale that moves, per-step dropout seeds) or a capture that fails
 * turns the graph off for the rest of the run, with one notice naming why.
 */
import { GraphCaptureError, KilnError, zeros, type KernelBackend, type StepGraph, type Tensor } from '@kiln/core';
import { DeviceOptimizer, usesDeviceOptimizer } from './device-optimizer.js';

/** Whether to capture steps: 'auto' where the backend can, 'off' never. */
export type CudaGraphMode = 'auto' | 'off';

/** The persistent input tensors of one micro-batch. */
export interface MicroBatchInputs {
  /** Input ids [microBatch, contextLength] i32. */
  ids: Tensor;
  /** Target ids [microBatch, contextLength] i32. */
  targets: Tensor;
}

/** What a captured step left behind: the packed [loss, normSquared] and each parameter's gradient. */
export interface CapturedStepOutputs {
  /** [loss, Σ‖grad‖²] f32, written by every replay. */
  packed: Tensor;
  /** The gradient tensors by parameter name, written by every replay. */
  gradients: Map<string, Tensor>;
}

/** See the file header. */
export class StepGraphRunner {
  /** 'warmup' before the eager warm-up step, then 'capture', then 'replay'; 'off' once turned off (or never on). */
  phase: 'warmup' | 'capture' | 'replay' | 'off';
  /** Why the graph is off ('' while on). */
  offReason = '';
  private inputs: MicroBatchInputs[] = [];
  private shapeKey = '';
  private graph: StepGraph | undefined;
  private outputs: CapturedStepOutputs | undefined;
  /** The step's clip + AdamW from device scalars (backends that capture graphs, graphed or not, so both paths give the same bits); undefined elsewhere. */
  readonly deviceOptimizer: DeviceOptimizer | undefined;

  constructor(
    private readonly backend: KernelBackend,
    mode: CudaGraphMode,
    private readonly notice: (message: string) => void,
  ) {
    this.phase = 'off';
    this.deviceOptimizer = usesDeviceOptimizer(backend) ? new DeviceOptimizer(backend) : undefined;
    if (mode === 'off') this.offReason = 'cudaGraph: off';
    else if (backend.capabilities.graphCapture !== true || typeof backend.captureGraph !== 'function')
      this.offReason = `the ${backend.name} backend cannot capture device graphs`;
    else this.phase = 'warmup';
  }

  /** True while steps go through the graph path (warm-up, capture or replay). */
  get active(): boolean {
    return this.phase !== 'off';
  }

  /** One line for `kiln train`: whether the step is graphed, and why not. */
  describe(): string {
    if (this.phase === 'off') return `training step runs eagerly (${this.offReason})`;
    return 'training step captured in a CUDA graph after one eager warm-up step, replayed each step';
  }

  /** Turns the graph off for the rest of the run, saying why once. */
  turnOff(reason: string): void {
    if (this.phase === 'off') return;
    const wasGraphed = this.phase === 'replay';
    this.phase = 'off';
    this.offReason = reason;
    // The device optimizer stays: eager steps use it too, and its record may hold unread steps.
    this.releaseGraph();
    this.notice(
      `CUDA graph off: ${reason}; ${wasGraphed ? 'the step runs eagerly from now on' : 'running the step eagerly'}`,
    );
  }

  /**
   * The persistent inputs for this step's shapes, with the batch uploaded into them; turns the graph
   * off (and returns undefined) when the shapes differ from the captured step's.
   */
  stage(
    batchInputs: Int32Array,
    batchTargets: Int32Array,
    microBatchSize: number,
    contextLength: number,
  ): MicroBatchInputs[] | undefined {
    if (this.phase === 'off') return undefined;
    const accumulation = batchInputs.length / (microBatchSize * contextLength);
    const key = `${accumulation}×[${microBatchSize}, ${contextLength}]`;
    if (this.shapeKey !== key) {
      if (this.shapeKey !== '') {
        this.turnOff(`the step's shapes changed (micro-batches ${this.shapeKey} → ${key})`);
        return undefined;
      }
      this.shapeKey = key;
      this.inputs = Array.from({ length: accumulation }, () => ({
        ids: zeros([microBatchSize, contextLength], { dtype: 'i32', backend: this.backend }),
        targets: zeros([microBatchSize, contextLength], { dtype: 'i32', backend: this.backend }),
      }));
    }
    const window = microBatchSize * contextLength;
    this.inputs.forEach((input, index) => {
      upload(this.backend, input.ids, batchInputs.subarray(index * window, (index + 1) * window));
      upload(this.backend, input.targets, batchTargets.subarray(index * window, (index + 1) * window));
    });
    return this.inputs;
  }

  /**
   * Captures `body` (forward, backward, norm, optimizer; returns the packed [loss, normSquared]) and runs it once.
   * Returns undefined — graph turned off, with the reason — when capture failed; the caller then runs the step eagerly.
   */
  capture(
    body: () => Tensor,
    collectGradients: () => Map<string, Tensor>,
    discardGradients: () => void,
  ): CapturedStepOutputs | undefined {
    try {
      const { graph, result } = this.backend.captureGraph!(body);
      this.graph = graph;
      this.outputs = { packed: result, gradients: collectGradients() };
    } catch (error) {
      discardGradients();
      if (!(error instanceof GraphCaptureError) && !(KilnError.isInstance(error) && error.code === 'GRAPH_CAPTURE'))
        throw error;
      this.turnOff(`the step could not be captured (${error.message.split('\n')[0]})`);
      return undefined;
    }
    this.phase = 'replay';
    this.graph.replay();
    return this.outputs;
  }

  /** Replays the captured step; returns its outputs. */
  replay(): CapturedStepOutputs {
    this.graph!.replay();
    return this.outputs!;
  }

  /** Frees the graph, its outputs, the persistent inputs and the device optimizer's tensors (unread steps are lost; staged again when needed). */
  release(): void {
    this.deviceOptimizer?.release();
    this.releaseGraph();
  }

  /** Frees the graph, its outputs and the persistent inputs. */
  private releaseGraph(): void {
    this.graph?.dispose();
    this.graph = undefined;
    if (this.outputs) {
      this.outputs.packed.dispose();
      for (const gradient of this.outputs.gradients.values()) gradient.dispose();
      this.outputs = undefined;
    }
    for (const { ids, targets } of this.inputs) {
      ids.dispose();
      targets.dispose();
    }
    this.inputs = [];
  }
}

/** Copies host ids into a persistent contiguous i32 tensor. */
function upload(backend: KernelBackend, target: Tensor, values: Int32Array): void {
  backend.upload(target.storage.buffer, new Uint8Array(values.buffer, values.byteOffset, values.byteLength), 0);
}
