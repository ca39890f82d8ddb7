"""The course's tests: each step's laws on the step (and the step before failing them, strictly),
the runner as a reader meets it (``python -m lessons ...``), and the exercises and their checker.

They import the course (``lessons``) from the repository root, as ``python -m lessons`` does; the
laws they prove live in the course itself (``lessons._course.laws``), so that ``check N`` grades a
reader's code by the very properties proven here."""
