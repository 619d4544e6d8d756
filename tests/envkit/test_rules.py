from __future__ import annotations

from typing import Any

import pytest

from onrecord.envkit import (
    changed,
    check_rules,
    compare_diff,
    created,
    deleted,
    no_other_changes,
    only_tables,
    unchanged,
)
from onrecord.errors import InputError

DIFF = {
    "allocations": {
        "created": [
            {"id": 7, "claim_id": 17, "amount": 5.0},
            {"id": 8, "claim_id": 3, "amount": 1.0},
        ],
        "changed": [],
        "deleted": [],
    },
    "claims": {
        "created": [],
        "deleted": [],
        "changed": [
            {
                "key": 17,
                "before": {"id": 17, "status": "open"},
                "after": {"id": 17, "status": "paid"},
            }
        ],
    },
}


def test_rules_that_hold() -> None:
    assert (
        check_rules(
            DIFF,
            [
                created("allocations", where={"claim_id": 17, "amount": 5}),
                created("allocations", count={"min": 1, "max": 2}),
                changed("claims", where={"id": 17}, to={"status": "paid"}),
                deleted("allocations", count=0),
                unchanged("payments"),
                only_tables("allocations", "claims"),
            ],
        )
        == []
    )


def test_each_broken_rule_is_explained() -> None:
    problems = check_rules(
        DIFF,
        [
            created("allocations", where={"claim_id": 17}, count=2),
            changed("claims", where={"id": 17}, to={"status": "closed"}),
            unchanged("claims"),
            only_tables("allocations"),
        ],
    )
    assert problems == [
        "expected exactly 2 rows created in allocations where claim_id = 17; found 1: "
        '{"amount":5.0,"claim_id":17,"id":7}',
        'claims key 17 changed to {"id":17,"status":"paid"}, but {"status":"closed"} was expected',
        "claims was expected to stay unchanged, but rows: 1 changed",
        "claims changed (rows: 1 changed), but only allocations may change",
    ]


def test_no_other_changes_lists_uncovered_rows() -> None:
    problems = check_rules(
        DIFF, [created("allocations", where={"claim_id": 17}), no_other_changes()]
    )
    assert problems == [
        'allocations: created {"amount":1.0,"claim_id":3,"id":8} is not allowed by any rule',
        'claims: changed {"after":{"id":17,"status":"paid"},"before":{"id":17,"status":'
        '"open"},"key":17} is not allowed by any rule',
    ]


def test_unknown_rule_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown rule"):
        check_rules(DIFF, [{"rule": "teleported"}])


def test_compare_diff_with_ignored_generated_ids() -> None:
    expected = {
        "allocations": {
            "created": [
                {"id": 1, "claim_id": 17, "amount": 5.0},
                {"id": 2, "claim_id": 3, "amount": 1.0},
            ]
        },
        "claims": {
            "changed": [
                {
                    "key": 17,
                    "before": {"id": 17, "status": "open"},
                    "after": {"id": 17, "status": "paid"},
                }
            ]
        },
    }
    assert compare_diff(DIFF, expected, ignore=["allocations.id"]) == []
    assert compare_diff(DIFF, expected) == [
        'allocations: expected a created row {"amount":5.0,"claim_id":17,"id":1}, which the '
        "episode did not create",
        'allocations: expected a created row {"amount":1.0,"claim_id":3,"id":2}, which the '
        "episode did not create",
        'allocations: the episode created the row {"amount":5.0,"claim_id":17,"id":7}, which '
        "was not expected",
        'allocations: the episode created the row {"amount":1.0,"claim_id":3,"id":8}, which '
        "was not expected",
    ]


def test_compare_diff_explains_changed_columns() -> None:
    expected = {
        "allocations": DIFF["allocations"],
        "claims": {
            "changed": [
                {
                    "key": 17,
                    "before": {"id": 17, "status": "open"},
                    "after": {"id": 17, "status": "closed"},
                },
                {"key": 4, "before": {"id": 4}, "after": {"id": 4}},
            ]
        },
    }
    assert compare_diff(DIFF, expected) == [
        'claims key 17: status became "paid", expected "closed"',
        'claims key 4: expected a change to {"id":4}, but the row was not changed',
    ]


def test_rules_name_values_as_python_does_and_match_what_sqlite_stored(world: Any) -> None:
    """SQLite stores True as 1 and a BLOB as bytes; a rule may say True and b"..."."""
    assert world.call("log_event", {"kind": "ping"})["status"] == "ok"
    assert world.call("allocate", {"claim_id": 1, "amount": 5.0, "memo": "x"})["status"] == "ok"
    payload = next(row for row in world.diff()["events"]["created"])["payload"]
    blob = bytes.fromhex(payload["$blob"])
    rules = [
        created("events", where={"kind": "ping", "payload": blob}),
        created("allocations", where={"claim_id": 1, "amount": 5}),
    ]
    assert check_rules(world.diff(), rules) == []
    flagged = {"allocations": {"created": [{"id": 1, "settled": 1}], "changed": [], "deleted": []}}
    assert check_rules(flagged, [created("allocations", where={"settled": True})]) == []
    assert (
        check_rules(
            flagged,
            [{"rule": "created", "table": "allocations", "where": {"settled": True}, "count": 1}],
        )
        == []
    )
    assert check_rules(flagged, [created("allocations", where={"settled": False})]) != []
