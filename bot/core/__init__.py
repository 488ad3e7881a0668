"""Pure logic of wheelpin: no network, no subprocess. Adapters and the app build on it.

One folder per domain: `wheel/` (a wheel's archive, ELF files, GPU code objects, metadata,
read into a report), `checks/` (the rules a wheel must pass, one module each), `image/`
(references, the wheel image, the consuming image's files and loader), `config/` (the
model, its loading, templates, schedules), `pins/` (pin formats, finding and bumping pins),
`versioning/` (how upstream tags are ordered), `proposal/` (what a proposal says), and
`decide/` (the planner, backoff, pruning). `errors.py` and `redact.py` serve them all."""
