"""Issue 8: ``check_append_only`` refuses messages that are not mappings, naming the position."""

from __future__ import annotations

from typing import Any

import pytest

import agent_reminders as ar


@pytest.mark.parametrize(
    ("requests", "path"),
    [
        ([[1], [2]], "requests[0][0]"),
        ([[{"role": "user", "content": "a"}], [{"role": "user", "content": "a"}, "b"]], "[1][1]"),
        ([{"messages": [None]}], "requests[0].messages[0]"),
    ],
)
def test_check_append_only_refuses_messages_that_are_not_mappings(
    requests: list[Any], path: str
) -> None:
    with pytest.raises(TypeError) as info:
        ar.check_append_only(requests)
    assert path in str(info.value)


def test_check_append_only_still_reports_breaks_between_mappings() -> None:
    a = {"role": "user", "content": "a"}
    b = {"role": "user", "content": "b"}
    assert ar.check_append_only([[a], [b]]) == [ar.PrefixBreak(1, 0)]
