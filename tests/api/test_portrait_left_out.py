"""The portrait says what is true (issue 27): an empty portrait of a person who has memories is
not "nothing remembered". It holds the pinned memories and those of importance 4 or more; the
answer counts the person's other memories (`left_out`), which recall finds."""

from __future__ import annotations

from .conftest import World


def test_an_importance_3_memory_is_left_out_and_counted(any_world: World) -> None:
    with any_world.client() as memory:
        assert (memory.portrait("ada").text, memory.portrait("ada").left_out) == ("", 0)  # nothing kept at all
        useful = memory.remember("ada", "Trains for the Lyon marathon", importance=3).memory
        portrait = memory.portrait("ada")
        assert (portrait.text, portrait.ids, portrait.left_out) == ("", [], 1)
        assert [h.memory.id for h in memory.recall("ada", "marathon")] == [useful.id]  # recall finds it

        important = memory.remember("ada", "Is allergic to peanuts", importance=4).memory
        pinned = memory.remember("ada", "Prefers short answers", importance=2, pinned=True).memory
        portrait = memory.portrait("ada")
        assert (portrait.ids, portrait.left_out) == ([pinned.id, important.id], 1)
        assert portrait.text == "- Prefers short answers\n- Is allergic to peanuts"
        # No room left for the important one: it is left out too, and counted.
        cut = memory.portrait("ada", max_length=len("- Prefers short answers"))
        assert (cut.ids, cut.left_out) == ([pinned.id], 2)
    # Another tenant's namesake has nothing, and is told so.
    with any_world.client("b") as other:
        assert other.portrait("ada").left_out == 0


def test_the_openapi_document_says_what_the_portrait_holds(world: World) -> None:
    document = world.raw().get("/api/v1/openapi.json").get_json()
    portrait = document["paths"]["/api/v1/people/{owner_id}/portrait"]["get"]
    assert "pinned" in portrait["description"] and "importance" in portrait["description"]
    assert "recall" in portrait["description"]
    left_out = document["components"]["schemas"]["PortraitOut"]["properties"]["left_out"]
    assert "recall" in left_out["description"]
