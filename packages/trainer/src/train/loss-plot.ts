/**
 * A small dependency-free SVG line chart of training and validation loss against the step:
 * axes with tick labels (whole steps only on the x-axis), one polyline per series with a dot on
 * validation points (and on a training series of one point, which has no line), the losses
 * padded off the axes, and a legend.
 */
import { writeFileAtomic } from '@kiln/core';

/** One point of the plot; either loss may be missing. */
export interface LossPoint {
  /** Optimizer step. */
  step: number;
  /** Training loss at this step. */
  loss?: number | null;
  /** Validation loss at this step. */
  valLoss?: number | null;
}

/** Options of renderLossPlot. */
export interface LossPlotOptions {
  /** Title above the chart (default 'Loss'). */
  title?: string;
  /** Width in pixels (default 640). */
  width?: number;
  /** Height in pixels (default 400). */
  height?: number;
}

const MARGIN = { left: 64, right: 24, top: 40, bottom: 52 };
const TRAIN_COLOR = '#1f77b4';
const VALIDATION_COLOR = '#ff7f0e';

/** The chart as an SVG document. */
export function renderLossPlot(points: readonly LossPoint[], options: LossPlotOptions = {}): string {
  const width = options.width ?? 640;
  const height = options.height ?? 400;
  const train = series(points, 'loss');
  const validation = series(points, 'valLoss');
  const all = [...train, ...validation];
  const xRange = range(
    all.map(([step]) => step),
    0,
    1,
  );
  const yRange = range(
    all.map(([, loss]) => loss),
    0.06,
    0.5,
  );
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const plotHeight = height - MARGIN.top - MARGIN.bottom;
  const x = (step: number): number => MARGIN.left + ((step - xRange.low) / (xRange.high - xRange.low)) * plotWidth;
  const y = (loss: number): number => MARGIN.top + (1 - (loss - yRange.low) / (yRange.high - yRange.low)) * plotHeight;

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="${MARGIN.top / 2 + 4}" text-anchor="middle" font-size="15">${escapeText(options.title ?? 'Loss')}</text>`,
  ];
  for (const tick of ticks(yRange.low, yRange.high)) {
    const position = format(y(tick));
    parts.push(
      `<line x1="${MARGIN.left}" y1="${position}" x2="${width - MARGIN.right}" y2="${position}" stroke="#e5e5e5"/>`,
    );
    parts.push(
      `<text x="${MARGIN.left - 6}" y="${position}" text-anchor="end" dominant-baseline="middle">${formatTick(tick)}</text>`,
    );
  }
  for (const tick of ticks(xRange.low, xRange.high, 1)) {
    const position = format(x(tick));
    parts.push(
      `<line x1="${position}" y1="${height - MARGIN.bottom}" x2="${position}" y2="${height - MARGIN.bottom + 5}" stroke="#333333"/>`,
    );
    parts.push(
      `<text x="${position}" y="${height - MARGIN.bottom + 18}" text-anchor="middle">${formatTick(tick)}</text>`,
    );
  }
  parts.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${height - MARGIN.bottom}" stroke="#333333"/>`,
    `<line x1="${MARGIN.left}" y1="${height - MARGIN.bottom}" x2="${width - MARGIN.right}" y2="${height - MARGIN.bottom}" stroke="#333333"/>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${height - 12}" text-anchor="middle">step</text>`,
    `<text x="16" y="${MARGIN.top + plotHeight / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotHeight / 2})">loss (nats/token)</text>`,
  );
  if (train.length > 0) parts.push(polyline(train, x, y, TRAIN_COLOR));
  // One point draws no line: mark it (a run shorter than the log interval logs only its last step).
  if (train.length === 1)
    parts.push(`<circle cx="${format(x(train[0][0]))}" cy="${format(y(train[0][1]))}" r="3" fill="${TRAIN_COLOR}"/>`);
  if (validation.length > 0) {
    parts.push(polyline(validation, x, y, VALIDATION_COLOR));
    for (const [step, loss] of validation)
      parts.push(`<circle cx="${format(x(step))}" cy="${format(y(loss))}" r="3" fill="${VALIDATION_COLOR}"/>`);
  }
  if (all.length === 0) {
    parts.push(
      `<text x="${MARGIN.left + plotWidth / 2}" y="${MARGIN.top + plotHeight / 2}" text-anchor="middle" fill="#888888">no finite losses yet</text>`,
    );
  }
  parts.push(legend(width - MARGIN.right - 130, MARGIN.top + 8));
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** Renders the chart and writes it atomically to `path`. */
export async function writeLossPlot(
  path: string,
  points: readonly LossPoint[],
  options: LossPlotOptions = {},
): Promise<void> {
  await writeFileAtomic(path, renderLossPlot(points, options));
}

function series(points: readonly LossPoint[], key: 'loss' | 'valLoss'): Array<[number, number]> {
  const values: Array<[number, number]> = [];
  for (const point of points) {
    const value = point[key];
    if (typeof value === 'number' && Number.isFinite(value) && Number.isFinite(point.step))
      values.push([point.step, value]);
  }
  return values.sort((a, b) => a[0] - b[0]);
}

/**
 * The axis range of `values`, widened by `padding` (a fraction of the span) on both sides so no
 * point sits on an axis; a single value or a flat line gets ±`flat` around it.
 */
function range(values: number[], padding: number, flat: number): { low: number; high: number } {
  if (values.length === 0) return { low: 0, high: 1 };
  const low = Math.min(...values);
  const high = Math.max(...values);
  if (high - low < 1e-12) return { low: low - flat, high: high + flat };
  const margin = (high - low) * padding;
  return { low: low - margin, high: high + margin };
}

/** About five round tick values inside [low, high], at least `minimumStep` apart (1 for whole steps). */
function ticks(low: number, high: number, minimumStep = 0): number[] {
  const rough = (high - low) / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const round =
    [1, 2, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= rough) ?? 10 * magnitude;
  const step = Math.max(round, minimumStep);
  const values: number[] = [];
  for (let value = Math.ceil(low / step) * step; value <= high + step * 1e-9; value += step)
    values.push(Number(value.toPrecision(12)));
  return values;
}

function polyline(
  values: Array<[number, number]>,
  x: (step: number) => number,
  y: (loss: number) => number,
  color: string,
): string {
  const coordinates = values.map(([step, loss]) => `${format(x(step))},${format(y(loss))}`).join(' ');
  return `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${coordinates}"/>`;
}

function legend(left: number, top: number): string {
  return [
    `<g transform="translate(${left} ${top})">`,
    `<line x1="0" y1="6" x2="18" y2="6" stroke="${TRAIN_COLOR}" stroke-width="2"/>`,
    `<text x="24" y="10">train loss</text>`,
    `<line x1="0" y1="24" x2="18" y2="24" stroke="${VALIDATION_COLOR}" stroke-width="2"/>`,
    `<text x="24" y="28">validation loss</text>`,
    '</g>',
  ].join('');
}

function format(value: number): string {
  return value.toFixed(2);
}

function formatTick(value: number): string {
  return Math.abs(value) >= 1000 ? value.toExponential(1) : String(Number(value.toPrecision(4)));
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
