"""The types of a results file's environment fields, checked when it loads: a badly typed one is bad input (one line
naming the file and the key), never a traceback in the chart, the gate or a ``--reuse`` run that reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import InputError

TEXT = (str, type(None))
NUMBER = (int, float, type(None))
WHOLE = (int, type(None))
FLAG = (bool, type(None))
TABLE = (dict, type(None))
LIST = (list, type(None))

# environment key -> the types its value may have (absent is always fine)
ENVIRONMENT = {
    "torch": TEXT,
    "triton": TEXT,
    "cuda": TEXT,
    "device": TEXT,
    "python": TEXT,
    "host": TEXT,
    "timestamp": TEXT,
    "commit": TEXT,
    "source_digest": TEXT,
    "ld_preload": TEXT,
    "matrix": TEXT,
    "shard": TEXT,
    "cache_dir": TEXT,
    "triton_interpret": FLAG,
    "complete": FLAG,
    "workers": WHOLE,
    "reruns": WHOLE,
    "resumed_cells": WHOLE,
    "reused_cells": WHOLE,
    "shards": WHOLE,
    "wall_seconds": NUMBER,
    "settings": TABLE,
    "axes": TABLE,
    "styles": TABLE,
    "paths": TABLE,
    "memory": TABLE,
    "cell_environment": TABLE,
    "docs": TABLE,
    "goals": TABLE,
    "goal_sets": TABLE,
    "in_place": TABLE,
    "expected_cells": LIST,
    "argv": LIST,
    "hosts": LIST,
}

# environment table -> the types of each of its entries' fields (an entry is a table; other fields are free)
ENTRIES = {
    "styles": {"decorator": TEXT, "wrapper": TEXT},
    "paths": {"group": TEXT, "doc": TEXT, "device": TEXT},
    "memory": {
        "cells": WHOLE,
        "gpu": TEXT,
        **dict.fromkeys(("rss_first_mb", "rss_last_mb", "peak_rss_mb", "gpu_peak_mb", "rss_mb_per_cell"), NUMBER),
    },
}


def check_environment(file: Path, env: dict[str, Any]) -> None:
    """``InputError`` on the first optional environment field of the wrong type (lists and tables inside too)."""
    _typed(file, "environment.", env, ENVIRONMENT)
    for key in ("expected_cells", "argv", "hosts"):
        _strings(file, f"environment.{key}", env.get(key) or [])
    for key in ("settings", "cell_environment"):  # variable -> its value
        for name, value in (env.get(key) or {}).items():
            if not isinstance(value, str):
                raise InputError(file, f"environment.{key}.{name}", f"expected a string, got {value!r:.80}")
    for key, types in ENTRIES.items():
        for name, entry in (env.get(key) or {}).items():
            if not isinstance(entry, dict):
                raise InputError(file, f"environment.{key}.{name}", f"expected a table, got {entry!r:.80}")
            _typed(file, f"environment.{key}.{name}.", entry, types)
    for key, lists in (("axes", "ids"), ("goals", "path ids"), ("goal_sets", "goal names"), ("in_place", "ids")):
        for name, ids in (env.get(key) or {}).items():
            if not isinstance(ids, list):
                raise InputError(file, f"environment.{key}.{name}", f"expected a list of {lists}, got {ids!r:.80}")
            _strings(file, f"environment.{key}.{name}", ids)
    _docs(file, env.get("docs") or {})


def _typed(file: Path, prefix: str, table: dict[str, Any], types: dict[str, tuple[type, ...]]) -> None:
    for name, allowed in types.items():
        value = table.get(name)
        # a bool is an int to Python, but not a count or a number of seconds
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            expected = " or ".join(kind.__name__ for kind in allowed if kind is not type(None))
            raise InputError(file, f"{prefix}{name}", f"expected {expected} (or null), got {value!r:.80}")


def _strings(file: Path, key: str, values: list[Any]) -> None:
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise InputError(file, f"{key}[{index}]", f"expected a string, got {value!r:.80}")


def _docs(file: Path, docs: dict[str, Any]) -> None:
    """environment.docs: ``sources`` a table of texts, ``claims`` (or the older ``expect``) style -> path -> claim."""
    for name in ("sources", "claims", "expect"):
        value = docs.get(name)
        if value is not None and not isinstance(value, dict):
            raise InputError(file, f"environment.docs.{name}", f"expected a table, got {value!r:.80}")
    for source, text in (docs.get("sources") or {}).items():
        if not isinstance(text, str):
            raise InputError(file, f"environment.docs.sources.{source}", f"expected a string, got {text!r:.80}")
    for name in ("claims", "expect"):
        for style, by_path in (docs.get(name) or {}).items():
            if by_path is not None and not isinstance(by_path, dict):
                raise InputError(file, f"environment.docs.{name}.{style}", f"expected a table, got {by_path!r:.80}")
            for path, claim in (by_path or {}).items():
                key = f"environment.docs.{name}.{style}.{path}"
                if isinstance(claim, dict):  # {"supported": bool, "source": name}; a bare bool claims it alone
                    if not isinstance(claim.get("supported"), bool):
                        raise InputError(
                            file, f"{key}.supported", f"expected true or false, got {claim.get('supported')!r:.80}"
                        )
                    _typed(file, f"{key}.", claim, {"source": TEXT})
                elif not isinstance(claim, bool):
                    raise InputError(file, key, f"expected true, false or a claim table, got {claim!r:.80}")
