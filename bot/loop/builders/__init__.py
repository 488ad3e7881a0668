"""Where the wheels of an upstream commit are made (docs/design.md §1.2): one module per
build kind behind one interface. `base.py` is the `Builder` Protocol every kind meets,
`api.py` maps each kind's name (the config's `build.kind`) to its factory, and
`command.py` and `github_actions.py` are the kinds. The processes and API calls a kind
drives are adapters (adapters/localbuild.py, adapters/github/actions.py); the build cache
they all fill is adapters/buildcache.py."""
