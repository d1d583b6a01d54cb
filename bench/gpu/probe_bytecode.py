"""Would the zygote start sooner with the run's bytecode cache filled first, one process per core? On an image that
ships torch without ``.pyc`` files (the lent H200s: ``PYTHONDONTWRITEBYTECODE=1``), each fresh bytecode cache
(``PYTHONPYCACHEPREFIX``, the run's under --cache-dir) makes the zygote compile every module it imports, one at a
time. Times, each in a fresh prefix: the zygote's imports alone (``import torch._inductor.package``, then
``torch._inductor.compile_fx`` and ``torch.export``); ``compileall`` of torch, triton and sympy with one worker
per core followed by the same imports; and the very files those imports load (listed once beforehand) compiled
one process per core, then the imports. No harness code: ``python3 bench/gpu/probe_bytecode.py`` on the GPU machine."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

IMPORTS = "import torch._inductor.package, torch._inductor.compile_fx, torch.export"
COMPILE = (
    "import compileall, importlib.util, os\n"
    "for name in ('torch', 'triton', 'sympy'):\n"
    "    for folder in importlib.util.find_spec(name).submodule_search_locations:\n"
    "        compileall.compile_dir(folder, quiet=2, workers=os.cpu_count())\n"
)


LISTED = (
    "import os, sys, py_compile\n"
    "from concurrent.futures import ProcessPoolExecutor\n"
    "files = open(sys.argv[1]).read().split()\n"
    "def one(f):\n"
    "    try: py_compile.compile(f, doraise=False)\n"
    "    except Exception: pass\n"
    "with ProcessPoolExecutor(os.cpu_count()) as pool: list(pool.map(one, files, chunksize=16))\n"
)
LIST = IMPORTS + (
    "\nimport sys\nfiles = [str(getattr(module, '__file__', None)) for module in list(sys.modules.values())]"
    "\nprint('\\n'.join(file for file in files if file.endswith('.py')))"
)


def seconds(code: str, prefix: str, *args: str) -> float:
    began = time.perf_counter()
    env = {**os.environ, "PYTHONPYCACHEPREFIX": prefix, "PYTHONDONTWRITEBYTECODE": ""}
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True)
    return time.perf_counter() - began


if __name__ == "__main__":
    listing = tempfile.mktemp(suffix=".txt")
    with open(listing, "w") as out:
        subprocess.run([sys.executable, "-c", LIST], stdout=out, check=True)
    for _ in range(2):
        prefix = tempfile.mkdtemp(prefix="pyc-")
        listed = seconds(LISTED, prefix, listing)
        listed_warm = seconds(IMPORTS, prefix)
        print(f"the imports' own files compiled first: {listed:.1f} s, then the imports {listed_warm:.1f} s")
        cold = seconds(IMPORTS, tempfile.mkdtemp(prefix="pyc-"))
        prefix = tempfile.mkdtemp(prefix="pyc-")
        compiled = seconds(COMPILE, prefix)
        warm = seconds(IMPORTS, prefix)
        print(
            f"{os.cpu_count()} cores: imports in a fresh prefix {cold:.1f} s; compileall {compiled:.1f} s, then the "
            f"imports {warm:.1f} s (together {compiled + warm:.1f} s)",
            flush=True,
        )
