"""Recomputation changes no result, and meets its budget.

For the MLP (every strategy) and the GPT-2-style model (none, and optimal at
half the planned peak of none), 5 training steps print the same losses with
and without `loomc train --recompute`. For GPT-2 it also checks the issue's
criterion: the compiled step's memory plan (the codegen arena, not the
pass's estimate) is within the budget, the pass planned the same peak, and
the extra FLOPs are no more than sqrt checkpointing's (sqrt's are taken by
running the pass alone on the same training step).

  check_recompute.py BIN_DIR TEST_DIR WORK_DIR
"""

import json
import os
import re
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def losses(bindir, artifact, data):
    out = run([os.path.join(bindir, "loom-run"), artifact, "--data", data,
               "--steps", "5", "--batch", "4", "--log-every", "1",
               "--threads", "1"])
    return re.findall(r"loss (\S+)", out)


def main():
    bindir, testdir, work = sys.argv[1:4]
    loomc = os.path.join(bindir, "loomc")
    os.makedirs(work, exist_ok=True)
    common = ["--loss", "cross_entropy", "--logits", "logits", "--labels",
              "labels", "--batch", "4", "--opt-level", "1"]

    # The MLP: every strategy.
    mlp = os.path.join(testdir, "mlp.onnx")
    mlp_data = os.path.join(testdir, "mlp.data.npz")
    flags = common + ["--optimizer", "adam", "--lr", "0.01"]
    reference = None
    for strategy in ["none", "all", "sqrt", "optimal"]:
        out = os.path.join(work, "mlp-%s.loom" % strategy)
        extra = ["--recompute", strategy]
        if strategy == "optimal":
            extra += ["--memory-budget", "1MiB"]
        run([loomc, "train", mlp, "-o", out] + flags + extra)
        got = losses(bindir, out, mlp_data)
        if len(got) != 5:
            sys.exit("mlp %s: expected 5 losses, got %s" % (strategy, got))
        if reference is None:
            reference = got
        elif got != reference:
            sys.exit("mlp %s: losses %s differ from none's %s" %
                     (strategy, got, reference))
        print("mlp %s: losses %s" % (strategy, " ".join(got)))

    # GPT-2-style: none, then optimal at half of none's planned peak.
    gpt2 = os.path.join(testdir, "gpt2.onnx")
    gpt2_data = os.path.join(testdir, "gpt2.data.npz")
    flags = common + ["--optimizer", "adamw", "--lr", "0.003",
                      "--weight-decay", "0.1", "--clip-norm", "1.0"]
    none = os.path.join(work, "gpt2-none.loom")
    none_json = os.path.join(work, "gpt2-none.json")
    ir = run([loomc, "train", gpt2, "-o", none, "--recompute", "none",
              "--report", none_json, "--print-ir"] + flags)
    step = os.path.join(work, "gpt2-step.mlir")
    with open(step, "w") as f:
        f.write(ir)
    with open(none_json) as f:
        arena_none = json.load(f)["memory_plan"]["arena_bytes"]
    budget = arena_none // 2

    sqrt_json = os.path.join(work, "gpt2-sqrt.json")
    run([os.path.join(bindir, "loom-opt"), step, "-o", os.devnull,
         "--loom-recompute=strategy=sqrt report=%s" % sqrt_json])
    with open(sqrt_json) as f:
        sqrt = json.load(f)

    opt = os.path.join(work, "gpt2-optimal.loom")
    opt_json = os.path.join(work, "gpt2-optimal.json")
    run([loomc, "train", gpt2, "-o", opt, "--memory-budget", str(budget),
         "--recompute", "optimal", "--report", opt_json] + flags)
    with open(opt_json) as f:
        report = json.load(f)
    rc = report["recompute"]
    arena = report["memory_plan"]["arena_bytes"]
    print("gpt2: codegen peak none %d, budget %d; optimal: pass planned %d, "
          "codegen %d, extra FLOPs %d (sqrt: %d, planned peak %d), solve "
          "%.0f ms" % (arena_none, budget, rc["planned_peak_after"], arena,
                       rc["extra_flops"], sqrt["extra_flops"],
                       sqrt["planned_peak_after"], rc["solve_ms"]))
    if arena > budget:
        sys.exit("gpt2: the compiled plan (%d bytes) is over the budget %d" %
                 (arena, budget))
    if rc["planned_peak_after"] != arena:
        sys.exit("gpt2: the pass planned %d bytes, the code's plan has %d" %
                 (rc["planned_peak_after"], arena))
    if rc["extra_flops"] > sqrt["extra_flops"]:
        sys.exit("gpt2: optimal recomputes %d FLOPs, more than sqrt's %d" %
                 (rc["extra_flops"], sqrt["extra_flops"]))
    # Without recomputation the pass's model of the buffers may differ a
    # little (a small index tensor the code folds away).
    if abs(rc["planned_peak_before"] - arena_none) > arena_none // 100:
        sys.exit("gpt2: the pass planned %d bytes without recomputation, "
                 "the code's plan has %d" %
                 (rc["planned_peak_before"], arena_none))
    want = losses(bindir, none, gpt2_data)
    got = losses(bindir, opt, gpt2_data)
    if len(want) != 5 or got != want:
        sys.exit("gpt2: losses with recompute %s, without %s" % (got, want))
    print("gpt2: identical losses %s" % " ".join(got))


if __name__ == "__main__":
    main()
