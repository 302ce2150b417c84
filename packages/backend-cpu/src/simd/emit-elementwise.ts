/**
 * Elementwise kernels in WebAssembly SIMD over contiguous f32 runs: the arithmetic binary ops
 * (either operand may be one repeated value: step 0), SwiGLU forward and backward, the fused
 * AdamW update, rotary embedding over [heads, T, D] rows, fill, and a strided copy of up to four
 * axes into a dense target (the permutes that split and merge attention heads).
 * Layout: byte addresses on the heap; 4-lane vectors, then a scalar tail done with the same
 * vector code on one lane (so tail and body round identically).
 * Numerics: f32 arithmetic as written (the AdamW update in f32, the sigmoid by expF32x4).
 */
import type { Expr } from '../wasm/expression.js';
import { f32, i32, memoryCopy, v128 } from '../wasm/instructions.js';
import type { FunctionBuilder, Local, ModuleBuilder } from '../wasm/module-builder.js';
import { sigmoidF32x4 } from './emit-math.js';
import { vectorConstant, type SimdOps } from './simd-ops.js';

/** The binary ops with a SIMD kernel, and their f32x4 instruction. */
export const SIMD_BINARY_OPS = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum'] as const;
/** One of SIMD_BINARY_OPS. */
export type SimdBinaryOp = (typeof SIMD_BINARY_OPS)[number];

/**
 * Emits a loop over `count` elements: `body(o, load, store)` runs once per 4 lanes with byte
 * offset `o`, then once per tail element where `load` reads one lane (others 0) and `store`
 * writes lane 0.
 */
function emitLanes(
  f: FunctionBuilder,
  count: Local,
  body: (o: Local, load: (base: Expr) => Expr, store: (base: Expr, value: Expr) => Expr) => void,
): void {
  const o = f.local('i32');
  const vectorBytes = f.local('i32');
  const bytes = f.local('i32');
  f.set(bytes, i32.shl(count, 2));
  f.set(vectorBytes, i32.and(bytes, ~15));
  f.for(o, 0, vectorBytes, 16, () =>
    body(
      o,
      (base) => v128.load(i32.add(base, o)),
      (base, value) => v128.store(i32.add(base, o), value),
    ),
  );
  f.for(o, vectorBytes, bytes, 4, () =>
    body(
      o,
      (base) => v128.load32Zero(i32.add(base, o)),
      (base, value) => v128.store32Lane(i32.add(base, o), value, 0),
    ),
  );
}

function binaryInstruction(simd: SimdOps, op: SimdBinaryOp): (a: Expr, b: Expr) => Expr {
  switch (op) {
    case 'add':
      return simd.add;
    case 'sub':
      return simd.sub;
    case 'mul':
      return simd.mul;
    case 'div':
      return simd.div;
    case 'maximum':
      return simd.max;
    case 'minimum':
      return simd.min;
  }
}

/** Emits every elementwise kernel into `module`. */
export function emitElementwise(module: ModuleBuilder, simd: SimdOps): void {
  for (const op of SIMD_BINARY_OPS) {
    const apply = binaryInstruction(simd, op);
    // out[i] = a[i·aStep] op b[i·bStep], steps 0 or 1.
    module.func(
      `binary_${op}`,
      { params: { a: 'i32', aStep: 'i32', b: 'i32', bStep: 'i32', out: 'i32', count: 'i32' } },
      (f, { a, aStep, b, bStep, out, count }) => {
        const aRepeated = f.local('v128');
        const bRepeated = f.local('v128');
        f.set(aRepeated, simd.loadSplat(a));
        f.set(bRepeated, simd.loadSplat(b));
        f.if(
          aStep,
          () => {
            f.if(
              bStep,
              () => emitLanes(f, count, (_o, load, store) => f.exec(store(out, apply(load(a), load(b))))),
              () => emitLanes(f, count, (_o, load, store) => f.exec(store(out, apply(load(a), bRepeated)))),
            );
          },
          () => {
            f.if(
              bStep,
              () => emitLanes(f, count, (_o, load, store) => f.exec(store(out, apply(aRepeated, load(b))))),
              () => emitLanes(f, count, (_o, _load, store) => f.exec(store(out, apply(aRepeated, bRepeated)))),
            );
          },
        );
      },
    );
  }

  module.func('fill_f32', { params: { out: 'i32', count: 'i32', value: 'f32' } }, (f, { out, count, value }) => {
    const vector = f.local('v128');
    f.set(vector, simd.splat(value));
    emitLanes(f, count, (_o, _load, store) => f.exec(store(out, vector)));
  });

  // out = silu(gate)·up.
  module.func(
    'swiglu',
    { params: { gate: 'i32', up: 'i32', out: 'i32', count: 'i32' } },
    (f, { gate, up, out, count }) => {
      const g = f.local('v128');
      emitLanes(f, count, (_o, load, store) => {
        f.set(g, load(gate));
        const s = sigmoidF32x4(f, simd, g);
        f.exec(store(out, simd.mul(simd.mul(g, s), load(up))));
      });
    },
  );

  // dGate = dy·up·s·(1 + g·(1 − s)), dUp = dy·g·s with s = sigmoid(g).
  module.func(
    'swiglu_backward',
    { params: { gate: 'i32', up: 'i32', dy: 'i32', dGate: 'i32', dUp: 'i32', count: 'i32' } },
    (f, { gate, up, dy, dGate, dUp, count }) => {
      const g = f.local('v128');
      const gradient = f.local('v128');
      emitLanes(f, count, (_o, load, store) => {
        f.set(g, load(gate));
        f.set(gradient, load(dy));
        const s = sigmoidF32x4(f, simd, g);
        const one = vectorConstant(f, simd, 1);
        f.exec(
          store(
            dGate,
            simd.mul(simd.mul(simd.mul(gradient, load(up)), s), simd.add(one, simd.mul(g, simd.sub(one, s)))),
          ),
        );
        f.exec(store(dUp, simd.mul(simd.mul(gradient, g), s)));
      });
    },
  );

  // m = β1·m + (1−β1)·g·gradientScale; v = β2·v + (1−β2)·(g·gradientScale)²; p = p·decay − lr·(m/c1)/(√(v/c2) + eps).
  module.func(
    'adamw',
    {
      params: {
        param: 'i32',
        grad: 'i32',
        m: 'i32',
        v: 'i32',
        count: 'i32',
        lr: 'f32',
        beta1: 'f32',
        beta2: 'f32',
        eps: 'f32',
        decay: 'f32',
        firstCorrection: 'f32',
        secondCorrection: 'f32',
        gradientScale: 'f32',
      },
    },
    (f, p) => {
      const { param, grad, m, v, count } = p;
      const splats = Object.fromEntries(
        (['lr', 'beta1', 'beta2', 'eps', 'decay', 'firstCorrection', 'secondCorrection', 'gradientScale'] as const).map(
          (name) => {
            const local = f.local('v128');
            f.set(local, simd.splat(p[name]));
            return [name, local];
          },
        ),
      ) as Record<
        'lr' | 'beta1' | 'beta2' | 'eps' | 'decay' | 'firstCorrection' | 'secondCorrection' | 'gradientScale',
        Local
      >;
      const oneMinusBeta1 = f.local('v128');
      const oneMinusBeta2 = f.local('v128');
      f.set(oneMinusBeta1, simd.sub(simd.constSplat(1), splats.beta1));
      f.set(oneMinusBeta2, simd.sub(simd.constSplat(1), splats.beta2));
      const g = f.local('v128');
      const first = f.local('v128');
      const second = f.local('v128');
      emitLanes(f, count, (_o, load, store) => {
        f.set(g, simd.mul(load(grad), splats.gradientScale));
        f.set(first, simd.add(simd.mul(splats.beta1, load(m)), simd.mul(oneMinusBeta1, g)));
        f.set(second, simd.add(simd.mul(splats.beta2, load(v)), simd.mul(oneMinusBeta2, simd.mul(g, g))));
        f.exec(store(m, first));
        f.exec(store(v, second));
        const step = simd.div(
          simd.mul(splats.lr, simd.div(first, splats.firstCorrection)),
          simd.add(simd.sqrt(simd.div(second, splats.secondCorrection)), splats.eps),
        );
        f.exec(store(param, simd.sub(simd.mul(load(param), splats.decay), step)));
      });
    },
  );

  // Rotary embedding on rows of D = 2·half values: x [rows, D] where row r is position (r mod T);
  // cos/sin tables [T, half] f32 (sin already negated for the inverse rotation).
  module.func(
    'rope_rows',
    { params: { x: 'i32', out: 'i32', rows: 'i32', sequence: 'i32', half: 'i32', cosines: 'i32', sines: 'i32' } },
    (f, { x, out, rows, sequence, half, cosines, sines }) => {
      const row = f.local('i32');
      const position = f.local('i32');
      const table = f.local('i32');
      const halfBytes = f.local('i32');
      const first = f.local('v128');
      const second = f.local('v128');
      const cosine = f.local('v128');
      const sine = f.local('v128');
      f.set(halfBytes, i32.shl(half, 2));
      f.set(position, 0);
      f.for(row, 0, rows, 1, () => {
        f.set(table, i32.mul(position, halfBytes));
        emitLanes(f, half, (_o, load, store) => {
          f.set(first, load(x));
          f.set(second, load(i32.add(x, halfBytes)));
          f.set(cosine, load(i32.add(cosines, table)));
          f.set(sine, load(i32.add(sines, table)));
          f.exec(store(out, simd.sub(simd.mul(first, cosine), simd.mul(second, sine))));
          f.exec(store(i32.add(out, halfBytes), simd.add(simd.mul(second, cosine), simd.mul(first, sine))));
        });
        f.set(x, i32.add(x, i32.shl(halfBytes, 1)));
        f.set(out, i32.add(out, i32.shl(halfBytes, 1)));
        f.set(position, i32.add(position, 1));
        f.if(i32.eq(position, sequence), () => f.set(position, 0));
      });
    },
  );

  // Dense dst [s0, s1, s2, s3] = src viewed with element strides t0…t3 (t3 = 1 copies whole rows).
  module.func(
    'copy_strided_4d',
    {
      params: {
        src: 'i32',
        dst: 'i32',
        s0: 'i32',
        s1: 'i32',
        s2: 'i32',
        s3: 'i32',
        t0: 'i32',
        t1: 'i32',
        t2: 'i32',
        t3: 'i32',
      },
    },
    (f, { src, dst, s0, s1, s2, s3, t0, t1, t2, t3 }) => {
      const i0 = f.local('i32');
      const i1 = f.local('i32');
      const i2 = f.local('i32');
      const i3 = f.local('i32');
      const from = f.local('i32');
      const rowBytes = f.local('i32');
      f.set(rowBytes, i32.shl(s3, 2));
      f.for(i0, 0, s0, 1, () => {
        f.for(i1, 0, s1, 1, () => {
          f.for(i2, 0, s2, 1, () => {
            f.set(from, i32.add(src, i32.shl(i32.add(i32.add(i32.mul(i0, t0), i32.mul(i1, t1)), i32.mul(i2, t2)), 2)));
            f.if(
              i32.eq(t3, 1),
              () => {
                // memory.copy is a runtime call (~30 ns): short rows (attention heads) copy faster with vectors.
                f.if(
                  i32.geU(rowBytes, 512),
                  () => f.exec(memoryCopy(dst, from, rowBytes)),
                  () => {
                    f.for(i3, 0, i32.and(rowBytes, ~15), 16, () =>
                      f.exec(v128.store(i32.add(dst, i3), v128.load(i32.add(from, i3)))),
                    );
                    f.for(i3, i32.and(rowBytes, ~15), rowBytes, 4, () =>
                      f.exec(f32.store(i32.add(dst, i3), f32.load(i32.add(from, i3)))),
                    );
                  },
                );
              },
              () => {
                f.for(i3, 0, s3, 1, () => {
                  f.exec(f32.store(i32.add(dst, i32.shl(i3, 2)), f32.load(i32.add(from, i32.shl(i32.mul(i3, t3), 2)))));
                });
              },
            );
            f.set(dst, i32.add(dst, rowBytes));
          });
        });
      });
    },
  );
}
