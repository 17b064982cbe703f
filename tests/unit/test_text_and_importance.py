"""Text cleaning and importance reading (DESIGN §3): what models send is tidied before it is kept."""

from __future__ import annotations

import pytest

from .conftest import remember_ok


@pytest.mark.parametrize(
    "raw, kept",
    [
        ("**Loves** hiking", "Loves hiking"),
        ("Uses `pytest` every day", "Uses pytest every day"),
        ("Runs ```git rebase``` often", "Runs git rebase often"),
        ("__Prefers__ green tea", "Prefers green tea"),
        ("# Goal\nRun a marathon", "Goal Run a marathon"),
        ("### Moving to Lyon", "Moving to Lyon"),
        ("  Works   at\n\nthe\tbakery  ", "Works at the bakery"),
        ("Writes C# at work", "Writes C# at work"),
        ("Names variables in snake_case", "Names variables in snake_case"),
        ("Learns C++ and C#", "Learns C++ and C#"),
        ("Is the #1 fan of Lyon", "Is the #1 fan of Lyon"),
        ("**Writes** `C#` and __snake_case__", "Writes C# and snake_case"),
    ],
)
def test_model_markdown_is_removed_and_whitespace_collapsed(service, place, raw, kept):
    memory = remember_ok(service, place, raw)
    assert memory.text == kept
    assert service.get(place, memory.id).text == kept


def test_an_update_is_cleaned_too(service, place):
    memory = remember_ok(service, place, "Likes tea")
    updated = service.update(place, memory.id, text="**Loves**   `green`\ntea")
    assert updated.memory.text == "Loves green tea"


@pytest.mark.parametrize(
    "raw, importance",
    [("4", 4), (4.6, 5), (4.4, 4), ("4.6", 5), ("high", 4), ("HIGH", 4), ("low", 2), ("critical", 5),
     (0, 1), (-3, 1), (99, 5), ("99", 5), (None, 3), ("abc", 3), ("", 3), (2, 2), (float("nan"), 3),
     (float("inf"), 5)],
)
def test_importance_is_read_rounded_and_clamped(service, place, raw, importance):
    assert remember_ok(service, place, "Plays the piano", importance=raw).importance == importance


def test_update_reads_importance_the_same_way(service, place):
    memory = remember_ok(service, place, "Plays the piano")
    assert service.update(place, memory.id, importance="high").memory.importance == 4
    assert service.update(place, memory.id, importance=42).memory.importance == 5
    assert service.get(place, memory.id).importance == 5
