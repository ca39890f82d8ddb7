"""The docs site's tooling: the mkdocs hook (``hook``) and what it makes from real runs (step
pages, the dispatch player's recorded runs, the laws page's sample, the tests page)."""
