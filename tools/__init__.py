"""The project's tools: the docs site's build hook and helpers (``docs``), and its browser check
(``docs_check``)."""
