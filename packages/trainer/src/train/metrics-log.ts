/**
 * `<outputDir>/metrics.jsonl`: one JSON object per logged step (`step`, `loss`, `lr`,
 * `tokens_per_second`, and `val_loss` on validation steps). Lines are appended and handed to
 * the OS one by one, so a killed run keeps every line it logged; a resumed run first drops the
 * lines after its checkpoint so no step appears twice.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '@kiln/core';

/** One line of metrics.jsonl. */
export interface MetricsRecord {
  /** Optimizer steps completed. */
  step: number;
  /** Mean training loss since the previous line (null when every step in between was skipped). */
  loss: number | null;
  /** Learning rate of this step. */
  lr: number;
  /** Training throughput since the previous line. */
  tokens_per_second: number;
  /** Validation loss, on validation steps only. */
  val_loss?: number;
}

/** An open metrics.jsonl and the records it holds. */
export class MetricsLog {
  private descriptor: number | undefined;

  private constructor(
    /** The file. */
    readonly path: string,
    /** Every record in the file, oldest first. */
    readonly records: MetricsRecord[],
  ) {
    this.descriptor = openSync(path, 'a');
  }

  /** Opens `path`: empties it for a new run, or keeps the lines up to `resumeStep` when resuming. */
  static async open(path: string, options: { resumeStep?: number } = {}): Promise<MetricsLog> {
    const records = options.resumeStep === undefined ? [] : await readRecords(path, options.resumeStep);
    await writeFileAtomic(path, records.map((record) => `${JSON.stringify(record)}\n`).join(''));
    return new MetricsLog(path, records);
  }

  /** Appends one line. */
  append(record: MetricsRecord): void {
    if (this.descriptor === undefined) throw new Error(`metrics log ${this.path} is closed`);
    this.records.push(record);
    writeSync(this.descriptor, `${JSON.stringify(record)}\n`);
  }

  /** Closes the file (idempotent). */
  close(): void {
    if (this.descriptor === undefined) return;
    closeSync(this.descriptor);
    this.descriptor = undefined;
  }
}

async function readRecords(path: string, resumeStep: number): Promise<MetricsRecord[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  const records: MetricsRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      // A run killed mid-write leaves at most a partial last line: drop it.
      continue;
    }
    if (isRecord(record) && record.step <= resumeStep) records.push(record);
  }
  return records;
}

function isRecord(value: unknown): value is MetricsRecord {
  return typeof value === 'object' && value !== null && typeof (value as MetricsRecord).step === 'number';
}
