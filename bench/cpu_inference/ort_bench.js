#!/usr/bin/env node
// Times ONNX Runtime (CPU) on one model: the peer of loom-run --bench.
//
//   node ort_bench.js MODEL.onnx --in NAME=FILE.npy... --threads T
//        --runs N [--warmup W]
//
// Prints "latency over N runs: min A ms, median B ms, p90 C ms", the same
// line as loom-run. Sequential execution, intra-op threads T, inter-op 1,
// all graph optimizations.
'use strict';
const path = require('path');
const {loadOrt, readNpy} =
    require(path.join(__dirname, '..', '..', 'test', 'tools', 'ort_run.js'));

async function main() {
  const args = process.argv.slice(2);
  let model = null, threads = 1, runs = 20, warmup = 3;
  const inputs = {};
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--in') {
      const [name, file] = args[++i].split('=');
      inputs[name] = file;
    } else if (a === '--threads') threads = Number(args[++i]);
    else if (a === '--runs') runs = Number(args[++i]);
    else if (a === '--warmup') warmup = Number(args[++i]);
    else model = a;
  }
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const [name, file] of Object.entries(inputs)) {
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const ms = [];
  for (let i = 0; i < warmup + runs; ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    const end = process.hrtime.bigint();
    if (i >= warmup) ms.push(Number(end - start) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const at = q => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))];
  console.log(`latency over ${runs} runs: min ${ms[0].toFixed(3)} ms, ` +
              `median ${at(0.5).toFixed(3)} ms, p90 ${at(0.9).toFixed(3)} ms`);
}

main().catch(e => {
  process.stderr.write(`ort_bench: ${e.message}\n`);
  process.exit(1);
});
