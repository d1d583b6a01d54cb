"""nox for a machine that has only Python 3: ``python3 noxw.py ARGS`` is ``nox ARGS``.

Uses the nox this interpreter already has; otherwise installs nox once into ``.nox-bootstrap/`` beside this
file (``pip install --target``: no root, no user site, allowed where the system Python is externally
managed) and runs it from there. Sessions still get their own virtual environments (``noxfile.py``)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE = HERE / ".nox-bootstrap"
NOX = "nox>=2024.10"


def main() -> None:
    try:
        import nox  # noqa: F401
    except ImportError:
        if not (SITE / "nox" / "__main__.py").is_file():
            pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--target", str(SITE), NOX]
            print(f"noxw: nox is not installed; installing it into {SITE}: {' '.join(pip)}", flush=True)
            if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
                sys.exit("noxw: this Python has no pip (Debian/Ubuntu: apt install python3-pip python3-venv)")
            subprocess.run(pip, check=True)
        sys.path.insert(0, str(SITE))
    from nox.__main__ import main as nox_main

    sys.argv = ["nox", "--noxfile", str(HERE / "noxfile.py"), *sys.argv[1:]]
    nox_main()


if __name__ == "__main__":
    main()
