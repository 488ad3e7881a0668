"""A repository's config: its model, its loading from TOML with located errors, its templates and schedules."""
