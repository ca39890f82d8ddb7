from hypothesis import settings

# Time in these tests is virtual: a slow machine must not fail them, so no per-example deadline.
settings.register_profile("project", deadline=None, print_blob=True)
settings.load_profile("project")
