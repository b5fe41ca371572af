# lit configuration for Loom's FileCheck tests. Run through CTest, or
# directly: python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v build/test
import os

import lit.formats

config.name = "Loom"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test", ".onnxtext"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit",
                   "node-import.sh", "node-import-expected.txt", "export-roundtrip.sh",
                   "export-ort.sh", "check-runtime-deps.sh", "tools", "models",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_binary_dir, "test")

# Our tools first, then FileCheck, not and count from LLVM.
config.environment["PATH"] = os.pathsep.join(
    [config.loom_tools_dir, config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])

# loomc's compile cache (compiler/CompileCache.h) stays off: no test fills
# a home cache or gets an output another run stored. The cache's own test
# (compiler/compile-cache.test) turns it on with a directory of its own.
config.environment["LOOM_CACHE"] = "0"

# The MLIR runner libraries, for tests that run lowered code with
# mlir-cpu-runner.
_llvm_lib = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(
    ("%mlir_c_runner_utils", os.path.join(_llvm_lib, "libmlir_c_runner_utils.so")))
config.substitutions.append(
    ("%mlir_runner_utils", os.path.join(_llvm_lib, "libmlir_runner_utils.so")))

# loom-serve is built where cpp-httplib and nlohmann-json are installed.
if os.path.exists(os.path.join(config.loom_tools_dir, "loom-serve")):
    config.available_features.add("loom-serve")

# CPUs with AVX-512, where oneDNN has kernels others lack (Winograd
# convolutions).
try:
    with open("/proc/cpuinfo") as _cpuinfo:
        if " avx512f" in _cpuinfo.read():
            config.available_features.add("avx512f")
except OSError:
    pass

# Debian's Python with numpy and onnx (the python3 on PATH may lack them),
# the test helper scripts and the PyTorch-exported models.
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(
    ("%test_tools", os.path.join(config.test_source_root, "tools")))
config.substitutions.append(
    ("%test_models", os.path.join(config.test_source_root, "models")))
# The example programs' sources and scripts.
config.substitutions.append(
    ("%examples", os.path.join(config.loom_source_dir, "examples")))
# The ONNX backend node tests (libonnx-testdata).
config.substitutions.append(
    ("%onnx_node", "/usr/share/libonnx-testdata/data/node"))
# The build directory (for `cmake --install`).
config.substitutions.append(("%loom_build", config.loom_binary_dir))
