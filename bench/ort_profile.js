#!/usr/bin/env node
// ort_profile.js - ONNX Runtime's own per-operator profile of a model, summed per op kind, to set beside
// `superopt run --profile`. Usage: node bench/ort_profile.js MODEL.onnx [--opt disabled|all] [--threads N] [--iters N] [--nodes]
// Runs WARMUP (2) + iters (default 10) inferences on seeded uniform [-1, 1) inputs with enableProfiling and prints,
// per op kind (ORT's fused kernels keep their own names, e.g. FusedConv), the median over runs of the summed node
// time in ms, its share, and the node count per run; --nodes also prints every node in execution order (its median
// and fastest ms over the runs, op kind, the inputs' and outputs' shapes), to set beside superopt's per-step profile. The
// profile JSON goes to a temporary directory and is removed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const ort = require(path.join(__dirname, '..', 'tools', 'ort', 'node_modules', 'onnxruntime-node'));

function usage() {
  process.stderr.write('usage: ort_profile.js MODEL.onnx [--opt disabled|all] [--threads N] [--iters N] [--nodes]\n');
  process.exit(2);
}

function median(xs) {
  const s = xs.slice().sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const argv = process.argv.slice(2);
  let model = null, opt = 'all', threads = 1, iters = 10, nodes = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--opt') opt = argv[++i];
    else if (argv[i] === '--threads') threads = Number(argv[++i]);
    else if (argv[i] === '--iters') iters = Number(argv[++i]);
    else if (argv[i] === '--nodes') nodes = true;
    else if (!argv[i].startsWith('-') && !model) model = argv[i];
    else usage();
  }
  if (!model || !(iters > 0) || !(threads > 0)) usage();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ortprof-'));
  const warmup = 2;
  try {
    const s = await ort.InferenceSession.create(model, {
      graphOptimizationLevel: opt, intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
      enableProfiling: true, profileFilePrefix: path.join(dir, 'p'),
    });
    let seed = 12345;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296) * 2 - 1;
    const feeds = {};
    for (const name of s.inputNames) {
      const m = Array.isArray(s.inputMetadata) ? s.inputMetadata[s.inputNames.indexOf(name)] : s.inputMetadata[name];
      const shape = m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
      const data = new Float32Array(shape.reduce((p, q) => p * q, 1)).map(rnd);
      feeds[name] = new ort.Tensor('float32', data, shape);
    }
    for (let i = 0; i < warmup + iters; i++) await s.run(feeds);
    s.endProfiling();
    await s.release();
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    if (files.length !== 1) throw new Error(`expected one profile file, found ${files.length}`);
    const ev = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
    // model_run events delimit the runs; node events ("<name>_kernel_time") carry op_name and dur (us)
    const runs = ev.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts).slice(warmup);
    const per = new Map(); // op -> [ms per run]
    const cnt = new Map();
    const byNode = new Map(); // node name -> {op, shapes, ms per run}, in the first run's order
    runs.forEach((r, k) => {
      for (const e of ev) {
        if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < r.ts || e.ts > r.ts + r.dur) continue;
        const op = (e.args && e.args.op_name) || '?';
        if (!per.has(op)) per.set(op, new Array(runs.length).fill(0));
        per.get(op)[k] += e.dur / 1000;
        if (k === 0) cnt.set(op, (cnt.get(op) || 0) + 1);
        const nm = e.name.slice(0, -'_kernel_time'.length);
        if (!byNode.has(nm)) {
          const a = e.args || {}, shp = (t) => (Array.isArray(t) && t.length ? t.map((u) => JSON.stringify(Object.values(u)[0])).join(' ') : '?');
          byNode.set(nm, { op, shapes: `${shp(a.input_type_shape)} -> ${shp(a.output_type_shape)}`, ms: new Array(runs.length).fill(0) });
        }
        byNode.get(nm).ms[k] += e.dur / 1000;
      }
    });
    const rows = [...per.entries()].map(([op, v]) => [op, median(v), cnt.get(op) || 0]).sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((p, r) => p + r[1], 0);
    const runMed = median(runs.map((r) => r.dur / 1000));
    process.stdout.write(`${path.basename(model)}: ORT '${opt}', ${threads} thread(s), ${runs.length} runs: median run ${runMed.toFixed(3)} ms, sum of per-kind medians ${total.toFixed(3)} ms\n`);
    process.stdout.write('op                        count         ms      %\n');
    for (const [op, ms, n] of rows) process.stdout.write(`${op.padEnd(24)} ${String(n).padStart(6)} ${ms.toFixed(4).padStart(10)} ${(100 * ms / total).toFixed(2).padStart(6)}\n`);
    if (nodes) {
      process.stdout.write('node                                             op                 ms    min_ms  shapes (inputs -> outputs)\n');
      for (const [nm, v] of byNode) {
        process.stdout.write(`${nm.padEnd(48)} ${v.op.padEnd(16)} ${median(v.ms).toFixed(4).padStart(8)} ${Math.min(...v.ms).toFixed(4).padStart(8)}  ${v.shapes}\n`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => { process.stderr.write(`ort_profile.js: ${e.stack || e}\n`); process.exit(1); });
