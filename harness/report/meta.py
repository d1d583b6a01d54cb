"""What the chart knows about the axes, read from results.json's environment: each style's wrapper, each path's
group and definition, the goals, the docs' claims. Older results files lack these keys: the fallbacks are here,
as data, and said so in the chart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Row groups in this order; what each wrapper is.
WRAPPERS = {
    "launcher": "a Python function launches the `@triton.jit` kernel; no `torch.library` op",
    "triton_op": "`torch.library.triton_op` + `wrap_triton`: PyTorch traces into the kernel",
    "custom_op": "`torch.library.custom_op`: an opaque op that launches the kernel",
    "as_shipped": "the case's op as its library ships it, called unchanged; how it is wrapped is listed per case below",
    "control": "the case's pure-PyTorch reference, no Triton: when it fails too, the path is broken, not the style",
}
OTHER_GROUP = "other"

# Goals when results.json has no environment.goals (the matrix file's [goals] is where they belong).
DEFAULT_GOALS: dict[str, list[str]] = {
    "run eagerly": ["eager"],
    "torch.compile with fullgraph": ["fullgraph"],
    "dynamic shapes": ["dynamic"],
    "CUDA graphs": ["cudagraphs"],
    "train with compile": ["train_compile"],
    "export non-strict": ["export_nonstrict"],
    "export with a dynamic batch": ["export_dynamic_strict", "export_dynamic_nonstrict"],
    "deploy with AOTInductor in a fresh process": ["aoti_standalone"],
    "CPU fallback": ["cpu_fallback"],
    "tensor subclasses": ["subclass_eager", "subclass_compile"],
    "FLOP counting": ["flop_counter"],
}

# Group and definition of the paths results files had before environment.paths existed (README, "Paths").
KNOWN_PATHS: dict[str, tuple[str, str]] = {
    "eager": ("compile", "the module called directly"),
    "compile": ("compile", "`torch.compile` (Inductor)"),
    "fullgraph": ("compile", "`torch.compile(fullgraph=True)`: a graph break is an error"),
    "dynamic": ("compile", "`torch.compile(dynamic=True)` over the case's three sizes; recompiles counted"),
    "cudagraphs": ("compile", '`torch.compile(mode="reduce-overhead")` (CUDA graphs), three calls, fresh inputs'),
    "export_strict": ("export and deploy", "`torch.export.export(strict=True)`, then `ep.module()`"),
    "export_nonstrict": ("export and deploy", "`torch.export.export(strict=False)`, then `ep.module()`"),
    "aoti_strict": ("export and deploy", "strict export, AOTInductor package, loaded and run in the same process"),
    "aoti_nonstrict": ("export and deploy", "non-strict export, AOTInductor package, loaded in the same process"),
    "aoti_standalone": (
        "export and deploy",
        "strict export, AOTInductor package, loaded and run by a fresh process that imported only torch",
    ),
    "train_eager": ("training", "forward and backward, eager; the output and every gradient checked"),
    "train_compile": ("training", "forward and backward under `torch.compile`; output and gradients checked"),
    "cpu_fallback": ("subsystems", "CPU tensors, eager: the op's CPU kernel"),
    "cpu_compile": ("subsystems", "CPU tensors under `torch.compile`"),
    "flop_counter": ("subsystems", "`FlopCounterMode` must count the case's declared flops for the op"),
}


def infer_wrapper(style: str) -> str:
    if style == "control":
        return "control"
    for wrapper in ("triton_op", "custom_op"):
        if style.startswith(wrapper):
            return wrapper
    return "launcher"


def style_info(env: dict[str, Any], styles: list[str]) -> dict[str, dict[str, Any]]:
    """style -> {"wrapper", "decorator"}: environment.styles where it says, else inferred from the id."""
    given = env.get("styles") if isinstance(env.get("styles"), dict) else {}
    info = {}
    for style in styles:
        entry = given.get(style) if isinstance(given.get(style), dict) else {}
        info[style] = {
            "wrapper": entry.get("wrapper") or infer_wrapper(style),
            "decorator": entry.get("decorator"),
        }
    return info


def by_wrapper(styles: list[str], info: dict[str, dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """Styles grouped by wrapper: WRAPPERS' order, then others as they come; matrix order within a group."""
    wrappers = [w for w in WRAPPERS if any(info[s]["wrapper"] == w for s in styles)]
    wrappers += [w for w in dict.fromkeys(info[s]["wrapper"] for s in styles) if w not in wrappers]
    return [(w, [s for s in styles if info[s]["wrapper"] == w]) for w in wrappers]


def path_info(env: dict[str, Any], paths: list[str]) -> tuple[dict[str, dict[str, str]], bool]:
    """path -> {"group", "doc"} from environment.paths, falling back to KNOWN_PATHS; and whether the results
    file had environment.paths at all."""
    given = env.get("paths") if isinstance(env.get("paths"), dict) else None
    info = {}
    for path in paths:
        entry = (given or {}).get(path)
        group, doc = KNOWN_PATHS.get(path, (OTHER_GROUP, ""))
        if isinstance(entry, dict):
            group, doc = entry.get("group") or group, entry.get("doc") or doc
        info[path] = {"group": group, "doc": doc}
    return info, given is not None


def by_group(paths: list[str], info: dict[str, dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Paths grouped, groups in the order of their first path."""
    groups = dict.fromkeys(info[p]["group"] for p in paths)
    return [(g, [p for p in paths if info[p]["group"] == g]) for g in groups]


def goals(env: dict[str, Any]) -> tuple[dict[str, list[str]], bool]:
    """goal -> its paths, from environment.goals, else DEFAULT_GOALS; and whether the file had them."""
    given = env.get("goals")
    if isinstance(given, dict) and given:
        return {str(goal): [str(p) for p in paths] for goal, paths in given.items() if isinstance(paths, list)}, True
    return dict(DEFAULT_GOALS), False


@dataclass
class Docs:
    """What documentation claims: source name -> its description; (style, path) -> (supported, source)."""

    sources: dict[str, str] = field(default_factory=dict)
    claims: dict[tuple[str, str], tuple[bool, str]] = field(default_factory=dict)


OLD_SOURCE = "docs"


def read_docs(docs: Any) -> Docs:
    """environment.docs in either shape: {"sources": {name: text}, "claims": {style: {path: {"supported": bool,
    "source": name}}}}, or the older {"source": text, "expect": {style: {path: bool}}} (one unnamed source)."""
    if not isinstance(docs, dict):
        return Docs()
    if "claims" in docs or "sources" in docs:
        sources = {str(k): str(v) for k, v in (docs.get("sources") or {}).items()}
        claims = {}
        for style, by_path in (docs.get("claims") or {}).items():
            for path, claim in (by_path or {}).items():
                if isinstance(claim, bool):  # lenient: a bare bool claims without naming a source
                    claim = {"supported": claim, "source": ""}
                if isinstance(claim, dict) and isinstance(claim.get("supported"), bool):
                    claims[(style, path)] = (claim["supported"], str(claim.get("source") or ""))
        return Docs(sources, claims)
    sources = {OLD_SOURCE: str(docs["source"])} if docs.get("source") else {}
    claims = {
        (style, path): (supported, OLD_SOURCE)
        for style, by_path in (docs.get("expect") or {}).items()
        for path, supported in (by_path or {}).items()
        if isinstance(supported, bool)
    }
    return Docs(sources, claims)
