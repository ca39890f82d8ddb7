"""Which steps have an exercise is said in one place, ``lessons._course.exercises.exercisable``:
the README says it as `exercises.offered` words it, the site's pages include the sentences the
docs hook generates from it, and the runner's commands take their range from it. No page types a
range of steps by hand, so none can drift from the list (they said 2-10, 2-13 and "none in
Part II" while the runner offered 2-25)."""

from __future__ import annotations

import re

import pytest

from lessons._course import exercises
from tools.docs import pages
from tools.docs.paths import DOCS, ROOT

README = ROOT / "README.md"
INCLUDES = {  # the page and the generated sentence it includes
    "index.md": "home.md",
    "exercises.md": "page.md",
    "steps/step01_serial.md": "first-step.md",
}
# a range of steps typed next to the word exercise, within a sentence
TYPED = re.compile(
    r"\b\d+ ?(?:to|-|–) ?\d+\b[^.:]{0,80}\bexercise|\bexercise[^.:]{0,80}\b\d+ ?(?:to|-|–) ?\d+\b"
)


def test_the_readme_says_which_steps_have_an_exercise_as_the_list_does() -> None:
    text = " ".join(README.read_text().split())
    assert exercises.offered() in text, f"the README must say: {exercises.offered()!r}"


@pytest.mark.parametrize("page", sorted(INCLUDES))
def test_each_page_that_says_it_includes_the_generated_sentence(page: str) -> None:
    text = (DOCS / page).read_text()
    assert f'--8<-- "docs/generated/exercises/{INCLUDES[page]}"' in text


def test_the_generated_sentences_name_the_lists_steps() -> None:
    made = pages.offered_fragments()
    assert set(INCLUDES.values()) <= set(made)
    known = exercises.exercisable()
    assert exercises.which() in made["home.md"]
    assert f"[{min(known)}](steps/{known[min(known)]}.md)" in made["page.md"]
    assert f"[{max(known)}](steps/{known[max(known)]}.md)" in made["page.md"]
    assert exercises.which() in made["first-step.md"]


def test_no_page_types_a_range_of_exercise_steps_by_hand() -> None:
    written = [README, *DOCS.rglob("*.md")]
    typed = [
        f"{path.relative_to(ROOT)}: {found.group(0)!r}"
        for path in written
        if "generated" not in path.parts
        for found in TYPED.finditer(
            " ".join(path.read_text().split()).replace(exercises.offered(), "")
        )
    ]
    assert not typed, typed


def test_the_wording_follows_the_list_whatever_it_holds() -> None:
    assert exercises.which([2, 3, 4]) == "2 to 4"
    assert exercises.which([2, 3, 4, 7]) == "2 to 4 and 7"
    assert exercises.which([2, 3, 5, 6, 9]) == "2 to 3, 5 to 6 and 9"
    assert exercises.spans([7, 2, 3]) == [(2, 3), (7, 7)]


def test_the_runners_commands_offer_the_lists_steps(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        exercises.parser().parse_args(["exercise", "--help"])
    assert f"the step: {exercises.which()}" in " ".join(capsys.readouterr().out.split())
