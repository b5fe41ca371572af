#!/usr/bin/env node
// The serving peer: ONNX Runtime (CPU, onnxruntime-node) behind a minimal
// Open Inference Protocol v2 server, for the same load client as
// loom-serve (bench/serve/run.sh). Only what the client uses: GET
// /v2/models/NAME (metadata) and POST /v2/models/NAME/infer with float32
// inputs given as flat JSON arrays. No batching: each request is one
// session.run, which onnxruntime-node runs off the event loop, so requests
// overlap in ORT as they do in loom-serve's threads.
//
//   node ort_serve.js --model NAME=MODEL.onnx --port P [--threads T]
//
// Prints "listening on 127.0.0.1:PORT" when ready; SIGTERM stops it.
'use strict';
const http = require('http');
const path = require('path');
const {loadOrt} =
    require(path.join(__dirname, '..', '..', 'test', 'tools', 'ort_run.js'));

async function main() {
  const args = process.argv.slice(2);
  let name = null, file = null, port = 0, threads = 1;
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--model') [name, file] = args[++i].split('=');
    else if (args[i] === '--port') port = Number(args[++i]);
    else if (args[i] === '--threads') threads = Number(args[++i]);
  }
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const dims = (shape) => shape.map((d) => (typeof d === 'number' ? d : -1));
  const meta = JSON.stringify({
    name,
    platform: 'onnxruntime',
    inputs: session.inputMetadata.map(
        (m) => ({name: m.name, datatype: 'FP32', shape: dims(m.shape)})),
    outputs: session.outputMetadata.map(
        (m) => ({name: m.name, datatype: 'FP32', shape: dims(m.shape)})),
  });
  const reply = (res, status, body) => {
    res.writeHead(status, {'Content-Type': 'application/json'});
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === `/v2/models/${name}`)
      return reply(res, 200, meta);
    if (req.method !== 'POST' || req.url !== `/v2/models/${name}/infer`)
      return reply(res, 404, '{"error":"no such endpoint"}');
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString());
        const feeds = {};
        for (const input of body.inputs)
          feeds[input.name] = new ort.Tensor(
              'float32', Float32Array.from(input.data), input.shape);
        const results = await session.run(feeds);
        const outputs = session.outputNames.map((n) => ({
          name: n,
          datatype: 'FP32',
          shape: results[n].dims,
          data: Array.from(results[n].data),
        }));
        reply(res, 200, JSON.stringify({model_name: name, outputs}));
      } catch (e) {
        reply(res, 400, JSON.stringify({error: String(e)}));
      }
    });
  });
  server.keepAliveTimeout = 5000;
  server.listen(port, '127.0.0.1', () => {
    console.log(`listening on 127.0.0.1:${server.address().port}`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
