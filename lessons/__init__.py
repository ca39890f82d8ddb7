"""The course: one runnable step per idea (python -m lessons lists them)."""
