/**
 * train(): adapt the config to the backend, load data, start (fresh, fine-tune or resume), then
 * run optimizer steps with periodic validation, metrics lines and atomic checkpoints until the
 * configured step or an abort signal; write loss.svg at the end. Everything a step creates is
 * freed before the next one, so only parameters and AdamW moments stay on the device.
 *
 * Reading step values: on the CUDA-graph path (train-step.ts, runTrainStepDeferred) a step's loss
 * and gradient norm stay on the device until a step that needs them — a log, eval or checkpoint
 * step, the last step, an abort, or every step with context.readEveryStep — then every unread
 * step is handled in order, exactly as if read at its end: the skipped-step notice, the mean loss
 * of the log line, the loss-stall watch and the divergence limit (which names the step that
 * reached it) only come later.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { KilnError, writeFileAtomic } from '@kiln/core';
import type { TrainConfig, TrainContext, TrainEvent, TrainResult } from '../contracts.js';
import {
  acquireRunLock,
  checkCheckpointSpace,
  KILN_VERSION,
  CHECKPOINT_FORMAT_VERSION,
  listCheckpoints,
  saveCheckpoint,
  type CheckpointState,
} from '../checkpoint/index.js';
import {
  adaptConfigToBackend,
  checkTrainingWindow,
  forwardOptionsFor,
  resolveSteps,
  trainingWindow,
} from '../config/index.js';
import { dataChangeNotice, dataFingerprint, loadData } from '../data/index.js';
import { parameterCount } from '../model/index.js';
import { evaluate } from './evaluate.js';
import { writeLossPlot } from './loss-plot.js';
import { DynamicLossScaler } from './loss-scaler.js';
import { MetricsLog } from './metrics-log.js';
import { disposeMoments } from './optimizer.js';
import { initFromTokenizer, prepareRunStart, withAbsoluteInputPaths, withInitFromModel } from './run-setup.js';
import { LossStallWatch } from './loss-stall.js';
import { learningRateAt } from './schedule.js';
import {
  readDeferredSteps,
  runTrainStepDeferred,
  type StepCounters,
  type StepEnvironment,
  type StepOutcome,
} from './train-step.js';
import { StepGraphRunner } from './step-graph.js';
import { MAX_DEFERRED_STEPS } from './device-optimizer.js';

/** File names written into checkpoint.outputDir. */
export const METRICS_FILE = 'metrics.jsonl';
/** The loss-curve plot. */
export const LOSS_PLOT_FILE = 'loss.svg';
/** The resolved training configuration of the run. */
export const RUN_CONFIG_FILE = 'config.json';

/** train()'s context: the backend, event sink, resume flag, abort signal, and the embedded corpus when no data is configured. */
export type TrainRunContext = TrainContext & { corpus?: { text: string; description: string } };

/** Trains a model as `config` says; resolves when the last step (or an abort) is checkpointed. */
export async function train(inputConfig: TrainConfig, context: TrainRunContext): Promise<TrainResult> {
  const startedAt = performance.now();
  const emit = (event: TrainEvent): void => context.onEvent?.(event);
  const notice = (message: string): void => emit({ type: 'notice', message });
  const { backend } = context;
  // Refuses a plan that cannot fit (ConfigError) before anything is allocated or any weight read.
  const config = await withInitFromModel(withAbsoluteInputPaths(inputConfig), notice, context.resume === true);
  const adapted = adaptConfigToBackend(config, backend);
  const outputDir = adapted.config.checkpoint.outputDir;
  await mkdir(outputDir, { recursive: true });
  // One writer per run directory: a second train (or a resume while this run writes) is refused.
  const lock = await acquireRunLock(outputDir, { notice });
  try {
    return await trainLocked(adapted, context, { startedAt, emit, notice });
  } finally {
    await lock.release();
  }
}

/** train() once the run directory is locked. */
async function trainLocked(
  adapted: ReturnType<typeof adaptConfigToBackend>,
  context: TrainRunContext,
  run: { startedAt: number; emit: (event: TrainEvent) => void; notice: (message: string) => void },
): Promise<TrainResult> {
  const { startedAt, emit, notice } = run;
  const { backend } = context;
  const outputDir = adapted.config.checkpoint.outputDir;
  const start = await prepareRunStart(adapted.config, {
    backend,
    resume: context.resume === true,
    allowNonFinite: context.allowNonFinite,
    notice,
  });
  const { model, moments } = start;
  let data: Awaited<ReturnType<typeof loadData>> | undefined;
  let metrics: MetricsLog | undefined;
  let graph: StepGraphRunner | undefined;
  try {
    // The model's context is known now (from initFrom or the checkpoint): the window must fit in it.
    const { initFrom } = start.config;
    checkTrainingWindow(start.config, initFrom === undefined ? 'model.contextLength' : `the context of ${initFrom}`);
    // A disk that cannot take the next checkpoint is found now, not after the steps it would lose.
    await checkCheckpointSpace({
      outputDir,
      model,
      keepLast: adapted.config.checkpoint.keepLast,
      existing: (await listCheckpoints(outputDir)).length,
      notice,
    });
    // Fine-tuning reads text with the model's own tokenizer (data.tokenizer overrides it).
    data = await loadData(start.config.data, {
      vocabSize: start.config.model.vocabSize,
      contextLength: trainingWindow(start.config),
      corpus: context.corpus,
      tokenizer: await initFromTokenizer(start.config),
    });
    for (const warning of data.warnings) notice(warning);
    const config = resolveSteps(start.config, data.train.tokenCount);
    const fingerprint = dataFingerprint(data, trainingWindow(config), config.seed);
    const savedData = start.resumed?.state.data;
    const changed = savedData && dataChangeNotice(savedData, fingerprint, start.resumed?.state.step ?? 0);
    if (changed !== undefined) notice(changed);
    await writeFileAtomic(join(outputDir, RUN_CONFIG_FILE), `${JSON.stringify(config, null, 2)}\n`);
    const { schedule, optimizer, seed } = config;
    // Tokens per training sequence: the model's context, or the shorter schedule.sequenceLength.
    const contextLength = trainingWindow(config);
    const forwardOptions = forwardOptionsFor(config);
    const saved = start.resumed?.state;
    const scaler = new DynamicLossScaler(
      { enabled: forwardOptions.computeDType === 'f16' },
      saved && { scale: saved.lossScale, goodSteps: saved.lossScaleGoodSteps },
    );
    const counters: StepCounters = {
      microBatchSize: saved ? Math.min(saved.microBatchSize, schedule.microBatchSize) : schedule.microBatchSize,
      optimizerStep: saved?.optimizerStep ?? 0,
    };
    graph = new StepGraphRunner(backend, config.device.cudaGraph ?? 'auto', notice);
    // `kiln train` says whether the step is graphed wherever the backend could capture it.
    if (backend.capabilities.graphCapture === true) {
      // Where the device optimizer runs without loss scaling, steps' values are read at log/eval/checkpoint steps only.
      const defers = graph.deviceOptimizer !== undefined && !scaler.enabled && context.readEveryStep !== true;
      const every = Math.min(Math.max(1, schedule.logInterval), MAX_DEFERRED_STEPS);
      notice(
        `${graph.describe()}${defers ? `; step losses read from the device every ${every} steps (and at eval and checkpoint steps), not every step` : ''}`,
      );
    }
    const environment: StepEnvironment = {
      model,
      moments,
      backend,
      forwardOptions,
      optimizer,
      scaler,
      contextLength,
      notice,
      graph,
    };
    metrics = await MetricsLog.open(join(outputDir, METRICS_FILE), { resumeStep: saved?.step });
    if (start.resumed) {
      notice(
        `resuming from ${start.resumed.path} at step ${start.resumed.state.step} (micro-batch ${counters.microBatchSize} × ${schedule.batchSize / counters.microBatchSize} accumulation)`,
      );
    }

    let step = saved?.step ?? 0;
    let pendingLosses = [...(saved?.metrics.pendingLosses ?? [])];
    let lastValLoss = saved?.metrics.lastValLoss ?? Number.NaN;
    let consecutiveNonFinite = saved?.metrics.consecutiveNonFinite ?? 0;
    let tokensSeen = saved?.metrics.tokensSeen ?? 0;
    let trainSeconds = saved?.metrics.trainSeconds ?? 0;
    let pendingTokens = 0;
    let pendingSeconds = 0;
    let lastLoggedLoss = Number.NaN;
    let sessionTokens = 0;
    let sessionSeconds = 0;
    let checkpointPath = start.resumed?.path ?? '';
    let checkpointStep = saved?.step ?? -1;
    const tokensPerStep = schedule.batchSize * contextLength;
    // Only a fresh run starts from an untrained model whose loss must fall (a fine-tuned or resumed one may already sit low).
    const stallWatch =
      step === 0 && config.initFrom === undefined ? new LossStallWatch(schedule.warmupSteps) : undefined;
    const logInterval = Math.max(1, schedule.logInterval);
    // The lr of each step whose values are still on the device (the divergence message names it).
    const unreadLrs = new Map<number, number>();
    /** A read step's outcome, in step order: the skip notice or the loss it adds; throws when the run diverged. */
    const handleOutcome = (outcome: StepOutcome): void => {
      if (outcome.skipped) {
        consecutiveNonFinite++;
        notice(
          `step ${outcome.step}: non-finite ${Number.isFinite(outcome.loss) ? 'gradient norm' : 'loss'} (loss ${outcome.loss}, gradient norm ${outcome.gradNorm}); ` +
            `update skipped${scaler.enabled ? `, loss scale lowered to ${scaler.scale}` : ''} (${consecutiveNonFinite} in a row, limit ${schedule.maxNonFiniteSteps})`,
        );
      } else {
        consecutiveNonFinite = 0;
        pendingLosses.push(outcome.loss);
        const stalled = stallWatch?.record(outcome.step, outcome.loss);
        if (stalled !== undefined) notice(stalled);
      }
    };
    const checkDivergence = (outcome: StepOutcome, lr: number): void => {
      if (consecutiveNonFinite >= schedule.maxNonFiniteSteps)
        throw divergenceError(
          config,
          outcome.step,
          consecutiveNonFinite,
          outcome,
          lr,
          forwardOptions.computeDType,
          checkpointPath,
        );
    };
    /** Handles the outcomes of steps read after their step event (their lrs noted in unreadLrs). */
    const handleLate = (outcomes: readonly StepOutcome[]): void => {
      for (const outcome of outcomes) {
        const lr = unreadLrs.get(outcome.step) ?? Number.NaN;
        unreadLrs.delete(outcome.step);
        handleOutcome(outcome);
        checkDivergence(outcome, lr);
      }
    };

    const validate = async (): Promise<number> =>
      evaluate(model, data!.validation, {
        batches: schedule.evalBatches,
        batchSize: schedule.batchSize,
        contextLength,
        seed,
        forwardOptions,
        microBatchSize: counters.microBatchSize,
      });
    const writeCheckpoint = async (): Promise<void> => {
      // The checkpoint's pending losses and counters include every step run so far.
      handleLate(await readDeferredSteps(environment, counters));
      const state: CheckpointState = {
        formatVersion: CHECKPOINT_FORMAT_VERSION,
        kilnVersion: KILN_VERSION,
        step,
        optimizerStep: counters.optimizerStep,
        seed,
        dataPosition: step,
        lossScale: scaler.scale,
        lossScaleGoodSteps: scaler.state().goodSteps,
        microBatchSize: counters.microBatchSize,
        accumulation: schedule.batchSize / counters.microBatchSize,
        backend: backend.name,
        config,
        data: fingerprint,
        metrics: {
          lastValLoss: Number.isFinite(lastValLoss) ? lastValLoss : null,
          pendingLosses,
          consecutiveNonFinite,
          tokensSeen,
          trainSeconds,
        },
        savedAt: new Date().toISOString(),
      };
      checkpointPath = await saveCheckpoint(
        outputDir,
        { model, moments, state },
        { keepLast: config.checkpoint.keepLast },
      );
      checkpointStep = step;
      emit({ type: 'checkpoint', step, path: checkpointPath });
    };

    emit({
      type: 'start',
      step,
      totalSteps: schedule.steps,
      parameters: parameterCount(model),
      backend: backend.name,
      adaptations: adapted.adaptations,
    });
    if (step >= schedule.steps) notice(`the run is already at step ${step} of ${schedule.steps}: nothing to train`);
    while (step < schedule.steps && !context.signal?.aborted) {
      // Steps are synchronous compute: yield once per step so signal handlers (Ctrl+C) can run.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (context.signal?.aborted) break;
      const lr = learningRateAt(step, {
        lr: optimizer.lr,
        warmupSteps: schedule.warmupSteps,
        totalSteps: schedule.steps,
        minLrRatio: schedule.minLrRatio,
      });
      const stepStarted = performance.now();
      // The step's tokens depend only on (seed, step): micro-batching and out-of-memory retries slice the same batch.
      const { inputs, targets } = data.train.batch(step, schedule.batchSize, contextLength, seed);
      // LoRA dropout draws its masks from a stream fixed by (seed, step), so a resumed run draws the same ones.
      if ((config.lora?.dropout ?? 0) > 0)
        environment.forwardOptions = { ...forwardOptions, dropoutSeed: (seed * 65537 + step + 1) >>> 0 };
      const stepBatch = { step: step + 1, batchSize: schedule.batchSize, inputs, targets, lr };
      const outcomes = await runTrainStepDeferred(environment, counters, stepBatch);
      // Steps that need the values (metrics line, validation, checkpoint, the last one) read every unread step.
      const next = step + 1;
      const mustRead =
        context.readEveryStep === true ||
        next === schedule.steps ||
        next % logInterval === 0 ||
        (schedule.evalInterval > 0 && next % schedule.evalInterval === 0) ||
        (config.checkpoint.interval > 0 && next % config.checkpoint.interval === 0);
      if (mustRead) outcomes.push(...(await readDeferredSteps(environment, counters)));
      const seconds = (performance.now() - stepStarted) / 1000;
      step++;
      tokensSeen += tokensPerStep;
      trainSeconds += seconds;
      sessionTokens += tokensPerStep;
      sessionSeconds += seconds;
      pendingTokens += tokensPerStep;
      pendingSeconds += seconds;
      unreadLrs.set(step, lr);
      const current = outcomes.find((outcome) => outcome.step === step);
      const stepEvent = (outcome: StepOutcome | undefined) =>
        emit({
          type: 'step',
          step,
          totalSteps: schedule.steps,
          loss: outcome?.loss ?? null,
          lr,
          tokensPerSecond: tokensPerStep / seconds,
          gradNorm: outcome?.gradNorm ?? null,
          skipped: outcome?.skipped ?? null,
        });
      if (!current) stepEvent(undefined);
      // Earlier steps read now, then this one: notices in step order, this step's event after its notice (as when read at once).
      for (const outcome of outcomes) {
        const outcomeLr = unreadLrs.get(outcome.step) ?? Number.NaN;
        unreadLrs.delete(outcome.step);
        handleOutcome(outcome);
        if (outcome === current) stepEvent(outcome);
        checkDivergence(outcome, outcomeLr);
      }

      const isLast = step === schedule.steps;
      const validationStep = isLast || (schedule.evalInterval > 0 && step % schedule.evalInterval === 0);
      if (validationStep) {
        lastValLoss = await validate();
        emit({ type: 'eval', step, valLoss: lastValLoss });
      }
      if (validationStep || step % Math.max(1, schedule.logInterval) === 0) {
        const loss =
          pendingLosses.length > 0
            ? pendingLosses.reduce((total, value) => total + value, 0) / pendingLosses.length
            : null;
        const fromStep = (metrics.records.at(-1)?.step ?? 0) + 1;
        const record = {
          step,
          loss,
          lr,
          tokens_per_second: pendingSeconds > 0 ? pendingTokens / pendingSeconds : 0,
          ...(validationStep ? { val_loss: lastValLoss } : {}),
        };
        metrics.append(record);
        emit({ type: 'log', totalSteps: schedule.steps, fromStep, ...record });
        lastLoggedLoss = loss ?? Number.NaN;
        pendingLosses = [];
        pendingTokens = 0;
        pendingSeconds = 0;
      }
      if (isLast || (config.checkpoint.interval > 0 && step % config.checkpoint.interval === 0))
        await writeCheckpoint();
    }
    if (context.signal?.aborted && checkpointStep !== step) {
      notice(`stopping at step ${step}: writing a checkpoint`);
      await writeCheckpoint();
    }
    if (!Number.isFinite(lastValLoss) && step >= schedule.steps) {
      lastValLoss = await validate();
      emit({ type: 'eval', step, valLoss: lastValLoss });
    }
    await writeLossPlot(
      join(outputDir, LOSS_PLOT_FILE),
      metrics.records.map((record) => ({ step: record.step, loss: record.loss, valLoss: record.val_loss })),
      {
        title: `kiln: ${parameterCount(model).toLocaleString('en-US')}-parameter model on ${backend.name}`,
      },
    );
    const seconds = (performance.now() - startedAt) / 1000;
    emit({ type: 'end', step, valLoss: lastValLoss, seconds });
    const trainLoss =
      pendingLosses.length > 0
        ? pendingLosses.reduce((total, value) => total + value, 0) / pendingLosses.length
        : lastLoggedLoss;
    return {
      step,
      valLoss: lastValLoss,
      trainLoss,
      checkpointPath,
      seconds,
      tokensPerSecond: sessionSeconds > 0 ? sessionTokens / sessionSeconds : 0,
      adaptations: adapted.adaptations,
    };
  } finally {
    graph?.release();
    metrics?.close();
    data?.train.close();
    data?.validation.close();
    disposeMoments(moments);
    model.dispose();
  }
}

function divergenceError(
  config: TrainConfig,
  step: number,
  count: number,
  outcome: { loss: number; gradNorm: number },
  lr: number,
  computeDType: string,
  checkpointPath: string,
): KilnError {
  const suggestions = [
    `lower optimizer.lr (now ${config.optimizer.lr}; this step used ${lr.toPrecision(3)})`,
    'lengthen schedule.warmupSteps',
  ];
  if (!(config.optimizer.gradClip > 0)) suggestions.push('turn on optimizer.gradClip (e.g. 1.0)');
  if (computeDType !== 'f32')
    suggestions.push(`train in f32 (device.precision: f32; this run computes in ${computeDType})`);
  return new KilnError(
    `Training diverged: ${count} steps in a row up to step ${step} had a non-finite loss or gradient (last loss ${outcome.loss}, gradient norm ${outcome.gradNorm}); no update was applied for them`,
    'KILN_ERROR',
    {
      hint: `Try to ${suggestions.join(', or ')}.${checkpointPath ? ` The last checkpoint (weights before the skipped steps) is ${checkpointPath}.` : ''}`,
    },
  );
}
