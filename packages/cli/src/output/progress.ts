/**
 * Training progress: a cli-progress bar (step/total, loss, tokens/s, ETA) on a terminal, plain
 * lines every log interval otherwise, or one JSON TrainEvent per line with --json.
 */
import cliProgress from 'cli-progress';
import type { TrainEvent } from '@kiln/trainer';
import { formatDuration, formatFixed, formatInteger, formatRate } from './format.js';
import type { Terminal } from './terminal.js';

/** How progress is shown. */
export type ProgressMode = 'bar' | 'lines' | 'json';

/** Receives the trainer's events and shows them. */
export interface ProgressReporter {
  /** Shows one event. */
  handle(event: TrainEvent): void;
  /** Ends the display (the bar stops); safe to call twice. */
  stop(): void;
}

/** Options of createProgressReporter. */
export interface ProgressOptions {
  /** 'bar' on a terminal, 'lines' otherwise, 'json' for machines. Lines are printed when the trainer logs metrics (its `log` events). */
  mode: ProgressMode;
}

/** A reporter for `mode`. */
export function createProgressReporter(terminal: Terminal, options: ProgressOptions): ProgressReporter {
  if (options.mode === 'json') return { handle: (event) => terminal.json(event), stop: () => undefined };
  return options.mode === 'bar' ? new BarReporter(terminal) : new LineReporter(terminal);
}

/** Text for the events both human modes print the same way (null for step/end). */
function describeEvent(event: TrainEvent): string | null {
  switch (event.type) {
    case 'start': {
      const lines = [
        `training ${formatInteger(event.parameters)} parameters on ${event.backend}: steps ${event.step + 1}…${event.totalSteps}`,
      ];
      for (const change of event.adaptations) {
        lines.push(
          `adapted ${change.path}: ${JSON.stringify(change.from)} → ${JSON.stringify(change.to)} (${change.reason.replace(/\.$/, '')})`,
        );
      }
      return lines.join('\n');
    }
    case 'eval':
      return `step ${event.step} val_loss ${formatFixed(event.valLoss)}`;
    case 'log':
      return null;
    case 'checkpoint':
      return `checkpoint step ${event.step} → ${event.path}`;
    case 'notice':
      return `note: ${event.message}`;
    default:
      return null;
  }
}

/** The metrics line's loss, named: 'mean loss 5.446 (steps 1–10)', as metrics.jsonl's `loss` holds it. */
function meanLossText(event: Extract<TrainEvent, { type: 'log' }>): string {
  const steps = event.fromStep === event.step ? `step ${event.step}` : `steps ${event.fromStep}–${event.step}`;
  return event.loss === null
    ? `mean loss — (${steps} all skipped: non-finite)`
    : `mean loss ${formatFixed(event.loss)} (${steps})`;
}

/** Remaining time from this process's own pace. */
class EtaClock {
  private startTime: number | undefined;
  private startStep = 0;

  seconds(step: number, totalSteps: number): number {
    const now = performance.now();
    if (this.startTime === undefined) {
      this.startTime = now;
      this.startStep = step - 1;
    }
    const done = step - this.startStep;
    const elapsed = (now - this.startTime) / 1000;
    return done > 0 ? (elapsed / done) * (totalSteps - step) : Number.NaN;
  }
}

class LineReporter implements ProgressReporter {
  private readonly clock = new EtaClock();

  constructor(private readonly terminal: Terminal) {}

  handle(event: TrainEvent): void {
    if (event.type === 'log') {
      this.log(event);
      return;
    }
    if (event.type !== 'step') {
      const text = describeEvent(event);
      if (text !== null) this.terminal.say(text);
      return;
    }
    this.eta = this.clock.seconds(event.step, event.totalSteps);
  }

  private eta = Number.NaN;

  /** A metrics.jsonl line was written: print the same numbers, the loss named as the interval's mean. */
  private log(event: Extract<TrainEvent, { type: 'log' }>): void {
    this.terminal.say(
      `step ${event.step}/${event.totalSteps} ${meanLossText(event)} lr ${formatRate(event.lr)} ${formatInteger(event.tokens_per_second)} tok/s eta ${formatDuration(this.eta)}`,
    );
  }

  stop(): void {}
}

class BarReporter implements ProgressReporter {
  private bar: cliProgress.SingleBar | undefined;

  constructor(private readonly terminal: Terminal) {}

  handle(event: TrainEvent): void {
    if (event.type === 'start') {
      this.print(describeEvent(event));
      this.bar = new cliProgress.SingleBar({
        stream: this.terminal.humanStream as NodeJS.WritableStream,
        format: 'step {value}/{total} [{bar}] {loss} | {speed} tok/s | eta {eta_formatted}',
        barsize: 24,
        hideCursor: true,
        etaBuffer: 20,
        clearOnComplete: false,
        // The CLI handles SIGINT itself (checkpoint, then exit 130).
        gracefulExit: false,
      });
      this.bar.start(event.totalSteps, event.step, { loss: 'mean loss —', speed: '—' });
      return;
    }
    if (event.type === 'step') {
      this.bar?.update(event.step, { speed: formatInteger(event.tokensPerSecond) });
      return;
    }
    if (event.type === 'log') {
      this.bar?.update(event.step, { loss: meanLossText(event) });
      return;
    }
    if (event.type === 'end') {
      this.stop();
      return;
    }
    this.print(describeEvent(event));
  }

  stop(): void {
    this.bar?.stop();
    this.bar = undefined;
  }

  /** A line above the bar: clear the bar's line, write, redraw. */
  private print(text: string | null): void {
    if (text === null) return;
    const stream = this.terminal.humanStream;
    if (this.bar !== undefined) stream.write('\r\u001b[2K');
    stream.write(`${text}\n`);
    this.bar?.render();
  }
}
