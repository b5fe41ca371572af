#!/usr/bin/env node
// Runs an ONNX model in ONNX Runtime (CPU, onnxruntime-node) and compares
// its outputs with reference .npy files.
//
//   node test/tools/ort_run.js MODEL.onnx --in X.npy... [--expect Y.npy...]
//        [--reference ORIG.onnx] [--rtol 1e-5] [--atol 1e-6]
//        [--ref-rtol 1e-3] [--ref-atol 1e-7] [--save-dir DIR]
//   node test/tools/ort_run.js --batch JOBS.jsonl
//
// Inputs go in the model's input order, outputs are compared in its output
// order: |got - want| <= atol + rtol * |want|, exact for integers and
// booleans. With --reference, ORIG.onnx runs on the same inputs and MODEL's
// outputs must equal ORIG's at rtol/atol; when ONNX Runtime cannot run
// ORIG (an op or type it lacks), MODEL is compared with the --expect files
// at ref-rtol/ref-atol instead, and when it can run neither the job is
// skipped. --batch runs one job per line, each a JSON object with the keys
// of the options (model, in, expect, reference, rtol, atol, refRtol,
// refAtol, name), in one process, and prints a summary line.
// Exit 0 on a match, 1 on a mismatch, 2 on bad usage or input, 77 (CTest's
// skip code) when onnxruntime-node is not installed (scripts/install-ort.sh
// installs it).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

// A failed job: code 1 is a mismatch or a model ONNX Runtime rejects, 2 is
// bad usage or input.
class JobError extends Error {
  constructor(code, msg) {
    super(msg);
    this.code = code;
  }
}

function die(code, msg) {
  throw new JobError(code, msg);
}

function loadOrt() {
  const prefix = process.env.LOOM_ORT_PREFIX ||
                 path.join(os.homedir(), '.cache', 'loom', 'ort');
  for (const where of ['onnxruntime-node',
                       path.join(prefix, 'node_modules', 'onnxruntime-node')]) {
    try {
      return require(where);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') {
        process.stderr.write(`ort_run: loading ${where}: ${e.message}\n`);
        process.exit(2);
      }
    }
  }
  process.stderr.write(
      'onnxruntime-node not installed (run scripts/install-ort.sh)\n');
  process.exit(77);
}

// .npy: dtype descr -> [typed array, ORT type name].
const DTYPES = {
  '<f4': [Float32Array, 'float32'], '<f8': [Float64Array, 'float64'],
  '<i8': [BigInt64Array, 'int64'], '<i4': [Int32Array, 'int32'],
  '|i1': [Int8Array, 'int8'], '|u1': [Uint8Array, 'uint8'],
  '|b1': [Uint8Array, 'bool'], '<f2': [Uint16Array, 'float16'],
  '<i2': [Int16Array, 'int16'], '<u2': [Uint16Array, 'uint16'],
  '<u4': [Uint32Array, 'uint32'], '<u8': [BigUint64Array, 'uint64'],
};

// IEEE half (the bits of a float16 element) -> number.
function halfToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    die(2, `cannot read '${file}': ${e.message}`);
  }
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    die(2, `'${file}' is not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12);
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) die(2, `'${file}': malformed .npy header`);
  if (order[1] === 'True') die(2, `'${file}': Fortran order is not supported`);
  const dtype = DTYPES[descr[1]];
  if (!dtype) die(2, `'${file}': dtype ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s)
                   .map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const [Ctor, type] = dtype;
  const off = start + headerLen;
  const bytes = buf.subarray(off, off + count * Ctor.BYTES_PER_ELEMENT);
  if (bytes.length !== count * Ctor.BYTES_PER_ELEMENT)
    die(2, `'${file}': truncated data`);
  const data = new Ctor(count);
  new Uint8Array(data.buffer).set(bytes);
  return {type, dims, data};
}

function writeNpy(file, t) {
  const descr = Object.keys(DTYPES).find(
      k => DTYPES[k][1] === t.type) || die(2, `cannot save ${t.type}`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (` +
               t.dims.join(', ') + (t.dims.length === 1 ? ',' : '') + '), }';
  header += ' '.repeat(63 - ((header.length + 10) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

function compare(name, got, want, rtol, atol) {
  const shape = JSON.stringify(got.dims);
  if (shape !== JSON.stringify(want.dims))
    return `output '${name}': shape ${shape}, expected ${JSON.stringify(want.dims)}`;
  if (got.type !== want.type)
    return `output '${name}': type ${got.type}, expected ${want.type}`;
  const exact = !got.type.startsWith('float');
  const value = got.type === 'float16' ? halfToNumber : Number;
  let worst = -1, worstErr = 0, maxAbs = 0;
  for (let i = 0; i < got.data.length; ++i) {
    const g = value(got.data[i]), w = value(want.data[i]);
    const err = Math.abs(g - w);
    const bad = exact ? g !== w
                      : !(err <= atol + rtol * Math.abs(w)) &&
                            !(Number.isNaN(g) && Number.isNaN(w)) &&
                            !(g === w);
    if (Number.isFinite(err)) maxAbs = Math.max(maxAbs, err);
    if (bad && (worst < 0 || err > worstErr)) {
      worst = i;
      worstErr = err;
    }
  }
  if (worst >= 0)
    return `output '${name}': element ${worst} is ${got.data[worst]}, ` +
           `expected ${want.data[worst]} (abs err ${worstErr}, ` +
           `rtol ${rtol}, atol ${atol})`;
  return {maxAbs};
}

// Runs MODEL on the inputs; returns {names, tensors}. Throws JobError(1)
// when ONNX Runtime rejects or fails to run the model.
async function runModel(ort, model, inputs) {
  if (!fs.existsSync(model)) die(2, `cannot read '${model}'`);
  let session;
  try {
    session = await ort.InferenceSession.create(model, {logSeverityLevel: 3});
  } catch (e) {
    die(1, `ONNX Runtime rejects '${model}': ${e.message.split('\n')[0]}`);
  }
  if (inputs.length !== session.inputNames.length)
    die(2, `'${model}' has ${session.inputNames.length} inputs ` +
           `(${session.inputNames.join(', ')}), got ${inputs.length}`);
  const feeds = {};
  session.inputNames.forEach((name, k) => {
    const t = inputs[k];
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  let results;
  try {
    results = await session.run(feeds);
  } catch (e) {
    die(1, `ONNX Runtime failed to run '${model}': ${e.message.split('\n')[0]}`);
  }
  const tensors = session.outputNames.map(name => {
    const r = results[name];
    return {type: r.type, dims: Array.from(r.dims), data: r.data};
  });
  return {names: session.outputNames, tensors};
}

function compareAll(out, want, rtol, atol, against) {
  if (want.length !== out.tensors.length)
    die(2, `the model has ${out.tensors.length} outputs, ${against} has ` +
           `${want.length}`);
  const lines = [];
  out.tensors.forEach((got, k) => {
    const r = compare(out.names[k], got, want[k], rtol, atol);
    if (typeof r === 'string') die(1, `${r} against ${against}`);
    lines.push(`output '${out.names[k]}': shape ${JSON.stringify(got.dims)} ` +
               `max abs err ${r.maxAbs.toExponential(2)} against ${against}`);
  });
  return lines;
}

// Runs one job; returns {status: 'ok' | 'skip', lines} or throws JobError.
async function runJob(ort, job) {
  const inputs = (job.in || []).map(readNpy);
  const expect = (job.expect || []).map(readNpy);
  const rtol = job.rtol ?? 1e-5, atol = job.atol ?? 1e-6;
  if (job.reference) {
    let ref = null, refError = null;
    try {
      ref = await runModel(ort, job.reference, inputs);
    } catch (e) {
      if (!(e instanceof JobError) || e.code !== 1) throw e;
      refError = e.message;
    }
    if (ref) {
      const out = await runModel(ort, job.model, inputs);
      return {status: 'ok',
              lines: compareAll(out, ref.tensors, rtol, atol, 'the original')};
    }
    let out;
    try {
      out = await runModel(ort, job.model, inputs);
    } catch (e) {
      if (!(e instanceof JobError) || e.code !== 1) throw e;
      return {status: 'skip',
              lines: [`ONNX Runtime runs neither model: ${refError}`]};
    }
    if (!expect.length) die(1, `the original does not run: ${refError}`);
    return {status: 'ok',
            lines: compareAll(out, expect, job.refRtol ?? 1e-3,
                              job.refAtol ?? 1e-7, 'the expected outputs')};
  }
  const out = await runModel(ort, job.model, inputs);
  if (job.saveDir)
    out.tensors.forEach((t, k) =>
                            writeNpy(path.join(job.saveDir, `output_${k}.npy`), t));
  if (!expect.length) return {status: 'ok', lines: []};
  return {status: 'ok',
          lines: compareAll(out, expect, rtol, atol, 'the expected outputs')};
}

async function runBatch(ort, file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    process.stderr.write(`ort_run: cannot read '${file}': ${e.message}\n`);
    return 2;
  }
  let ok = 0, failed = 0, skipped = 0, bad = 0;
  const lines = text.split('\n').filter(l => l.trim());
  for (let i = 0; i < lines.length; ++i) {
    let job;
    try {
      job = JSON.parse(lines[i]);
    } catch (e) {
      console.log(`BAD ${file}:${i + 1}: ${e.message}`);
      ++bad;
      continue;
    }
    const name = job.name || job.model;
    try {
      const r = await runJob(ort, job);
      if (r.status === 'skip') {
        ++skipped;
        console.log(`SKIP ${name}: ${r.lines[0]}`);
      } else {
        ++ok;
      }
    } catch (e) {
      if (!(e instanceof JobError)) throw e;
      if (e.code === 2) ++bad; else ++failed;
      console.log(`FAIL ${name}: ${e.message}`);
    }
  }
  console.log(`ort: ${ok} equal, ${failed} differ, ${skipped} not runnable ` +
              `in ONNX Runtime` + (bad ? `, ${bad} bad jobs` : ''));
  return bad ? 2 : failed ? 1 : 0;
}

async function main() {
  const args = process.argv.slice(2);
  const job = {in: [], expect: []};
  let batch = null;
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    const value = () => {
      if (++i < args.length) return args[i];
      process.stderr.write(`ort_run: ${a} needs a value\n`);
      process.exit(2);
    };
    if (a === '--in') job.in.push(value());
    else if (a === '--expect') job.expect.push(value());
    else if (a === '--reference') job.reference = value();
    else if (a === '--rtol') job.rtol = Number(value());
    else if (a === '--atol') job.atol = Number(value());
    else if (a === '--ref-rtol') job.refRtol = Number(value());
    else if (a === '--ref-atol') job.refAtol = Number(value());
    else if (a === '--save-dir') job.saveDir = value();
    else if (a === '--batch') batch = value();
    else if (!a.startsWith('--') && !job.model) job.model = a;
    else {
      process.stderr.write(`ort_run: unknown argument '${a}'\n`);
      process.exit(2);
    }
  }
  if (!job.model && !batch) {
    process.stderr.write('usage: ort_run.js MODEL.onnx --in X.npy... ' +
                         '[--expect Y.npy...] | --batch JOBS.jsonl\n');
    process.exit(2);
  }
  const ort = loadOrt();
  if (batch) process.exit(await runBatch(ort, batch));
  try {
    const r = await runJob(ort, job);
    r.lines.forEach(l => console.log(l));
    process.exit(0);
  } catch (e) {
    if (!(e instanceof JobError)) throw e;
    process.stderr.write(`ort_run: ${e.message}\n`);
    process.exit(e.code);
  }
}

// Run as a program; bench/cpu_inference/ort_bench.js reuses the loaders.
if (require.main === module) main();
module.exports = {loadOrt, readNpy};
