#!/usr/bin/env node
// ONNX Runtime (CPU) reference runner: runs a model on raw typed inputs (float32, int64, int32, bool), writes raw outputs, times it.
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE = `usage: ort_run.js MODEL.onnx [--inputs FILE] [--outputs FILE] [--iters N] [--warmup N]
                  [--threads N] [--opt disabled|basic|extended|all] [--seed N] [--json] [--serve] [-v]
  --inputs FILE   raw little-endian, all graph inputs back to back in graph order, each in its own
                  element type (float32 4 bytes, int64 8, int32 4, bool 1: numpy's tobytes(), as
                  superopt run reads them) (default: float32 inputs seeded uniform random in [-1, 1),
                  splitmix64 stream as in superopt run, --seed, default 1; integer and bool inputs 0)
  --outputs FILE  write all graph outputs as raw little-endian, back to back in graph order, each in its
                  own element type (as superopt run --outputs FILE)
  --iters N       timed runs (default 1, or 20 with --json)
  --warmup N      untimed runs before timing (default 0, or 3 with --json)
  --threads N     intra-op threads (default 1); inter-op threads are 1, execution is sequential
  --opt LEVEL     graph optimization level (default all)
  --dim SYM=N     value of the symbolic dimension SYM (repeatable; as superopt's --dim)
  --input-shape NAME=D0,D1,...  shape of input NAME (repeatable; as superopt's --input-shape)
  --json          print one line {"median_ms":…,"min_ms":…,"iters":…}
  --serve         (bench/lockstep.py) after loading and the --warmup runs print {"ready": true, ...}, then
                  answer each stdin line 'run K [W]' (W untimed runs, then K timed) with one line
                  {"times_ms": [...], "median_ms": ..., "min_ms": ...} (a bad line: {"error": ...}, serving on)
                  until 'quit' or end of input; --outputs are written from the last run; --iters unused
  -v              print input/output names and shapes on stderr`;

function usage(msg) {
  if (msg) process.stderr.write(`ort_run.js: ${msg}\n`);
  process.stderr.write(USAGE + '\n');
  process.exit(2);
}

function fail(msg) {
  process.stderr.write(`ort_run.js: ${msg}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const a = { model: null, inputs: null, outputs: null, iters: null, warmup: null, threads: 1,
              opt: 'all', seed: 1, json: false, serve: false, verbose: false, dims: {}, shapes: {} };
  const intArg = (name, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) usage(`${name} needs an integer >= ${min}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    switch (x) {
      case '--inputs': a.inputs = argv[++i]; if (!a.inputs) usage('--inputs needs a file'); break;
      case '--outputs': a.outputs = argv[++i]; if (!a.outputs) usage('--outputs needs a file'); break;
      case '--iters': a.iters = intArg(x, argv[++i], 1); break;
      case '--warmup': a.warmup = intArg(x, argv[++i], 0); break;
      case '--threads': a.threads = intArg(x, argv[++i], 1); break;
      case '--seed': a.seed = intArg(x, argv[++i], 0); break;
      case '--opt':
        a.opt = argv[++i];
        if (!['disabled', 'basic', 'extended', 'all'].includes(a.opt)) usage('--opt must be disabled|basic|extended|all');
        break;
      case '--dim': case '--input-shape': {
        const v = argv[++i] || '';
        const eq = v.lastIndexOf('=');
        if (eq <= 0) usage(`${x} needs NAME=VALUE`);
        const vals = v.slice(eq + 1).split(',');
        if (!vals.every((d) => /^\d+$/.test(d)) || (x === '--dim' && vals.length !== 1)) usage(`${x} '${v}': bad value`);
        (x === '--dim' ? a.dims : a.shapes)[v.slice(0, eq)] = x === '--dim' ? Number(vals[0]) : vals.map(Number);
        break;
      }
      case '--json': a.json = true; break;
      case '--serve': a.serve = true; break;
      case '-v': case '--verbose': a.verbose = true; break;
      case '-h': case '--help': process.stdout.write(USAGE + '\n'); process.exit(0); break;
      default:
        if (x.startsWith('-') || a.model) usage(`unexpected argument '${x}'`);
        a.model = x;
    }
  }
  if (!a.model) usage('missing MODEL.onnx');
  if (a.iters === null) a.iters = a.json ? 20 : 1;
  if (a.warmup === null) a.warmup = a.json || a.serve ? 3 : 0;
  return a;
}

// splitmix64, the same stream as superopt's so_rng_uniform (src/common.c): state starts at the
// seed and runs on across all inputs in graph order; 24 random bits -> [-1, 1), exact in float32.
function uniformGen(seed) {
  const M = (1n << 64n) - 1n;
  let s = BigInt(seed) & M;
  return () => {
    s = (s + 0x9E3779B97F4A7C15n) & M;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M;
    z ^= z >> 31n;
    return Number(z >> 40n) / 16777216 * 2 - 1;
  };
}

function median(xs) {
  const s = xs.slice().sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const SERVE_MAX_K = 100000;

// --serve: the protocol in USAGE, one stdin line at a time; returns the last run's results (or null
// when none ran). A line longer than 256 characters or not 'run K [W]' / 'quit' gets an error line.
async function serve(session, feeds) {
  const readline = require('readline');
  const r6 = (x) => Math.round(x * 1e6) / 1e6;
  const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  out({ ready: true, pid: process.pid });
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  let results = null;
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === 'quit') break;
    if (line === '') continue;
    const m = line.length <= 256 ? /^run +(\d+)(?: +(\d+))?$/.exec(line) : null;
    const k = m ? Number(m[1]) : 0, w = m && m[2] !== undefined ? Number(m[2]) : 0;
    if (!m || k < 1 || k > SERVE_MAX_K || w > SERVE_MAX_K) {
      out({ error: `bad command (expected 'run K [W]' with 1 <= K <= ${SERVE_MAX_K}, 0 <= W <= ${SERVE_MAX_K}, or 'quit'): ${line.slice(0, 60)}` });
      continue;
    }
    for (let i = 0; i < w; i++) results = await session.run(feeds);
    const times = [];
    for (let i = 0; i < k; i++) {
      const t0 = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    out({ times_ms: times.map(r6), median_ms: r6(median(times)), min_ms: r6(times.reduce((p, q) => Math.min(p, q))) });
  }
  rl.close();
  return results;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail(`cannot load onnxruntime-node (run 'npm install --ignore-scripts' in ${__dirname}): ${e.message}`);
  }
  if (!fs.existsSync(args.model)) fail(`${args.model}: no such file`);

  let session;
  try {
    session = await ort.InferenceSession.create(args.model, {
      graphOptimizationLevel: args.opt,
      intraOpNumThreads: args.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
  } catch (e) {
    fail(`${args.model}: cannot load model: ${e.message}`);
  }

  // Input shapes and types from the session's metadata (onnxruntime-node >= 1.21).
  const meta = session.inputMetadata;
  if (!meta) fail(`${args.model}: this onnxruntime-node has no inputMetadata; need >= 1.21`);
  const SIZE = { float32: 4, int64: 8, int32: 4, bool: 1 };
  const specs = session.inputNames.map((name, i) => {
    const m = Array.isArray(meta) ? meta[i] : meta[name];
    if (!m || !m.isTensor) fail(`${args.model}: input '${name}' is not a tensor`);
    if (!(m.type in SIZE)) fail(`${args.model}: input '${name}' has type ${m.type}; float32, int64, int32 and bool inputs are supported`);
    const type = m.type;
    if (args.shapes[name]) return { name, type, shape: args.shapes[name], size: args.shapes[name].reduce((p, q) => p * q, 1) };
    const shape = m.shape.map((d) => {
      if (typeof d === 'number' && d >= 0) return d;
      if (typeof d === 'string' && d in args.dims) return args.dims[d];
      process.stderr.write(`ort_run.js: ${args.model}: input '${name}' has symbolic dim '${d}', using 1\n`);
      return 1;
    });
    return { name, type, shape, size: shape.reduce((p, q) => p * q, 1) };
  });
  const bytes = specs.reduce((p, s) => p + s.size * SIZE[s.type], 0);

  let buf = null;
  if (args.inputs) {
    try { buf = fs.readFileSync(args.inputs); } catch (e) { fail(`${args.inputs}: ${e.message}`); }
    if (buf.length !== bytes) {
      fail(`${args.inputs}: has ${buf.length} bytes, model inputs need ${bytes} (${specs.map((s) => `${s.name} ${s.type}[${s.shape}]`).join(', ')})`);
    }
  }
  const rnd = uniformGen(args.seed);
  const feeds = {};
  let off = 0;
  for (const s of specs) {
    let data;
    if (s.type === 'float32') {
      data = new Float32Array(s.size);
      for (let i = 0; i < s.size; i++) data[i] = buf ? buf.readFloatLE(off + i * 4) : rnd();
    } else if (s.type === 'int64') {
      data = new BigInt64Array(s.size);
      if (buf) for (let i = 0; i < s.size; i++) data[i] = buf.readBigInt64LE(off + i * 8);
    } else if (s.type === 'int32') {
      data = new Int32Array(s.size);
      if (buf) for (let i = 0; i < s.size; i++) data[i] = buf.readInt32LE(off + i * 4);
    } else {
      data = new Uint8Array(s.size);
      if (buf) for (let i = 0; i < s.size; i++) data[i] = buf[off + i] !== 0 ? 1 : 0;
    }
    off += s.size * SIZE[s.type];
    feeds[s.name] = new ort.Tensor(s.type, data, s.shape);
    if (args.verbose) process.stderr.write(`input  ${s.name} ${s.type}[${s.shape}]\n`);
  }

  let results;
  try {
    for (let i = 0; i < args.warmup; i++) results = await session.run(feeds);
    if (args.serve) results = (await serve(session, feeds)) || results;
    const times = [];
    for (let i = 0; i < (args.serve ? 0 : args.iters); i++) {
      const t0 = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    if (args.json && !args.serve) {
      const r = (x) => Math.round(x * 1e6) / 1e6; // ns resolution: the small models run in ~0.01 ms
      process.stdout.write(JSON.stringify({ median_ms: r(median(times)), min_ms: r(Math.min(...times)), iters: args.iters }) + '\n');
    }
  } catch (e) {
    fail(`${args.model}: run failed: ${e.message}`);
  }

  if (!results) {
    try { results = await session.run(feeds); } catch (e) { fail(`${args.model}: run failed: ${e.message}`); }
  }
  const chunks = [];
  for (const name of session.outputNames) {
    const t = results[name];
    if (args.verbose) process.stderr.write(`output ${name} [${t.dims}] ${t.type}\n`);
    if (!(t.type in SIZE)) fail(`${args.model}: output '${name}' has type ${t.type}; float32, int64, int32 and bool are supported`);
    const b = Buffer.alloc(t.data.length * SIZE[t.type]);
    for (let i = 0; i < t.data.length; i++) {
      if (t.type === 'float32') b.writeFloatLE(t.data[i], i * 4);
      else if (t.type === 'int64') b.writeBigInt64LE(BigInt(t.data[i]), i * 8);
      else if (t.type === 'int32') b.writeInt32LE(t.data[i], i * 4);
      else b[i] = t.data[i] ? 1 : 0;
    }
    chunks.push(b);
  }
  if (args.outputs) {
    try {
      fs.mkdirSync(path.dirname(path.resolve(args.outputs)), { recursive: true });
      fs.writeFileSync(args.outputs, Buffer.concat(chunks));
    } catch (e) {
      fail(`${args.outputs}: ${e.message}`);
    }
  }
}

main().catch((e) => fail(e.stack || String(e)));
