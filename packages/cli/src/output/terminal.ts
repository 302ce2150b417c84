/**
 * Where the CLI writes. Human-readable output goes to stdout; errors and warnings to stderr. In
 * JSON mode stdout carries only JSON lines, so the human-readable lines move to stderr.
 */

/** A stream the CLI writes to (process.stdout or a test double). */
export interface OutputStream {
  /** Writes a chunk. */
  write(chunk: string): boolean;
  /** True when it is an interactive terminal (progress bars instead of lines). */
  isTTY?: boolean;
  /** Terminal width in columns, when a terminal. */
  columns?: number;
}

/** The streams a CLI run uses. */
export interface CliStreams {
  /** Results, progress and JSON. */
  stdout: OutputStream;
  /** Errors and warnings (and human-readable lines in JSON mode). */
  stderr: OutputStream;
}

/** Line-oriented writer over the CLI's streams. */
export class Terminal {
  /** When true, stdout carries only JSON lines. */
  jsonMode = false;

  constructor(readonly streams: CliStreams) {}

  /** True when human-readable output goes to an interactive terminal (progress bars instead of lines). */
  get interactive(): boolean {
    return !this.jsonMode && this.streams.stdout.isTTY === true;
  }

  /** The stream human-readable lines go to. */
  get humanStream(): OutputStream {
    return this.jsonMode ? this.streams.stderr : this.streams.stdout;
  }

  /** Writes a human-readable line (stdout, or stderr in JSON mode). */
  say(line = ''): void {
    this.humanStream.write(`${line}\n`);
  }

  /** Writes raw text to stdout (streamed generation). */
  write(text: string): void {
    this.streams.stdout.write(text);
  }

  /** Writes a warning or error line to stderr. */
  warn(line: string): void {
    this.streams.stderr.write(`${line}\n`);
  }

  /** Writes one JSON value as a line to stdout. */
  json(value: unknown): void {
    this.streams.stdout.write(`${JSON.stringify(value)}\n`);
  }
}

/** The process's own streams. */
export function processStreams(): CliStreams {
  return { stdout: process.stdout, stderr: process.stderr };
}
