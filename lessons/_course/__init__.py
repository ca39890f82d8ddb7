"""The course's machinery, apart from its steps: finding the steps (``steps``), their demos
(``demos``), the runner behind ``python -m lessons`` (``runner``) and the docs site's generated
parts (``docs``, an mkdocs hook)."""
