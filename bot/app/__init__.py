"""The service behind `wheelpin serve`, forge-neutral at its edges: the web app hands a
request to a forge's door and queues the jobs it returns; the queue, schedule, workers,
metrics and settings know no forge's payload. Its contract with a forge is `forge.py` (which
repositories to watch, and each one's platform, config and reconciler), `jobs.py` (the unit
of work, a delivery, the door) and `conversation.py` (what it says to a repository's
people); a forge's package (adapters/github/) implements them, and `forges.py`, the one
module here that names it, makes the forge the settings ask for. Settings and logging
here serve every command."""
