"""A saved comparison edited as a forger would (any field to any JSON value, the digest
recomputed) is refused by `verify` and `show` naming the file and the field, or, when
the edit is consistent, verifies and shows only figures that can be; and the slips left
from round 43: `gym.make` itself as capture's factory, a class as its observer, and a
check function named by `--checks`, each refused up front with the fix."""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import content_digest, record_bytes
from onrecord._stats import exact_mean, mcnemar_exact_p, symmetric_bootstrap_ci
from onrecord.cli._comparison_fields import difference_of
from onrecord.cli._records import load_any
from onrecord.compare import Comparison
from onrecord.errors import InputError, OnrecordError
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A comparison `onrecord compare --json` wrote, of two real FrozenLake runs."""
    root = tmp_path_factory.mktemp("compared")
    for agent, out in (("walks_to_goal", "a"), ("walks_into_hole", "b")):
        done = onrecord(
            "run", "frozenlake", "--agent", agent, "--seeds", "0-3", "--out", root / out
        )
        assert done.returncode in (0, 1), done.stderr  # 1: B's run is rejected
    done = onrecord("compare", root / "a", root / "b", "--json", root / "comparison.json")
    assert done.returncode == 0, done.stderr
    return root / "comparison.json"


def _forge(saved: Path, target: Path, edit: Edit) -> Path:
    record = orjson.loads(saved.read_bytes())
    edit(record)
    record.pop("digest", None)
    record["digest"] = content_digest(record)
    target.write_bytes(record_bytes(record))
    return target


def _set(*where: str | int, value: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        node: Any = record
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = value

    return edit


def _both_names(record: dict[str, Any]) -> None:
    record["checks"][1]["name"] = record["checks"][0]["name"]


def _one_pair_twice(record: dict[str, Any]) -> None:
    record["checks"][0]["discordant"][1]["repeat"] = 0


def _without_report_b(record: dict[str, Any]) -> None:
    del record["report_b"]


FORGERIES = {
    # Before: "malformed record (TypeError: unhashable type: 'list')".
    "a pair's side is a list": (
        _set("checks", 0, "discordant", 0, "a", value=[]),
        "checks[0].discordant[0].a",
    ),
    # Before: verified; `show` failed with "not a comparison ..." naming no file.
    "negative cases": (_set("measures", 0, "cases", value=-1), "'measures[0].cases'"),
    "cases true": (_set("measures", 0, "cases", value=True), "'measures[0].cases'"),
    # Before: verified, summarized "A: sha256:True".
    "report_a true": (_set("report_a", value=True), "'report_a' must be a sha256 digest"),
    # Before: `show` said "KeyError: 'report_b'".
    "report_b missing": (_without_report_b, "'report_b' must be a sha256 digest"),
    "p-value of 7": (_set("checks", 0, "p_value", value=7), "'checks[0].p_value'"),
    # Before: each verified, and showed a figure that cannot be.
    "mean A alone": (_set("measures", 1, "mean_a", value=60.0), "is not mean B − mean A"),
    "no pairs": (_set("measures", 0, "pairs", value=0), "'measures[0].pairs'"),
    "a check twice": (_both_names, "lists 'no_hole_visited' more than once"),
    "a pair twice": (_one_pair_twice, "lists a discordant pair twice"),
    "pass rate true": (
        _set("checks", 0, "rate_a", "pass_rate", value=True),
        "'checks[0].rate_a.pass_rate'",
    ),
    "interval end false": (
        _set("checks", 0, "rate_b", "interval", 0, value=False),
        "'checks[0].rate_b.interval'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FORGERIES))
@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_forged_comparison_is_refused_naming_the_file_and_field(
    saved: Path, tmp_path: Path, name: str, command: str
) -> None:
    edit, field = FORGERIES[name]
    path = _forge(saved, tmp_path / "comparison.json", edit)
    done = onrecord(command, path)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert str(path) in done.stderr, done.stderr
    assert field in done.stderr, done.stderr
    assert "malformed record" not in done.stderr
    assert "Traceback" not in done.stderr


def test_the_saved_comparison_verifies_and_shows(saved: Path) -> None:
    for command in ("verify", "show"):
        done = onrecord(command, saved)
        assert done.returncode == 0, done.stderr


def _places(node: Any, where: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if where:
        yield where
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in items:
        yield from _places(child, (*where, key))


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["NaN", "Infinity", "pass", "fail", "", "0.125", "a" * 64])
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)  # fmt: skip
_GONE = object()


@pytest.fixture(scope="module")
def places(saved: Path) -> list[tuple[str | int, ...]]:
    record = orjson.loads(saved.read_bytes())
    return [place for place in _places(record) if place not in (("digest",), ("schema",))]


@settings(max_examples=300)
@given(data=st.data())
def test_any_field_edited_and_resealed_is_refused_by_name_or_possible(
    saved: Path, places: list[tuple[str | int, ...]], data: st.DataObject
) -> None:
    place = data.draw(st.sampled_from(places))
    value = data.draw(_JSON | st.just(_GONE) if isinstance(place[-1], str) else _JSON)

    def edit(record: dict[str, Any]) -> None:
        node: Any = record
        for key in place[:-1]:
            node = node[key]
        if value is _GONE:
            del node[place[-1]]
        else:
            node[place[-1]] = copy.deepcopy(value)

    path = _forge(saved, saved.with_name("forged.json"), edit)
    try:
        load_any(path)
    except OnrecordError as exc:
        message = str(exc)
    else:
        _possible(Comparison.from_dict(orjson.loads(path.read_bytes())))
        return
    # Refused: by the file and the field, not as a Python error in reading it.
    assert message.startswith(f"{path}"), message
    assert "malformed record" not in message, message
    assert "not a comparison" not in message, message


def _possible(comparison: Comparison) -> None:
    """Every figure `show` prints of it can be: whole counts adding up, p-values and
    rates from their counts, intervals from low to high, means that subtract."""
    for check in comparison.checks:
        counts = (check.both_pass, check.only_a, check.only_b, check.both_fail, check.unmeasured)
        assert all(type(count) is int and count >= 0 for count in counts)
        assert sum(counts) == comparison.pairs
        assert check.p_value == mcnemar_exact_p(check.only_a, check.only_b)
        assert len(check.discordant) == check.only_a + check.only_b
        for rate in (check.rate_a, check.rate_b):
            if rate is not None:
                assert 0 <= rate.passed <= rate.measured
                assert 0 <= rate.interval[0] <= rate.interval[1] <= 1
    for measure in comparison.measures:
        assert 1 <= measure.pairs <= comparison.pairs
        assert measure.cases is None or 1 <= measure.cases <= measure.pairs
        assert measure.interval[0] <= measure.interval[1]
        assert difference_of(
            (measure.mean_a, measure.mean_b, measure.mean_difference), measure.interval
        )


_VALUE = st.one_of(
    st.floats(-1e12, 1e12, allow_nan=False),
    st.floats(-1e-6, 1e-6, allow_nan=False),
    st.integers(-1000, 1000).map(float),
)


@settings(max_examples=300)
@given(st.lists(st.tuples(_VALUE, _VALUE), min_size=1, max_size=12))
def test_means_compare_computes_pass_their_check(pairs: list[tuple[float, float]]) -> None:
    # The check on a saved mean difference must never refuse what compare computed.
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    differences = [y - x for x, y in pairs]
    means = (exact_mean(a), exact_mean(b), exact_mean(differences))
    interval = symmetric_bootstrap_ci(differences, resamples=200)
    assert difference_of(means, interval)


# Round 43's slips: refused up front, naming the argument and the fix.


def _interact(env: Any, observation: Any, info: Any) -> str:
    env.step(0)
    return "done"


def _capture(factory: Any, observe: Any) -> Any:
    return capture_episode(
        factory,
        _interact,
        case=EvalCase("x", case_id="c"),
        environment_id="CartPole-v1/native",
        observer_id="none/v1",
        observe=observe,
        seed=0,
        max_steps=5,
    )


def test_gym_make_itself_as_the_factory_is_refused_with_the_lambda() -> None:
    # Before: captured, each episode a setup error "make() missing ... 'id'".
    with pytest.raises(InputError, match=r"factory is gym\.make itself") as raised:
        _capture(gym.make, lambda: {})
    assert 'factory=lambda: gym.make("CartPole-v1")' in str(raised.value)


def test_a_factory_that_needs_arguments_is_refused() -> None:
    def make_env(name: str) -> gym.Env[Any, Any]:
        return gym.make(name)

    with pytest.raises(
        InputError, match=r"factory must be .*, but make_env\(name\) needs arguments"
    ):
        _capture(make_env, lambda: {})


class _Reader:
    def __init__(self, env: Any) -> None:
        self.env = env


class _Snapshot:
    def __call__(self) -> int:
        return 0


def test_a_class_as_the_observer_is_refused() -> None:
    # Before: captured; every read an observer error (a _Snapshot has no JSON form).
    with pytest.raises(InputError, match=r"observe is the class _Snapshot: .* is no state"):
        _capture(lambda: gym.make("CartPole-v1"), _Snapshot)
    # One that needs the environment was an observer error ("missing ... 'env'") too.
    # Wrapping it in a function would still read a _Reader: the class itself is the slip.
    with pytest.raises(InputError, match=r"observe is the class _Reader: .* is no state"):
        _capture(lambda: gym.make("CartPole-v1"), _Reader)


def test_dict_as_the_observer_of_nothing_still_captures() -> None:
    episode = _capture(lambda: gym.make("CartPole-v1"), dict)
    assert episode.failures() == []
    assert episode.states()[0] == {}


def test_an_observer_that_needs_arguments_is_refused() -> None:
    def state_of(env: Any) -> Any:
        return list(env.unwrapped.state)

    with pytest.raises(
        InputError, match=r"observe must be .*, but state_of\(env\) needs arguments"
    ):
        _capture(lambda: gym.make("CartPole-v1"), state_of)


class _Pole(gym.Wrapper[Any, Any, Any, Any]):
    """An environment class built with no arguments: a factory as it stands."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))


class _Angle:
    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.reads


def test_a_class_factory_and_an_observer_instance_still_capture() -> None:
    observer = _Angle()
    episode = _capture(_Pole, observer)
    assert episode.failures() == []
    assert observer.reads >= 2


def test_a_check_function_named_by_checks_is_the_slip_it_is(tmp_path: Path) -> None:
    (tmp_path / "mychecks.py").write_text(
        textwrap.dedent(
            """
            def reached(subject):
                return subject.ended == "terminated"
            """
        )
    )
    done = onrecord(
        "run", "frozenlake", "--agent", "walks_to_goal", "--seeds", "0-1",
        "--out", tmp_path / "run", "--checks", "mychecks:reached",
        cwd=tmp_path, pythonpath=tmp_path,
    )  # fmt: skip
    # Before: "the check factory 'mychecks:reached' raised TypeError: reached() missing
    # 1 required positional argument: 'subject'".
    assert done.returncode == 3, done.stderr
    assert "wrap it as OutcomeCheck('reached', 'v1', reached)" in done.stderr
    assert "@outcome_check('reached', 'v1')" in done.stderr
    assert "raised" not in done.stderr
    assert not (tmp_path / "run").exists()
