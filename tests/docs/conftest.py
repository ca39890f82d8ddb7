"""The site's tests: every page, picture and link is held to the code (the docs hook's output,
the README's examples, the architecture page's modules, the API page). They need the docs tooling
(``tools/docs``) and the course, both imported from the repository root."""
