"""The tool as a kernel library installs it: the wheel built from this checkout, installed (not editable) into a
fresh venv that reuses this interpreter's torch and triton (nothing downloaded), run from a folder holding only a
user's case module, under Triton's interpreter; then plain ``pytest`` collecting a user's matrix file."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from tests.conftest import REPO

# what the wheel is built from: the package's sources, its metadata and build backend (no .git, caches or reports)
SOURCES = ("pyproject.toml", "README.md", "MANIFEST.in", "matrix.toml", "harness", "cases", "tools")
COLLECT = ["--collect-only", "-q", "-p", "no:cacheprovider", "matrix.toml"]


def _isolation() -> list[str]:
    """``--no-build-isolation`` where this interpreter's setuptools builds wheels itself (70.1 and later); else
    pip builds in an isolated env with setuptools from the configured index (a nox venv has Python's bundled
    setuptools 65, which needs the wheel package)."""
    try:
        release = tuple(int(part) for part in version("setuptools").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return []
    return ["--no-build-isolation"] if release >= (70, 1) else []


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _tree(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """The wheel built (``pip wheel``) from a copy of the checkout's sources; what the build left in that copy."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, source / name)
    before = _tree(source)
    subprocess.run([*PIP, "wheel", "-q", "--no-deps", *_isolation(), "-w", root, source], check=True)
    (wheel,) = root.glob("*.whl")
    return wheel, _tree(source) ^ before


def test_building_the_wheel_leaves_the_checkout_as_it_was(built: tuple[Path, set[str]]):
    """No build/ and no *.egg-info in the checkout (tools/build_backend.py builds them in a temporary folder)."""
    assert built[1] == set()


@pytest.fixture(scope="module")
def venv(built: tuple[Path, set[str]]) -> Path:
    """A fresh venv with the wheel installed; torch, triton and pytest come from this interpreter's site-packages
    (a .pth line, after the venv's own: the harness resolves to the installed wheel)."""
    wheel = built[0]
    venv = wheel.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "_reuse_torch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([*PIP, "--python", venv / "bin" / "python", "install", "-q", "--no-deps", wheel], check=True)
    return venv


def test_the_wheel_installs_the_harness_namespace_only(venv: Path):
    """Nothing generic (cases, bench, examples) at the top of site-packages; every subpackage of harness/ and
    the default matrix are in."""
    (site,) = venv.glob("lib/python*/site-packages")
    assert not {"cases", "bench", "examples"} & {path.name for path in site.iterdir()}
    packages = {path.parent.relative_to(REPO) for path in (REPO / "harness").rglob("__init__.py")}
    assert all((site / package / "__init__.py").is_file() for package in packages)
    assert (site / "harness" / "cases" / "matrix.toml").read_text() == (REPO / "matrix.toml").read_text()


def test_a_user_module_runs_from_an_unrelated_folder_under_interpret(venv: Path, tmp_path: Path):
    """The console script, in a folder holding only the user's module: the packaged default matrix (said so),
    the module imported from the working directory, a relative --report-dir, autotuned stacks under the
    interpreter, the chart and the closing summary last."""
    user = tmp_path / "mylib"
    user.mkdir()
    shutil.copy(REPO / "examples" / "rmsnorm.py", user / "mykernels.py")
    selection = ["--cases", "mykernels", "--paths", "eager,cpu_fallback"]
    selection += ["--styles", "raw_jit,autotune,control", "--interpret", "--report-dir", "out"]
    done = subprocess.run(
        [venv / "bin" / "triton-torch-matrix", "run", *selection, "-n", "1", "-p", "no:cacheprovider"],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=600,
        # a user's own environment: no checkout on the path, no bytecode cache of the tests' session (nox -s tests)
        env={key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX")},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "(the packaged default (no ./matrix.toml here))" in done.stderr
    last = done.stdout.strip().splitlines()[-4:]
    assert last[0] == f"[harness] chart: {user / 'out' / 'matrix.md'}"
    assert last[1] == "[harness] 6 cells: 6 pass" and last[2] == "[harness] silently wrong: none"
    records = json.loads((user / "out" / "results.json").read_text())
    assert {cell["module"] for cell in records["cells"]} == {"mykernels"}
    assert "every config once" in (user / "out" / "matrix.md").read_text()
    written = sorted(path.name for path in user.iterdir() if path.name != "__pycache__")  # Python's own, if it writes
    assert written == [".cache", "mykernels.py", "out"]  # caches, chart


def test_plain_pytest_collects_a_user_matrix_without_a_conftest(venv: Path, tmp_path: Path):
    """The pytest11 entry point: ``pytest matrix.toml`` in a library's folder (no conftest.py) collects its cells,
    a bare name in its ``cases`` that is no built-in id imported as the library's module."""
    shutil.copy(REPO / "examples" / "rmsnorm.py", tmp_path / "mykernels.py")
    (tmp_path / "matrix.toml").write_text(
        'cases = ["mykernels", "sin"]\nstyles = ["raw_jit"]\n[paths]\neager = { device = "cuda", timeout = 60 }\n'
        "[tolerances]\nfloat32 = { atol = 1e-5, rtol = 1e-5 }\n"
    )
    done = subprocess.run(
        # pytest's console script: -I, so the working directory is not on sys.path (the plugin puts it there)
        [venv / "bin" / "python", "-I", "-c", "import pytest, sys; sys.exit(pytest.console_main())", *COLLECT],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "matrix.toml::simple_rmsnorm-raw_jit-eager" in done.stdout
    assert "matrix.toml::sin-raw_jit-eager" in done.stdout
