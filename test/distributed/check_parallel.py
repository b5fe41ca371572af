"""Data, tensor, ZeRO and pipeline parallel training equal single-process
training.

For MODEL (mlp or gpt2, test/training/), trains 5 optimizer steps on one
process with the global batch, then each configuration on the same global
batch under loom-launch, and checks (rtol 1e-5):

  * the loss, learning rate and gradient norm of every step (rank 0's log);
  * every parameter after the 5 steps (`loomc export --checkpoint`, read
    back with the onnx package), rtol 1e-5 and atol 1e-6: the ranks sum
    the gradient (or the partial products of a row-parallel matmul) in
    another order, and Adam divides each element's gradient by its own
    running scale, so an element whose gradient is near zero in some step
    moves by up to 1e-6 more or less (parameters here are 0.05 to 0.3 in
    size).

The labels have ignored entries (-100) spread unevenly over the ranks'
slices (the GPT-2-style data has them; the MLP's get some here): the
data-parallel step weighs each rank's mean by its share of the counted
labels, so its loss and gradients are the global batch's mean.

Then the first sharded configuration's checkpoint (ZeRO or tensor
parallel: a directory of per-rank files) resumes for one more step in one
process and in a configuration of each other layout of the ranks, each
printing the loss the single run's own checkpoint gives.

Pipeline configurations cut the global batch into micro-batches instead
of accumulating (the GPT-2 flags' --accumulate is dropped from every run,
the single one included), and their checkpoints (a directory of per-rank
files) resume the same way.

With --launchers (comma-separated), each configuration runs under each
launcher instead of one loom-launch:

  loom-launch  one launcher for all the ranks (the default)
  nodes2       two loom-launch processes as two nodes (--nnodes 2
               --node-rank 0 / 1, one --master-port), half the ranks each
  torchrun     PyTorch's torchrun --no_python (its static rendezvous, whose
               agent store holds --master_port; Debian's torchrun needs
               --redirects 1 --tee 1 under Python 3.11)
  mpirun       OpenMPI's mpirun (MASTER_ADDR / MASTER_PORT passed with -x)

A launcher whose program is not installed is skipped, saying so.

With --device cuda-sim, every artifact (the single one included) is
compiled with --target cuda and trained by loom-run --device cuda-sim: the
CUDA program's collective steps, run by the executor over Gloo on the
simulator's host memory (docs/cuda.md, "Collectives").

  check_parallel.py BIN_DIR TRAINING_DIR WORK_DIR MODEL CONFIGS
                    [--launchers L1,L2...] [--device cuda-sim]
  CONFIGS: comma-separated, each dpN (data parallel over N ranks), dpNzS
  (with ZeRO stage S; dpNz3 is FSDP, the parameters sharded too), tpM (tensor parallel over M ranks) or dpNtpM (both,
  N*M ranks), or ppSmM:SCHEDULE (S pipeline ranks, M micro-batches,
  schedule gpipe, 1f1b, interleaved or zb-h1; dpNppSmM:SCHEDULE with N
  replicas; tpTppSmM:SCHEDULE and dpNtpTppSmM:SCHEDULE with T
  tensor-parallel ranks inside each stage, N*T*S ranks), e.g.
  dp2,dp2z1,tp2,dp2tp2,pp2m4:zb-h1,tp2pp2m2:1f1b. tpM may end in sp
  (--sequence-parallel), vp (--vocab-parallel) or spvp (both): tp2sp.

A config may end in +rc (--recompute all) or +rc=STRATEGY: that
configuration compiles with the recomputation (inside each pipeline
stage), the single-process reference without it, so the parameters show
that recomputing changes no value. --flags "F..." (after CONFIGS) adds
loomc train flags to every compile, the reference's included (e.g.
--flags "--precision f16": the pipeline's loss scaling against the
single process's).
"""

import os
import re
import shutil
import socket
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

FLAGS = {
    "mlp": ["--optimizer", "adamw", "--lr", "0.01", "--weight-decay", "0.01",
            "--clip-norm", "0.5", "--batch", "8"],
    # SGD with momentum: the GPT-2-style model has parameters whose
    # gradient is zero but for rounding (the key bias: softmax ignores a
    # constant added to a row of scores), which Adam would scale up to
    # steps of lr in a random direction on either side.
    "gpt2": ["--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.05",
             "--weight-decay", "0.01", "--warmup", "2", "--lr-schedule", "cosine",
             "--total-steps", "5", "--clip-norm", "1.0", "--accumulate", "2",
             "--batch", "4"],
}


def run(cmd, node1=None):
    """Runs `cmd` (and `node1`, a second node's launcher, beside it)."""
    other = subprocess.Popen(node1, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) \
        if node1 else None
    r = subprocess.run(cmd, capture_output=True, text=True)
    out1 = other.communicate(timeout=300)[0] if other else ""
    if r.returncode != 0 or (other and other.returncode != 0):
        sys.exit("failed: %s\n%s%s%s" % (" ".join(cmd), r.stdout, r.stderr,
                                          out1))
    return r.stdout + r.stderr + out1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher_commands(kind, bindir, n):
    """(command prefix, second node's prefix or None) starting n ranks."""
    launch = os.path.join(bindir, "loom-launch")
    if kind == "loom-launch":
        return [launch, "--nproc", str(n), "--timeout", "120", "--"], None
    port = str(free_port())
    if kind == "nodes2":
        node = lambda r: [launch, "--nnodes", "2", "--node-rank", str(r),
                          "--nproc-per-node", str(n // 2), "--master-addr",
                          "127.0.0.1", "--master-port", port, "--timeout",
                          "120", "--"]
        return node(0), node(1)
    if kind == "torchrun":
        return ["torchrun", "--nnodes", "1", "--nproc_per_node", str(n),
                "--master_addr", "127.0.0.1", "--master_port", port,
                "--redirects", "1", "--tee", "1", "--no_python"], None
    if kind == "mpirun":
        return ["mpirun", "-np", str(n), "--oversubscribe",
                "--allow-run-as-root", "-x", "MASTER_ADDR=127.0.0.1", "-x",
                "MASTER_PORT=" + port, "-x", "LOOM_COLLECTIVE_TIMEOUT=120"], \
            None
    sys.exit("unknown launcher '%s' (loom-launch, nodes2, torchrun, mpirun)"
             % kind)


def logged(out):
    """(loss, lr, grad_norm) of each logged step of rank 0 (or the only)."""
    rows = []
    for line in out.splitlines():
        if line.startswith("[rank ") and not line.startswith("[rank 0]"):
            continue
        m = re.search(r"loss (\S+)\s+lr (\S+)\s+grad_norm (\S+)", line)
        if m:
            rows.append([float(x) for x in m.groups()])
    return np.array(rows)


def params(bindir, artifact, ckpt, work, name):
    out = os.path.join(work, name + ".onnx")
    run([os.path.join(bindir, "loomc"), "export", artifact, "--checkpoint",
         ckpt, "-o", out])
    model = onnx.load(out)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def parse_config(text):
    """(data ranks, tensor ranks, ZeRO stage, pipeline ranks, micro-batches,
    pipeline schedule) of a config like dp2z1 or dp2pp2m4:1f1b."""
    m = re.fullmatch(r"(?:dp(\d+))?(?:z(\d))?(?:tp(\d+)(?:sp)?(?:vp)?)?"
                     r"(?:pp(\d+)m(\d+):([a-z0-9-]+))?", text)
    if not m or not (m.group(1) or m.group(3) or m.group(4)):
        sys.exit("bad config '%s' (dpN, dpNzS, tpM, dpNtpM, ppSmM:SCHEDULE, "
                 "dpNtpMppSmK:SCHEDULE)" % text)
    return (int(m.group(1) or 1), int(m.group(3) or 1), int(m.group(2) or 0),
            int(m.group(4) or 1), int(m.group(5) or 1), m.group(6))


def config_extra(name):
    """The loomc train flags of a config's +SUFFIX (+rc, +rc=sqrt)."""
    if "+" not in name:
        return []
    suffix = name.split("+", 1)[1]
    m = re.fullmatch(r"rc(?:=(all|sqrt|none))?", suffix)
    if not m:
        sys.exit("bad config suffix '+%s' (+rc, +rc=all, +rc=sqrt)" % suffix)
    return ["--recompute", m.group(1) or "all"]


def tp_refinements(name):
    """The loomc train flags of a tpM config's sp / vp suffixes (tp2sp,
    tp2vp, tp2spvp): Megatron's sequence parallelism and vocab-parallel
    embedding and cross-entropy."""
    m = re.search(r"tp\d+((?:sp)?)((?:vp)?)", name.split("+")[0])
    if not m:
        return []
    return (["--sequence-parallel"] if m.group(1) else []) + \
        (["--vocab-parallel"] if m.group(2) else [])


def config_flags(config):
    dp, tp, zero, pp, micro, schedule = config
    flags = ["--data-parallel", str(dp), "--tensor-parallel", str(tp),
             "--zero", str(zero)]
    if schedule:
        flags += ["--pipeline-stages", str(pp), "--micro-batches",
                  str(micro), "--pipeline-schedule", schedule]
    return flags


def main():
    bindir, testdir, work, model = sys.argv[1:5]
    configs = [(c, parse_config(c.split("+")[0]))
               for c in sys.argv[5].split(",")]
    launchers = ["loom-launch"]
    if len(sys.argv) > 7 and sys.argv[6] == "--launchers":
        launchers = sys.argv[7].split(",")
    device = None
    if "--device" in sys.argv[6:]:
        device = sys.argv[sys.argv.index("--device") + 1]
        if device != "cuda-sim":
            sys.exit("--device takes cuda-sim (the CUDA program on the host)")
    extra = []
    if "--flags" in sys.argv[6:]:
        extra = sys.argv[sys.argv.index("--flags", 6) + 1].split()
    os.makedirs(work, exist_ok=True)
    loomc = os.path.join(bindir, "loomc")
    loomrun = os.path.join(bindir, "loom-run")

    data = dict(np.load(os.path.join(testdir, model + ".data.npz")))
    if model == "mlp":
        # Uneven: 2 of the first 4 rows, 1 of the next 4, none after.
        data["labels"][[0, 2, 5]] = -100
    data_path = os.path.join(work, model + ".data.npz")
    np.savez(data_path, **data)
    flags = ["--loss", "cross_entropy", "--logits", "logits", "--labels",
             "labels", "--opt-level", "0"] + FLAGS[model] + extra
    if any(c[5] for _, c in configs):
        if not all(c[5] for _, c in configs):
            sys.exit("pipeline and other configurations go in separate runs")
        if "--accumulate" in flags:
            i = flags.index("--accumulate")
            del flags[i:i + 2]
    batch = flags[flags.index("--batch") + 1]
    run_flags = ["--data", data_path, "--steps", "5", "--batch", batch,
                 "--log-every", "1", "--threads", "1"]
    if device:
        # Last in both lists: every compile and every run (the resumes'
        # too, which take run_flags from --batch on) gets them.
        flags += ["--target", "cuda"]
        run_flags += ["--device", device]

    single = os.path.join(work, model + "-single.loom")
    run([loomc, "train", os.path.join(testdir, model + ".onnx"), "-o", single]
        + flags)
    ckpt = os.path.join(work, model + "-single.ckpt")
    ref_log = logged(run([loomrun, single, "--save", ckpt] + run_flags))
    ref_params = params(bindir, single, ckpt, work, model + "-single")
    if ref_log.shape != (5, 3):
        sys.exit("single process: expected 5 logged steps, got %s" % ref_log)

    def launched(config):
        dp, tp, _, pp = config[:4]
        return launcher_commands("loom-launch", bindir, dp * tp * pp)[0]

    runs = []
    for kind in launchers:
        program = {"torchrun": "torchrun", "mpirun": "mpirun"}.get(kind)
        if program and not shutil.which(program):
            print("skipped %s: %s is not installed" % (kind, program))
            continue
        runs += [(kind, name, config) for name, config in configs]
    failed = False
    compiled = set()
    for kind, name, config in runs:
        tag = "%s-%s" % (model, name.replace(":", "-"))
        art = os.path.join(work, tag + ".loom")
        if art not in compiled:
            compiled.add(art)
            run([loomc, "train", os.path.join(testdir, model + ".onnx"), "-o",
                 art] + config_flags(config) + flags + config_extra(name) +
                tp_refinements(name))
        if kind != "loom-launch":
            tag += "-" + kind
        ck = os.path.join(work, tag + ".ckpt")
        dp, tp, _, pp = config[:4]
        cmd, node1 = launcher_commands(kind, bindir, dp * tp * pp)
        tail = [loomrun, art, "--save", ck] + run_flags
        log = logged(run(cmd + tail, node1 + tail if node1 else None))
        got = params(bindir, art, ck, work, tag)
        problems = []
        if log.shape != ref_log.shape:
            problems.append("logged %s, expected 5 steps" % (log,))
        # A NaN gradient norm (an f16 step whose gradients overflowed)
        # matches one in the same place.
        elif not np.allclose(log, ref_log, rtol=1e-5, atol=0,
                             equal_nan=True):
            problems.append("loss/lr/grad_norm %s, single %s" %
                            (log.tolist(), ref_log.tolist()))
        worst = 0.0
        for pname, ref in ref_params.items():
            value = got.get(pname)
            if value is None or value.shape != ref.shape:
                problems.append("parameter %s missing or misshaped" % pname)
                continue
            if not np.issubdtype(ref.dtype, np.floating):
                if not np.array_equal(value, ref):
                    problems.append("constant %s changed" % pname)
                continue
            worst = max(worst, float(np.abs(value - ref).max()))
            if not np.allclose(value, ref, rtol=1e-5, atol=1e-6):
                problems.append("parameter %s differs by up to %.3g" %
                                (pname, float(np.abs(value - ref).max())))
        if problems:
            failed = True
            print("FAIL %s: %s" % (tag, "; ".join(problems)))
        else:
            print("ok %s: 5 steps, losses %s, %d parameters (largest "
                  "difference %.2g)" %
                  (tag, " ".join("%.6g" % x for x in log[:, 0]),
                   len(ref_params), worst))
    # A sharded checkpoint resumes in one process and in the other
    # configurations: one more step prints the loss the single run's own
    # checkpoint gives.
    sharded = [(n, c) for n, c in configs
               if c[2] > 0 or c[1] > 1 or c[3] > 1]
    if sharded:
        name, config = sharded[0]
        ck = os.path.join(work, "%s-%s.ckpt" % (model, name.replace(":", "-")))
        if not os.path.isdir(ck):
            failed = True
            print("FAIL %s is not a sharded checkpoint (a directory)" % ck)
        more = ["--steps", "1"] + run_flags[run_flags.index("--batch"):]
        want = logged(run([loomrun, single, "--resume", ckpt, "--data",
                           data_path] + more))
        targets = [("one process", [loomrun, single])]
        layouts = {config[:2] + config[3:4]}
        for other, c in configs:
            layout = c[:2] + c[3:4]
            if layout not in layouts:  # one per other layout of the ranks
                layouts.add(layout)
                art = os.path.join(work, "%s-%s.loom" %
                                   (model, other.replace(":", "-")))
                targets.append((other, launched(c) + [loomrun, art]))
        for what, cmd in targets:
            got = logged(run(cmd + ["--resume", ck, "--data", data_path] +
                             more))
            if got.shape != want.shape or not np.allclose(got, want,
                                                         rtol=1e-5, atol=0):
                failed = True
                print("FAIL resuming %s in %s: %s, expected %s" %
                      (ck, what, got.tolist(), want.tolist()))
            else:
                print("ok the %s checkpoint resumes in %s" % (name, what))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
