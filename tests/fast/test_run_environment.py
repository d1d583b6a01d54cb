"""The typed environment of a results file (harness/records/environment.py ``RunEnvironment``): read from its JSON by
its field types and written back the same."""

import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.records.environment import Claim, PathEntry, RunEnvironment
from harness.records.files import read_results

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted(
    file.relative_to(ROOT).as_posix()
    for pattern in ("reports/results.json", "reports/*/results.json", "reports/cpu/*/results.json")
    for file in ROOT.glob(pattern)
)


@pytest.mark.parametrize("name", COMMITTED)
def test_a_committed_environment_reads_and_writes_back_as_it_was(name):
    env = json.loads((ROOT / name).read_text())["environment"]
    typed = RunEnvironment.from_dict(env, name)
    assert typed.extra == {}
    assert typed.to_dict() == {key: value for key, value in env.items() if value is not None}


def test_the_committed_gpu_run_reads_into_its_types():
    typed = RunEnvironment.from_dict(json.loads((ROOT / "reports/results.json").read_text())["environment"], "r")
    assert typed.paths["eager"] == PathEntry(
        group="compile", doc="The style called directly, as in a plain PyTorch program", device="cuda"
    )
    assert typed.docs.claims["raw_jit"]["eager"] == Claim(supported=True, source="recipe")
    assert typed.goals["run eagerly"] == ("eager",)
    assert isinstance(typed.workers, int) and typed.workers > 0  # a merged run's: its shards' workers together
    assert (typed.triton_interpret, typed.complete) == (False, True)


def test_unknown_keys_survive_and_absent_ones_are_none():
    data = {"torch": "2.13", "gpu_clock": {"sm": 1980}, "extra": 3, "docs": {"claims": {"control": {"eager": True}}}}
    typed = RunEnvironment.from_dict(data, "f.json")
    assert typed.extra == {"gpu_clock": {"sm": 1980}, "extra": 3}
    assert (typed.triton, typed.docs.claims["control"]["eager"]) == (None, True)
    assert typed.to_dict() == data


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        ({"workers": True}, "environment.workers", "expected int (or null), got True"),
        ({"wall_seconds": "3"}, "environment.wall_seconds", "expected float (or null), got '3'"),
        ({"hosts": ["a", 2]}, "environment.hosts[1]", "expected str (or null), got 2"),
        ({"docs": {"claims": {"s": {"p": {"supported": 1}}}}}, "environment.docs.claims.s.p.supported", "got 1"),
        ({"docs": {"claims": {"s": {"p": "yes"}}}}, "environment.docs.claims.s.p", "expected bool (or null)"),
        ({"memory": {"7": []}}, "environment.memory.7", "expected a table, got []"),
        ({"script_places": [{"at": 1.0, "running": "3", "places": 4}]}, "environment.script_places[0].running",
         "expected int"),
        ({"script_places": [{"at": 1.0, "running": 3}]}, "environment.script_places[0].places", "missing"),
    ],
)
def test_a_badly_typed_key_is_an_input_error_naming_it(data, key, problem):
    with pytest.raises(InputError) as error:
        RunEnvironment.from_dict(data, "f.json")
    assert str(error.value).startswith(f"f.json: {key}: ")
    assert problem in str(error.value)


def test_a_record_log_with_a_badly_typed_environment_is_an_input_error(tmp_path):
    log = tmp_path / "records.jsonl"
    log.write_text(json.dumps({"environment": {"torch": "2.13", "settings": {"TORCH_X": 1}}}) + "\n")
    with pytest.raises(InputError, match=r"environment\.settings\.TORCH_X: expected str"):
        read_results(log)
