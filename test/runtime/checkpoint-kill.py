#!/usr/bin/env python3
"""Kill-during-save: a checkpoint is the previous one or the new one, whole.

    checkpoint-kill.py LOOM_CKPT_WRITER LOOMC WORKDIR [--iterations N] [--seed S]

Compiles a small training artifact (test/runtime/Inputs/linreg-train.mlir)
with LOOMC, then N times: starts LOOM_CKPT_WRITER, which steps and saves to
the same path as fast as it can and prints "saved K" after each save; kills
it with SIGKILL after a random delay; loads the checkpoint with
`LOOM_CKPT_WRITER ... --check`, which must succeed (whole: header, length,
checksum, every tensor checked) with the counter K of the last save it
printed or K + 1 (the save it was in when killed, once renamed). Before its
first printed save the file must be the previous iteration's or the first
new one. Prints how many kills left a temporary file behind (killed inside
a save, between creating the temporary file and the rename).
"""
import argparse
import glob
import os
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def loaded_counter(writer, artifact, ckpt):
    r = subprocess.run([writer, artifact, ckpt, "--check"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return int(r.stdout.split()[1]), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("writer")
    ap.add_argument("loomc")
    ap.add_argument("workdir")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-delay", type=float, default=0.5)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    os.makedirs(args.workdir, exist_ok=True)
    artifact = os.path.join(args.workdir, "linreg.loom")
    subprocess.run([args.loomc, "compile",
                    os.path.join(HERE, "Inputs", "linreg-train.mlir"), "-o",
                    artifact], check=True)
    ckpt = os.path.join(args.workdir, "run.loomckpt")
    for stale in glob.glob(ckpt + "*"):
        os.unlink(stale)
    previous = None  # the counter in the file, None while there is none
    mid_save = saves = 0
    start = time.time()
    for i in range(args.iterations):
        p = subprocess.Popen([args.writer, artifact, ckpt],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        time.sleep(rng.uniform(0, args.max_delay))
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate()
        if p.returncode != -signal.SIGKILL:
            sys.exit(f"iteration {i}: the writer exited ({p.returncode}) "
                     f"before it was killed: {err.strip()}")
        printed = [int(l.split()[1]) for l in out.splitlines()
                   if l.startswith("saved ")]
        saves += len(printed)
        temps = glob.glob(ckpt + ".tmp-*")
        mid_save += bool(temps)
        for t in temps:
            os.unlink(t)
        if printed:
            allowed = {printed[-1], printed[-1] + 1}
        else:
            allowed = {1} | ({previous} if previous is not None else set())
        if not os.path.exists(ckpt):
            if printed or previous is not None:
                sys.exit(f"iteration {i}: the checkpoint is gone "
                         f"(last printed save: {printed[-1:]})")
            continue
        counter, error = loaded_counter(args.writer, artifact, ckpt)
        if counter is None:
            sys.exit(f"iteration {i} (seed {seed}): the checkpoint does not "
                     f"load: {error}")
        if counter not in allowed:
            sys.exit(f"iteration {i} (seed {seed}): the checkpoint holds "
                     f"micro-step {counter}, expected one of {sorted(allowed)}")
        previous = counter
    print(f"checkpoint-kill: {args.iterations} kills (seed {seed}), "
          f"{saves} saves printed, {mid_save} killed inside a save (a "
          f"temporary file left); every checkpoint loaded whole, the previous "
          f"or the new one ({time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()
