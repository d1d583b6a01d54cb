"""Who sets environment variables while the case modules import, no harness code: the Liger suite's early zygote was
stopped and another started at the session (one H200 at ac99e1b and 63208c6: "environment changed:
KMP_DUPLICATE_LIB_OK, KMP_INIT_AT_FORK"), 8-10 s before the first cells could start. Imports torch, then each module
named, printing each variable set or removed on the way and the stack frame (outside importlib) that did it.

Usage: python bench/gpu/probe_env_at_import.py MODULE [MODULE ...]     (e.g. cases.liger_rms_norm)
"""

import importlib
import os
import sys
import traceback

given = dict(os.environ)


def who() -> str:
    frames = [frame for frame in traceback.extract_stack()[:-2] if "importlib" not in frame.filename]
    return " <- ".join(f"{frame.filename}:{frame.lineno}" for frame in reversed(frames[-4:]))


class Watched(type(os.environ)):
    def __setitem__(self, key, value):
        if os.environ.get(key) != value:
            print(f"set {key}={value!r}: {who()}", flush=True)
        super().__setitem__(key, value)

    def __delitem__(self, key):
        print(f"removed {key}: {who()}", flush=True)
        super().__delitem__(key)


os.environ.__class__ = Watched
for name in ["torch", *sys.argv[1:]]:
    print(f"--- import {name}", flush=True)
    importlib.import_module(name)
changed = sorted(key for key in {*given, *os.environ} if given.get(key) != os.environ.get(key))
print(f"changed in all: {changed}")
