"""The loop of docs/design.md §1, one repository at a time: `observe.py` reads the world
into facts, `core/decide/plan.py` decides, `execute.py` acts, `runner.py` turns the wheel until
the plan is empty. The build kinds (`builders/`) are the one seam between the loop and where
wheels are made. Above `adapters/` (the outside world), below `app/` (the service) and
`commands/` (the CLI)."""
