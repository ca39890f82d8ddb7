"""The generated ``tests.md``: a section per test module with its laws and each test's code,
and, on the laws page, how many inputs each linked Hypothesis test draws."""

from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lessons._course import laws
from tools.docs.paths import ROOT, TESTS

if TYPE_CHECKING:
    pass


# -- the tests page ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeOfTest:
    """Where one test function is: its file, qualified name, lines and docstring's first line."""

    path: Path
    name: str
    first: int
    last: int
    summary: str

    @property
    def anchor(self) -> str:
        """The test's anchor on the tests page: ``<module>.<name>``."""
        return f"{self.path.stem}.{self.name}"


def find_tests(root: Path = TESTS) -> list[CodeOfTest]:
    """Every ``test_*`` function in the ``test_*.py`` files under ``root`` (and in their ``Test*``
    classes), by module name."""
    found = []
    for path in sorted(root.rglob("test_*.py"), key=lambda path: path.name):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            scopes: list[tuple[str, ast.stmt]] = [("", node)]
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                scopes = [(f"{node.name}.", child) for child in node.body]
            for prefix, item in scopes:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name.startswith("test_")
                ):
                    first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                    assert item.end_lineno is not None
                    doc = (ast.get_docstring(item) or "").strip().split("\n\n")[0]
                    summary = " ".join(doc.split())
                    found.append(
                        CodeOfTest(path, prefix + item.name, first, item.end_lineno, summary)
                    )
    return found


def module_docstring(path: Path) -> str:
    """The docstring of test module ``path``, as written ("" if it has none)."""
    return ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) or ""


def page_of_tests(root: Path = TESTS) -> str:
    """The generated ``tests.md``: a section per test module with its laws, each test's code
    folded until opened.

    The page opens with a table of the modules (each one's first docstring line and how many
    tests it has). Each module's section says its docstring, then lists its tests: each a
    ``<details>`` block whose summary is the test's name (the law it checks) and its docstring's
    first paragraph, and whose body includes the test's code from its file by line range. The
    anchor ``#<module>.<test>`` that the laws page links to is inside the block: a browser
    that follows the link opens the block (Chromium, Firefox and Safari reveal a closed
    ``<details>`` that holds the target of a link).
    """
    found = find_tests(root)
    by_module: dict[Path, list[CodeOfTest]] = {}
    for test in found:
        by_module.setdefault(test.path, []).append(test)
    lines = [
        "# The tests",
        "",
        "Every law on [the laws page](laws.md) is checked by a test. Here is every test in "
        "`tests/`, read from the files when this site was built: a section per module says what "
        "its tests check, and each test is named by its law; open one to read its code. Run them "
        "all with `make test`.",
        "",
        "| Module | What its tests check | Tests |",
        "| --- | --- | ---: |",
    ]
    for path, tests in by_module.items():
        first = module_docstring(path).split("\n\n")[0]
        lines.append(f"| [`{path.name}`](#{path.stem}) | {_prose(first)} | {len(tests)} |")
    lines.append("")
    for path, tests in by_module.items():
        relative = path.relative_to(ROOT).as_posix()
        lines += [f"## `{relative}` {{#{path.stem}}}", ""]
        first, *rest = module_docstring(path).split("\n\n")
        lines += [_prose(first), ""]
        if rest:  # the rest of what the module says, folded: the page lists tests, not prose
            lines += ['<details class="about" markdown>', "<summary>More on this module</summary>"]
            lines += ["", *(_prose(paragraph) + "\n" for paragraph in rest), "</details>", ""]
        for test in tests:
            said = f": {_prose(test.summary)}" if test.summary else ""
            lines += [
                '<details class="test" markdown>',
                f"<summary><code>{html.escape(test.name)}</code>{said}</summary>",
                f'<span id="{test.anchor}"></span>',
                "",
                f'```python linenums="{test.first}" title="{relative}"',
                f'--8<-- "{relative}:{test.first}:{test.last}"',
                "```",
                "",
                "</details>",
                "",
            ]
    return "\n".join(lines)


INLINE_CODE = re.compile(r"``(?P<code>.+?)``(?!`)")


def _prose(text: str) -> str:
    """A docstring's paragraph as one line of HTML that markdown leaves as it is: its reST
    inline code (````code````, which may hold backticks) as ``<code>``, the rest escaped, so that
    no docstring can open a link, a table cell or a tag."""
    parts, at = [], 0
    text = " ".join(text.split())
    for match in INLINE_CODE.finditer(text):
        parts.append(html.escape(text[at : match.start()], quote=False))
        code = html.escape(match["code"], quote=False).replace("`", "&#96;")
        parts.append(f"<code>{code}</code>")
        at = match.end()
    parts.append(html.escape(text[at:], quote=False))
    said = "".join(parts)
    for character in "|[*":
        said = said.replace(character, f"&#{ord(character)};")
    return said


def _function(test: CodeOfTest) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = ast.parse(test.path.read_text(), filename=str(test.path))
    scope: list[ast.stmt] = tree.body
    *classes, name = test.name.split(".")
    for class_name in classes:
        scope = next(
            node.body
            for node in scope
            if isinstance(node, ast.ClassDef) and node.name == class_name
        )
    return next(
        node
        for node in scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    )


def _max_examples(call: ast.expr) -> int | None:
    if isinstance(call, ast.Call):
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg == "max_examples" and isinstance(value, ast.Constant):
                assert isinstance(value.value, int)
                return value.value
    return None


def drawn_inputs(test: CodeOfTest) -> str | None:
    """What a test's Hypothesis draws, in words: ``checked on 60 drawn inputs`` for a ``@given``
    test, or one that verifies a law of the course (``laws.PLAN_ORDER.verify(step)``: the law's
    ``budget``) (its ``max_examples``, Hypothesis's default of 100 if unset; ``per step`` when it
    is parametrized over steps), ``a search of up to 500 drawn inputs`` for one that calls
    ``find``; None for a test that draws nothing."""
    function = _function(test)
    names = {
        ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        for decorator in function.decorator_list
    }
    per_step = any(
        isinstance(decorator, ast.Call)
        and ast.unparse(decorator.func).endswith("parametrize")
        and isinstance(decorator.args[0], ast.Constant)
        and "step" in str(decorator.args[0].value).split(",")
        for decorator in function.decorator_list
    )
    each = " per step" if per_step else ""
    for node in ast.walk(function):  # a law of the course, which the test verifies on a step
        called = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
        law = getattr(laws, called.removeprefix("laws.").removesuffix(".verify"), None)
        if re.fullmatch(r"laws\.\w+\.verify", called) and isinstance(law, laws.Law) and law.draws:
            return f"checked on {law.budget.max_examples} drawn inputs{each}"
    if "given" in names:
        counts = [_max_examples(decorator) for decorator in function.decorator_list]
        count = next((number for number in counts if number is not None), 100)
        return f"checked on {count} drawn inputs{each}"
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "find":
            counts = [_max_examples(keyword.value) for keyword in node.keywords]
            count = next((number for number in counts if number is not None), 100)
            return f"found by a search of up to {count} drawn inputs{each}"
    return None


TEST_LINK = re.compile(r"\[`(?P<text>[^`]+)`\]\(tests\.md#(?P<module>test_\w+)\.(?P<name>[\w.]+)\)")


def with_drawn_inputs(markdown: str, root: Path = TESTS) -> str:
    """``markdown`` with each link to a Hypothesis test followed by what it draws (see
    `drawn_inputs`), read from the test as it is: the laws page never states a count that
    its tests do not use. Links to tests that do not exist are left as they are."""
    found = {test.anchor: test for test in find_tests(root)}

    def annotate(match: re.Match[str]) -> str:
        test = found.get(f"{match['module']}.{match['name']}")
        said = None if test is None else drawn_inputs(test)
        return match[0] if said is None else f"{match[0]} ({said})"

    return TEST_LINK.sub(annotate, markdown)
