#!/usr/bin/env node
// Creates an ONNX Runtime (CPU) session for one model and times it: the
// peer of `loomc compile` in bench/scale (ONNX Runtime optimizes the graph
// when the session is created, as loomc compiles it ahead of time).
//
//   node ort_session.js MODEL.onnx [--threads T]
//
// Prints "session create: X ms". The session options are those of
// bench/cpu_inference/ort_bench.js (sequential, intra-op threads T,
// inter-op 1, all graph optimizations). External data beside the model is
// read by ONNX Runtime itself.
'use strict';
const path = require('path');
const {loadOrt} =
    require(path.join(__dirname, '..', '..', 'test', 'tools', 'ort_run.js'));

async function main() {
  const args = process.argv.slice(2);
  let model = null, threads = 1;
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--threads') threads = Number(args[++i]);
    else model = args[i];
  }
  if (!model) {
    process.stderr.write('usage: node ort_session.js MODEL.onnx [--threads T]\n');
    process.exit(2);
  }
  const ort = loadOrt();
  const start = process.hrtime.bigint();
  await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  console.log(`session create: ${ms.toFixed(1)} ms`);
}

main().catch(e => {
  process.stderr.write(`ort_session: ${e.message}\n`);
  process.exit(1);
});
