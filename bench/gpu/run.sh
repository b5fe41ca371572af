#!/bin/sh
# On the GPU machine, bench/gpu/out/ made by make_sources.sh here: every
# GPU check and figure in one command, results in $OUT (else ./results):
#   sh bench/gpu/out/run.sh [tests] [sanitizer] [attention] [conformance] [training] [kernels] [step] [load] [profile] [scale]
# (no argument: all sections, in that order). Each section goes on when
# another fails; summary.txt says which passed. docs/cuda.md.
set -u
cd "$(dirname "$0")"
here=$(pwd)
res=${OUT:-$here/results}
mkdir -p "$res"
sections=${*:-tests sanitizer attention conformance training kernels step load profile scale}
: > "$res/summary.txt"
log() { echo "$*" | tee -a "$res/summary.txt"; }
want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
# The median step times of $res/NAME-{loom,eager,compile}.txt and Loom's
# ratios to the two peers.
ms() { sed -n 's/^per step: .* median \([0-9.]*\) ms.*/\1/p'; }
ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN{if(b>0)printf "%.2f",a/b; else print "?"}'; }
step_ratios() {
  l=$(ms < "$res/$1-loom.txt"); e=$(ms < "$res/$1-eager.txt")
  c=$(ms < "$res/$1-compile.txt")
  echo "loom ${l:-?} eager ${e:-?} compile ${c:-?}; loom/eager $(ratio "$l" "$e") loom/compile $(ratio "$l" "$c")"
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  python3 -c "import torch; print('torch', torch.__version__)"; } \
  > "$res/device.txt" 2>&1
log "device: $(head -1 "$res/device.txt")"

# The runtime built on the compiling machine: loom-run behind a wrapper
# that finds its libraries (the machine's libstdc++ first, the carried one
# when it is too old).
# (Unpacked once: lease.sh runs one section a call.)
if [ ! -f loom/.unpacked ]; then
  rm -rf loom && mkdir loom && tar -C loom -xJf loom.tar.xz &&
    touch loom/.unpacked
fi
# The comparisons' files (make_sources.sh packs them).
[ -d conformance ] || [ ! -f data.tar.xz ] || tar -xJf data.tar.xz
libs=$here/loom/lib
if LD_LIBRARY_PATH=$libs "$here/loom/bin/loom-run" 2>&1 | grep -q "not found"; then
  libs=$libs:$here/loom/lib/fallback
fi
cat > loom/loom-run <<EOF
#!/bin/sh
LD_LIBRARY_PATH=$libs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec $here/loom/bin/loom-run "\$@"
EOF
chmod +x loom/loom-run
lr=$here/loom/loom-run
export LOOM_CUDA_CACHE="$here/cache"

if want tests; then
  LD_LIBRARY_PATH=$libs "$here/loom/bin/LoomCudaExecutorTests" \
    --gtest_output=xml:"$res/executor-tests.xml" > "$res/executor-tests.txt" 2>&1
  log "executor tests (LoomCudaExecutorTests): exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$res/executor-tests.txt" | tr '\n' ' '))"
  # NCCL with one rank (docs/distributed.md): every collective on the GPU.
  LD_LIBRARY_PATH=$libs "$here/loom/bin/LoomCollectivesTests" \
    --gtest_filter='Nccl*' > "$res/nccl-tests.txt" 2>&1
  log "NCCL tests (LoomCollectivesTests Nccl*): exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$res/nccl-tests.txt" | tr '\n' ' '))"
fi
if want sanitizer; then
  # The executor's GPU tests and the fused attention cases under
  # compute-sanitizer's memcheck (out-of-bounds and misaligned accesses,
  # leaks of device memory), when the toolkit has it.
  san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -n "$san" ]; then
    # (API errors are the tests' own: a cubin the driver must refuse.)
    LD_LIBRARY_PATH=$libs "$san" --tool memcheck --error-exitcode 1 \
      --report-api-errors no \
      "$here/loom/bin/LoomCudaExecutorTests" --gtest_filter='*gpu*:-*sim*' \
      > "$res/sanitizer.txt" 2>&1
    rc1=$?
    LD_LIBRARY_PATH=$libs "$san" --tool memcheck --error-exitcode 1 \
      "$here/loom/bin/loom-run" \
      attention/causal_f32_d64/grad.loom --device cuda \
      --in input_0=attention/causal_f32_d64/q.npy --in input_1=attention/causal_f32_d64/k.npy \
      --in input_2=attention/causal_f32_d64/v.npy --in input_3=attention/causal_f32_d64/o.npy \
      --in input_4=attention/causal_f32_d64/lse.npy --in input_5=attention/causal_f32_d64/do.npy \
      >> "$res/sanitizer.txt" 2>&1
    log "compute-sanitizer memcheck: executor tests exit $rc1, attention backward exit $? ($(grep -c 'Invalid\|ERROR SUMMARY: [1-9]' "$res/sanitizer.txt") findings)"
  else
    log "compute-sanitizer: not on this machine"
  fi
fi
if want attention; then
  # The fused attention kernels (forward, log-sum-exp, gradients; causal,
  # masked, plain; f32, f16, bf16) against NumPy.
  python3 attention-gpu.py run "$lr" attention --device cuda \
    > "$res/attention.txt" 2>&1
  log "attention vs NumPy: exit $? ($(tail -1 "$res/attention.txt"))"
  # Causal attention (8 x 12 heads x S x 64, f16): fused, unfused, PyTorch
  # SDPA and eager, device time.
  python3 attention_bench.py run "$lr" attnbench > "$res/attention-bench.txt" 2>&1
  log "attention bench: exit $? ($(tr '\n' ' ' < "$res/attention-bench.txt" | cut -c1-600))"
fi
if want conformance; then
  python3 conformance-gpu.py run "$lr" conformance --results "$res/conformance.txt" \
    > "$res/conformance.log" 2>&1
  log "conformance vs CPU: exit $? ($(tail -1 "$res/conformance.log"))"
fi
if want training; then
  python3 training-gpu.py run "$lr" training --results "$res/training.txt" \
    > "$res/training.log" 2>&1
  log "training vs CPU: exit $? ($(tail -1 "$res/training.log"))"
fi
if want kernels; then
  # Fused elementwise chain (mul, tanh, add over 4096x4096 f32) against a
  # device-to-device copy in the same run; LayerNorm + GELU + residual
  # (4096x768 f32) against PyTorch eager and torch.compile; NVRTC compile
  # time per kernel of the GPT-2-style training step, then the cache: a
  # cold compile and a cache-hit load of every kernel.
  { python3 kernel_bench.py chain chain.cu
    python3 kernel_bench.py ln ln.cu
    python3 kernel_bench.py nvrtc gpt2_step.cu
    rm -rf nvrtc-cache
    ./loom-nvrtc-check --cache nvrtc-cache --arch sm_90 gpt2_step.cu
    ./loom-nvrtc-check --cache nvrtc-cache --arch sm_90 gpt2_step.cu
  } > "$res/kernels.txt" 2>&1
  log "kernels: exit $? (see kernels.txt)"
fi
if want step; then
  # The GPT-2-style training step (4 layers x 256, 128 tokens, batch 8,
  # AdamW + clipping): Loom's executor against PyTorch eager and
  # torch.compile, median step time after warm-up, same weights and data.
  steps=40 warm=10
  "$lr" step/gpt2.cuda.loom --device cuda --data step/gpt2.npz --steps $steps \
    --batch 8 --warmup $warm --log-every $steps > "$res/step-loom.txt" 2>&1
  (cd step && python3 torch_bench.py . gpt2 --device cuda --threads 1 \
    --steps $steps --batch 8 --warmup $warm) > "$res/step-eager.txt" 2>&1
  (cd step && python3 torch_bench.py . gpt2 --device cuda --threads 1 \
    --steps $steps --batch 8 --warmup $warm --compile) > "$res/step-compile.txt" 2>&1
  log "gpt2 step ms: $(step_ratios step)"
fi
if want load; then
  # The executor's load: NVRTC from an empty cache, then a cache hit.
  rm -rf "$here/load-cache"
  for pass in cold warm; do
    LOOM_CUDA_CACHE="$here/load-cache" "$lr" step/gpt2.cuda.loom --device cuda \
      --print-device --data step/gpt2.npz --steps 1 --batch 8 2>&1 |
      grep -E "device:|error" | sed "s/^/$pass: /"
  done > "$res/load.txt"
  log "load: $(tr '\n' ' ' < "$res/load.txt")"
fi
if want profile; then
  # Where the GPT-2-style step's time goes: every kernel, matmul and copy
  # timed with CUDA events over 12 steps (profile_summary.py).
  "$lr" step/gpt2.cuda.loom --device cuda --data step/gpt2.npz --steps 12 \
    --batch 8 --profile "$res/step-trace.json" > "$res/profile-run.txt" 2>&1
  python3 profile_summary.py "$res/step-trace.json" --top 40 \
    > "$res/profile.txt" 2>&1
  log "profile: $(head -4 "$res/profile.txt" | tr '\n' ' ')"
fi
if want scale && [ -f scale/gpt2_small.cuda.loom ]; then
  # GPT-2 small (124M; 12 x 768, vocab 50257), bf16 mixed precision, batch
  # 8 x 128 tokens, AdamW + clipping: Loom's executor against PyTorch eager
  # and torch.compile under bf16 autocast, on the same seeded weights (made
  # here by PyTorch: the artifact carries none) and data.
  steps=30 warm=5
  python3 gpt2_weights.py small scale/gpt2_small.weights.npz \
    > "$res/scale-weights.txt" 2>&1
  "$lr" scale/gpt2_small.cuda.loom --device cuda --print-device \
    --data scale/gpt2_small.npz --init scale/gpt2_small.weights.npz \
    --steps $steps --batch 8 --warmup $warm --log-every 10 \
    > "$res/scale-loom.txt" 2>&1
  (cd step && python3 torch_bench.py ../scale gpt2_small --device cuda \
    --threads 1 --steps $steps --batch 8 --warmup $warm --bf16) \
    > "$res/scale-eager.txt" 2>&1
  (cd step && python3 torch_bench.py ../scale gpt2_small --device cuda \
    --threads 1 --steps $steps --batch 8 --warmup $warm --bf16 --compile) \
    > "$res/scale-compile.txt" 2>&1
  log "gpt2 small bf16 step ms: $(step_ratios scale)"
fi
log "results in $res"
