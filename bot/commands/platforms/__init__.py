"""Where `wheelpin reconcile` writes its proposals (`--platform`), one module per kind:
`base.py` is what a kind gives the command (`Downstream`: its `Platform`, the reconciler
of the repository's config, that config's text), `api.py` maps each `--platform` name to
its factory, and `local.py` (a checkout on this host) and `github.py` (a repository on
GitHub) are the kinds. The platforms' verbs are adapters (adapters/platform.py is their
interface, adapters/localplatform.py and adapters/github/platform.py the two)."""
